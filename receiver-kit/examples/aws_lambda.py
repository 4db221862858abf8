"""A Lambda function that is a task's ``lambda`` target, and one that consumes an ``sqs`` target's
queue (an event source mapping with ``FunctionResponseTypes: ["ReportBatchItemFailures"]``).

Neither is signed by Sundial (only HTTP calls are): these parse and de-duplicate; who may invoke
the function or send to the queue is IAM's to decide.
"""

from __future__ import annotations

import os

from sundial_receiver import Callback, DynamoDBStore
from sundial_receiver.adapters.aws import lambda_target, sqs_batch

store = DynamoDBStore(os.environ.get("DEDUPE_TABLE", "sundial-dedupe"))  # pk (S), TTL on "expires"


@lambda_target(store)
def handler(callback: Callback) -> None:
    print(f"run {callback.run_id}: {callback.payload}")


@sqs_batch(store)
def sqs_handler(callback: Callback) -> None:
    print(f"run {callback.run_id}: {callback.payload}")
