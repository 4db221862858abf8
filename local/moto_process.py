"""`python -m local.moto_process -H 127.0.0.1 -p PORT`: moto's server with keep-alive connections
(local/moto_keepalive.py), atomic DynamoDB writes, prompt SQS long polling, its backend lookup
remembered per host, Queries that read one partition, transactions that copy only their items
and, when the runtime gives it a URL to forward Lambda invocations to (local/functions.py), Step
Functions executing state machines with their Lambda tasks."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from local.functions import install_forwarding
from local.moto_atomic import make_dynamodb_writes_atomic
from local.moto_dispatch import make_dispatch_cached
from local.moto_keepalive import serve
from local.moto_query import make_query_partitioned
from local.moto_sqs import make_long_polling_prompt, make_receive_linear
from local.moto_transact import make_transactions_copy_items
from local.settings import FUNCTIONS_URL_ENV

if __name__ == "__main__":
    make_dispatch_cached()
    make_dynamodb_writes_atomic()
    make_query_partitioned()
    make_transactions_copy_items()
    make_long_polling_prompt()
    make_receive_linear()
    if os.environ.get(FUNCTIONS_URL_ENV):
        install_forwarding(os.environ[FUNCTIONS_URL_ENV])
    parser = argparse.ArgumentParser(prog="python -m local.moto_process")
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, required=True)
    args = parser.parse_args(sys.argv[1:])
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per request, to /dev/null
    serve(args.host, args.port)
