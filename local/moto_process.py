"""`python -m local.moto_process -H 127.0.0.1 -p PORT`: moto_server with atomic DynamoDB writes."""

from __future__ import annotations

import sys

from local.moto_atomic import make_dynamodb_writes_atomic

if __name__ == "__main__":
    make_dynamodb_writes_atomic()
    from moto.server import main

    main(sys.argv[1:])
