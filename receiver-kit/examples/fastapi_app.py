"""A FastAPI receiver of Sundial's callbacks (``pip install fastapi uvicorn ./receiver-kit``).

SUNDIAL_SIGNING_SECRET=whsec_... uvicorn examples.fastapi_app:app --port 8000
"""

from __future__ import annotations

import os

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from sundial_receiver import Callback, MemoryStore, Receiver

receiver = Receiver(os.environ["SUNDIAL_SIGNING_SECRET"].split(), MemoryStore())
app = FastAPI()


def close_order(callback: Callback) -> None:
    print(f"run {callback.run_id} of task {callback.task_id}: {callback.payload}")


@app.post("/sundial")
async def sundial(request: Request) -> JSONResponse:
    # receiver.handle is synchronous: a slow handler belongs in a thread (starlette's run_in_threadpool).
    answer = receiver.handle(await request.body(), request.headers, close_order)
    return JSONResponse(answer.body, status_code=answer.status)
