"""A WSGI app, or a helper for a route of any WSGI framework (Flask, Django, Falcon...)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sundial_receiver.receiver import Answer, Handler, Receiver

StartResponse = Callable[..., Any]


def environ_headers(environ: Mapping[str, Any]) -> dict[str, str]:
    """The request's headers, by their lower-case names."""
    headers = {
        key[5:].replace("_", "-").lower(): str(value) for key, value in environ.items() if key.startswith("HTTP_")
    }
    if environ.get("CONTENT_TYPE"):
        headers["content-type"] = str(environ["CONTENT_TYPE"])
    return headers


def environ_body(environ: Mapping[str, Any]) -> bytes:
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    stream = environ.get("wsgi.input")
    return stream.read(length) if stream is not None and length > 0 else b""


def receive(receiver: Receiver, environ: Mapping[str, Any], handler: Handler) -> Answer:
    """Handle the callback of a WSGI request (reads its body)."""
    return receiver.handle(environ_body(environ), environ_headers(environ), handler)


def wsgi_app(receiver: Receiver, handler: Handler) -> Callable[[dict[str, Any], StartResponse], Iterable[bytes]]:
    """A WSGI app that answers every POST with :meth:`Receiver.handle` (mount it where you like)."""

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") != "POST":
            answer = Answer(405, {"error": "method_not_allowed"})
        else:
            answer = receive(receiver, environ, handler)
        data = json.dumps(answer.body).encode("utf-8")
        reason = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 405: "Method Not Allowed"}.get(
            answer.status, "Internal Server Error"
        )
        start_response(
            f"{answer.status} {reason}", [("Content-Type", "application/json"), ("Content-Length", str(len(data)))]
        )
        return [data]

    return app
