"""A FastAPI receiver of Sundial's callbacks (``pip install fastapi uvicorn ./receiver-kit``).

    SUNDIAL_SIGNING_SECRET=whsec_... uvicorn examples.fastapi_app:app --port 8000

and register a task whose target is ``{"http": {"url": "http://<this host>:8000/sundial"}}``.
Without FastAPI, ``sundial_receiver.adapters.asgi.asgi_app(receiver, close_order)`` is the
whole ASGI app.
"""

from __future__ import annotations

import asyncio
import os

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from sundial_receiver import Callback, MemoryStore, Receiver

# The tenant's signing secret (several during a rotation: space-separated).
receiver = Receiver(os.environ["SUNDIAL_SIGNING_SECRET"].split(), MemoryStore())
app = FastAPI()


def close_order(callback: Callback) -> None:
    print(f"run {callback.run_id} of task {callback.task_id}, attempt {callback.attempt}: {callback.payload}")


@app.post("/sundial")
async def sundial(request: Request) -> JSONResponse:
    # The exact body bytes (never a re-serialized JSON: the signature is over the bytes sent);
    # receiver.handle is synchronous, so it runs in a thread, off the event loop.
    answer = await asyncio.to_thread(receiver.handle, await request.body(), request.headers, close_order)
    return JSONResponse(answer.body, status_code=answer.status)
