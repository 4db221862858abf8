"""The local API Gateway: an HTTP server that hands each request to the API Lambda handler."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from local.apigw import LocalContext, http_answer, proxy_event

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


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
            status, headers, raw = http_answer(result)
            self.send_response(status)
            for name, value in headers:
                if name.lower() != "content-length":
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            return  # one line per fire is what `make run` prints, not one per request

    server = ThreadingHTTPServer((host, port), Request)
    server.daemon_threads = True
    return server
