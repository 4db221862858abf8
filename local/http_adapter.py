"""The local API Gateway: an HTTP server that hands each request to the API Lambda handler."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from local.apigw import LocalContext, http_answer, proxy_event

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]

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


def make_server(host: str, port: int, handler: Handler) -> ThreadingHTTPServer:
    """Connections are served concurrently, the API function one request at a time: one Lambda
    execution environment handles one event at a time (and Powertools' resolver relies on it)."""
    one_at_a_time = threading.Lock()

    class Request(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode("utf-8", errors="replace") if length else None
            event = proxy_event(
                self.command,
                parts.path,
                parse_qs(parts.query, keep_blank_values=True),
                dict(self.headers.items()),
                body,
                self.client_address[0],
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
            length = int(self.headers.get("Content-Length") or 0)
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
