"""A job processor built with the receiver kit as a Lambda function (its ``lambda_processor``
adapter), which the e2e runtime runs as its own function ``kit-reindex``
(``LocalSettings.lambdas``: tests/support/runtime.py): invoked by the job's steps through the
runtime's Lambda, it reports its progress to the runtime's API every 100 items. Items that are
objects are users: it reads each one's ``user_id``, so a user without one raises
``KeyError('user_id')``."""

from __future__ import annotations

from typing import Any

from sundial_receiver import JobContext, JobProcessorReceiver, MemoryStore, ShardingProcessor
from sundial_receiver.adapters.aws import lambda_processor

FUNCTION = "kit-reindex"
MODULE_HANDLER = f"{FUNCTION}={__name__}:handler"


class Reindex(ShardingProcessor):
    def sharding_process(self, ctx: JobContext) -> Any:
        items = list(ctx.items or [])
        if any(isinstance(item, dict) for item in items):
            return [item["user_id"] for item in items]
        for done in range(100, len(items) + 1, 100):
            if ctx.report_progress(done):
                return {"stopped_at": done}
        return sum(items)

    def post_process(self, ctx: JobContext) -> Any:
        return {"sums": ctx.results}


handler = lambda_processor(JobProcessorReceiver(None, Reindex(), MemoryStore()))
