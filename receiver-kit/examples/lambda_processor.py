"""A job's processor as a Lambda function: a ``lambda`` processor
(``{"lambda": {"function_arn": ...}}``), invoked with the phase call as its event (not signed:
IAM says who may invoke), or an ``http`` processor at the function's URL (signed: set
``SUNDIAL_SIGNING_SECRET``). Its answers are kept in DynamoDB, so a retried step, whichever
instance it reaches, gets the first answer.
"""

from __future__ import annotations

import os
from typing import Any

from sundial_receiver import DynamoDBStore, JobContext, JobProcessorReceiver, ShardingProcessor
from sundial_receiver.adapters.aws import lambda_processor


class Reindex(ShardingProcessor):
    def sharding_process(self, ctx: JobContext) -> Any:
        return {"indexed": len(ctx.items or [])}


store = DynamoDBStore(os.environ.get("ANSWERS_TABLE", "sundial-dedupe"))  # pk (S), TTL on "expires"
handler = lambda_processor(
    JobProcessorReceiver(os.environ.get("SUNDIAL_SIGNING_SECRET", "").split() or None, Reindex(), store)
)
