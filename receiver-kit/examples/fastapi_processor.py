"""A job's processor in FastAPI (``pip install fastapi uvicorn ./receiver-kit``):

    SUNDIAL_SIGNING_SECRET=whsec_... uvicorn examples.fastapi_processor:app --port 8000

and create a job whose processor is ``{"http": {"url": "http://<this host>:8000/jobs"}}``.
Without FastAPI, ``sundial_receiver.adapters.asgi.asgi_processor(receiver)`` is the whole app.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from fastapi import FastAPI, Request, Response
from sundial_receiver import JobContext, JobProcessorReceiver, ShardingProcessor


class Reindex(ShardingProcessor):
    def sharding_process(self, ctx: JobContext) -> Any:
        return {"indexed": len(ctx.items or [])}  # the shard's result: post_process gets them all


receiver = JobProcessorReceiver(os.environ["SUNDIAL_SIGNING_SECRET"].split(), Reindex())
app = FastAPI()


@app.post("/jobs")
async def jobs(request: Request) -> Response:
    # the exact body bytes (they are signed); the processor's methods are synchronous: in a thread
    answer = await asyncio.to_thread(receiver.handle, await request.body(), request.headers)
    return Response(answer.content(), answer.status, dict(answer.headers), media_type="application/json")
