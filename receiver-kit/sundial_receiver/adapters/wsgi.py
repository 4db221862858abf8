"""A WSGI app, or a helper for a route of any WSGI framework (Flask, Django, Falcon...): for task
callbacks (:func:`wsgi_app`) or a job's processor (:func:`wsgi_processor`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from http import HTTPStatus
from typing import Any

from sundial_receiver.jobs import JobProcessorReceiver
from sundial_receiver.receiver import Answer, Handler, Receiver

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


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


def wsgi_app(receiver: Receiver, handler: Handler) -> WSGIApp:
    """A WSGI app that answers every POST with :meth:`Receiver.handle` (mount it where you like)."""
    return _app(lambda environ: receive(receiver, environ, handler))


def wsgi_processor(receiver: JobProcessorReceiver) -> WSGIApp:
    """A WSGI app that serves a job's processor: every POST is a phase call, answered by
    :meth:`JobProcessorReceiver.handle` (verified, run once per step, a retry answered the same)."""
    return _app(lambda environ: receiver.handle(environ_body(environ), environ_headers(environ)))


def _app(respond: Callable[[dict[str, Any]], Answer]) -> WSGIApp:
    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") != "POST":
            answer = Answer(405, {"error": "method_not_allowed"})
        else:
            answer = respond(environ)
        data = answer.content()
        try:
            reason = HTTPStatus(answer.status).phrase
        except ValueError:
            reason = "Unknown"
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(data))), *answer.headers]
        start_response(f"{answer.status} {reason}", headers)
        return [data]

    return app
