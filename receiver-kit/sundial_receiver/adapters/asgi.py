"""An ASGI app (ASGI 3: uvicorn, hypercorn, or mounted in Starlette or FastAPI), the standard
library only, for task callbacks (:func:`asgi_app`) or a job's processor (:func:`asgi_processor`). The
handler runs in a worker thread, so a slow one does not block the event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from sundial_receiver.jobs import JobProcessorReceiver
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

    async def respond(scope: Scope, receive: Receive) -> Answer:
        return await receive_call(receiver, scope, receive, handler)

    return _app(respond)


def asgi_processor(receiver: JobProcessorReceiver) -> ASGIApp:
    """An ASGI app that serves a job's processor: every POST is a phase call, answered by
    :meth:`JobProcessorReceiver.handle` in a worker thread (the methods are synchronous)."""

    async def respond(scope: Scope, receive: Receive) -> Answer:
        body = await read_body(receive)
        return await asyncio.to_thread(receiver.handle, body, scope_headers(scope))

    return _app(respond)


def _app(respond: Callable[[Scope, Receive], Awaitable[Answer]]) -> ASGIApp:
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
            answer = await respond(scope, receive)
        data = answer.content()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
        headers += [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in answer.headers]
        await send({"type": "http.response.start", "status": answer.status, "headers": headers})
        await send({"type": "http.response.body", "body": data})

    return app
