"""`python -m local.moto_process -H 127.0.0.1 -p PORT`: moto_server with atomic DynamoDB writes and
prompt SQS long polling."""

from __future__ import annotations

import sys

from local.moto_atomic import make_dynamodb_writes_atomic
from local.moto_sqs import make_long_polling_prompt

if __name__ == "__main__":
    make_dynamodb_writes_atomic()
    make_long_polling_prompt()
    from moto.server import main

    main(sys.argv[1:])
