"""The local front doors: an HTTP server that hands each request to the API function as API Gateway
does (local/apigw.py), and ``/scheduler`` to the scheduler function as its function URL does
(local/function_url.py)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from local.apigw import STAGE, LocalContext, gateway_path, http_answer, proxy_event
from local.browser_guard import refusal
from local.function_url import url_answer, url_event
from shared.topology import API_PAYLOAD_MAX_BYTES

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]

SCHEDULER_PREFIX = "/scheduler"
"""Where the scheduler function's URL answers on `make run` (the stack's URL is its own host)."""
SCHEDULER_FUNCTION = "sundial-scheduler"


def is_scheduler_path(path: str) -> bool:
    return path == SCHEDULER_PREFIX or path.startswith(f"{SCHEDULER_PREFIX}/")


FORWARDED = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")
"""The methods of the API's ``ANY`` proxy method: API Gateway hands these to the function."""


class LoopbackServer(ThreadingHTTPServer):
    """A threaded HTTP server on loopback with the listen backlog production servers keep
    (socketserver's default is 5: clients that connected at once beyond it waited out TCP's
    retransmission, 200 ms and more, which `make bench` saw as late callbacks)."""

    daemon_threads = True
    request_queue_size = 128


def not_allowed(method: str) -> tuple[int, list[tuple[str, str]], bytes]:
    """The answer to any other method (TRACE, QUERY, made-up ones), in the API's error format."""
    error = {"code": "method_not_allowed", "message": f"the API does not answer {method} requests"}
    headers = [("Content-Type", "application/json"), ("Allow", ", ".join(FORWARDED))]
    return 405, headers, json.dumps({"error": error}).encode()


def framing_error(code: str, message: str, status: int) -> tuple[int, list[tuple[str, str]], bytes]:
    """An answer to a request whose body cannot be framed, in the API's error format; the
    connection closes after it (where the body ends is unknown)."""
    headers = [("Content-Type", "application/json"), ("Connection", "close")]
    return status, headers, json.dumps({"error": {"code": code, "message": message}}).encode()


def body_length(value: str | None) -> int | tuple[int, list[tuple[str, str]], bytes]:
    """A request's ``Content-Length`` as a number of bytes (0 when absent), or the answer to give
    instead: anything but ASCII digits (``abc``, ``-1``, ``1e3``) is a 400, and more than API
    Gateway's payload limit a 413, before a byte of the body is read."""
    if value is None or not value.strip():
        return 0
    text = value.strip()
    if not (text.isascii() and text.isdigit()):
        return framing_error("bad_request", f"Content-Length {value!r} is not a number of bytes", 400)
    length = int(text)
    if length > API_PAYLOAD_MAX_BYTES:
        return framing_error(
            "payload_too_large", f"the request is over API Gateway's {API_PAYLOAD_MAX_BYTES} bytes", 413
        )
    return length


def make_server(host: str, port: int, handler: Handler, scheduler: Handler | None = None) -> ThreadingHTTPServer:
    """Connections are served concurrently, each function one request at a time: one Lambda
    execution environment handles one event at a time (and Powertools' resolver relies on it).
    ``handler`` is the API function behind API Gateway, which answers every path, the stage's own
    (``/prod/v1/tasks``, as the API's URL has it) and the bare ones (``/v1/tasks``, as a custom
    domain's); ``scheduler`` is the scheduler function behind its function URL, which answers
    ``/scheduler/...`` (local/function_url.py)."""
    one_at_a_time = threading.Lock()
    scheduler_one_at_a_time = threading.Lock()

    class Request(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # An answer is two writes (the headers, then the body): with Nagle's algorithm on, the
        # body waited for the client's delayed ACK of the headers on a kept-alive connection,
        # 40 ms a request (schemathesis, the console's browser and the CLI keep theirs alive).
        disable_nagle_algorithm = True

        def _length(self) -> int | None:
            """The body's length, or None once the request is answered (the connection closes)."""
            length = body_length(self.headers.get("Content-Length"))
            if isinstance(length, int):
                return length
            self.close_connection = True
            self._answer(*length)
            return None

        def _serve(self) -> None:
            parts = urlsplit(self.path)
            length = self._length()
            if length is None:
                return
            body = self.rfile.read(length) if length else None
            headers = list(self.headers.items())  # a header sent twice, twice
            if (refused := refusal(self.command, headers, body)) is not None:
                self._answer(*refused)  # a web page's request (local/browser_guard.py)
                return
            if scheduler is not None and is_scheduler_path(parts.path):
                event = url_event(self.command, parts.path, parts.query, headers, body, self.client_address[0])
                with scheduler_one_at_a_time:
                    result = scheduler(event, LocalContext(function_name=SCHEDULER_FUNCTION))
                self._answer(*url_answer(result))
                return
            path = gateway_path(parts.path)
            event = proxy_event(
                self.command,
                path,
                parse_qs(parts.query, keep_blank_values=True),
                headers,
                body,
                self.client_address[0],
                stage_in_path=path == f"/{STAGE}" or path.startswith(f"/{STAGE}/"),
            )
            with one_at_a_time:
                result = handler(event, LocalContext())
            self._answer(*http_answer(result))

        def _answer(self, status: int, headers: list[tuple[str, str]], raw: bytes) -> None:
            self.send_response(status)
            for name, value in headers:
                if name.lower() != "content-length":
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(raw)

        def _refuse(self) -> None:
            length = self._length()
            if length is None:
                return
            if length:
                self.rfile.read(length)  # the connection stays usable for the next request
            self._answer(*not_allowed(self.command))

        do_DELETE = do_GET = do_HEAD = do_OPTIONS = do_PATCH = do_POST = do_PUT = _serve

        def __getattr__(self, name: str) -> Any:
            """``do_<METHOD>`` for every other method (http.server answers 501 to those it has no
            ``do_`` for; API Gateway answers none of them with the function)."""
            if name.startswith("do_"):
                return self._refuse
            raise AttributeError(name)

        def log_message(self, format: str, *args: Any) -> None:
            return  # one line per fire is what `make run` prints, not one per request

    return LoopbackServer((host, port), Request)
