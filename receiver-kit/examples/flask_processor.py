"""A job's processor in Flask (``pip install flask ./receiver-kit``):

    SUNDIAL_SIGNING_SECRET=whsec_... flask --app examples/flask_processor.py run --port 8000

and create a job whose processor is ``{"http": {"url": "http://<this host>:8000/jobs"}}``.
"""

from __future__ import annotations

import os
from typing import Any

from flask import Flask, request
from sundial_receiver import JobContext, JobProcessorReceiver, ShardingProcessor


class Reindex(ShardingProcessor):
    def sharding_process(self, ctx: JobContext) -> Any:
        for done, item in enumerate(ctx.items or [], start=1):
            ctx.logger.info("indexing %s", item)
            if ctx.report_progress(done):  # the job was cancelled: stop, answer what is done
                return {"indexed": done}
        return {"indexed": len(ctx.items or [])}

    def post_process(self, ctx: JobContext) -> Any:
        return {"indexed": sum(result["indexed"] for result in ctx.results or [])}


receiver = JobProcessorReceiver(os.environ["SUNDIAL_SIGNING_SECRET"].split(), Reindex())
app = Flask(__name__)


@app.post("/jobs")
def jobs() -> Any:
    answer = receiver.handle(request.get_data(), request.headers)  # the exact bytes: they are signed
    return answer.content(), answer.status, {"Content-Type": "application/json", **dict(answer.headers)}
