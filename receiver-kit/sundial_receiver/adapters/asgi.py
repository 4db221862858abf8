"""An ASGI app (ASGI 3: uvicorn, hypercorn, or mounted in Starlette or FastAPI), the standard
library only. The handler runs in a worker thread, so a slow one does not block the event loop."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from sundial_receiver.receiver import Answer, Handler, Receiver

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def scope_headers(scope: Scope) -> dict[str, str]:
    """The request's headers, by their lower-case names."""
    return {bytes(name).decode("latin-1").lower(): bytes(value).decode("latin-1") for name, value in scope["headers"]}


async def read_body(receive: Receive) -> bytes:
    """The whole request body (every ``http.request`` message's chunk)."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(bytes(message.get("body", b"")))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def receive_call(receiver: Receiver, scope: Scope, receive: Receive, handler: Handler) -> Answer:
    """Handle the callback of an ASGI request (reads its body; the handler runs in a thread)."""
    body = await read_body(receive)
    return await asyncio.to_thread(receiver.handle, body, scope_headers(scope), handler)


def asgi_app(receiver: Receiver, handler: Handler) -> ASGIApp:
    """An ASGI app that answers every POST with :meth:`Receiver.handle` (mount it where you like)."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            raise ValueError(f"an ASGI {scope['type']!r} connection is not a callback")
        if scope.get("method") != "POST":
            answer = Answer(405, {"error": "method_not_allowed"})
        else:
            answer = await receive_call(receiver, scope, receive, handler)
        data = json.dumps(answer.body).encode("utf-8")
        await send(
            {
                "type": "http.response.start",
                "status": answer.status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": data})

    return app
