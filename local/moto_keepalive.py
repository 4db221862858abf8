"""moto's server is werkzeug's development server, which closes the connection after every
response (werkzeug: "Always close the connection. This disables HTTP/1.1 keep-alive") and so
starts a thread for every request: during `make bench` at 100 fires a second, some 165 new
connections a second, their accepts, threads and closes a quarter of the moto process's time.
Wherever moto runs as a server for Sundial (local/moto_process.py) it is served by the same
werkzeug server and moto application with HTTP/1.1 keep-alive: each request's body is read to
its end (its Content-Length, or its last chunk) before the next request is read from the
connection, in place of werkzeug's "read whatever is left on the socket", which on a
kept-alive connection would swallow the next request. Clients keep their connections
(botocore pools them), the server one thread per connection. An upstream fix (an opt-in
keep-alive in werkzeug's server, or moto serving through a production WSGI server) would be
the better place."""

from __future__ import annotations

import os
import selectors
import socket
import threading
from typing import Any

from werkzeug import serving
from werkzeug.wsgi import LimitedStream

IDLE_TIMEOUT_S = 300
"""How long a kept-alive connection may sit idle before the server closes it (and its thread
ends); botocore retries a request that finds its pooled connection closed."""


class _Nothing:
    """Stands in for werkzeug's post-response socket drain (a selector): reports nothing to read."""

    def register(self, *args: Any) -> None:
        pass

    def select(self, timeout: float | None = None) -> list[Any]:
        return []

    def close(self) -> None:
        pass


class _NoDrain:
    DefaultSelector = _Nothing
    EVENT_READ = selectors.EVENT_READ


def keep_alive_handler() -> type[Any]:
    from moto.moto_server.werkzeug_app import MotoRequestHandler

    class KeepAliveHandler(MotoRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = IDLE_TIMEOUT_S

        def setup(self) -> None:
            super().setup()
            # werkzeug writes a response's headers and its body apart: on a kept-alive connection
            # Nagle's algorithm held the body until the client's delayed ACK (40 ms a request).
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def make_environ(self) -> dict[str, Any]:
            environ: dict[str, Any] = super().make_environ()
            if not environ.get("wsgi.input_terminated"):  # chunked: werkzeug's DechunkedInput ends it
                try:
                    length = max(int(environ.get("CONTENT_LENGTH") or 0), 0)
                except ValueError:
                    length, self.close_connection = 0, True
                environ["wsgi.input"] = LimitedStream(environ["wsgi.input"], length)
            self._body = environ["wsgi.input"]
            return environ

        def run_wsgi(self) -> None:
            self._body = None
            super().run_wsgi()
            body = self._body
            if body is None or self.close_connection:
                return
            try:  # what the application left unread, so that the next request starts clean
                if isinstance(body, LimitedStream):
                    body.exhaust()
                else:
                    while body.read(65536):
                        pass
            except Exception:
                self.close_connection = True

        def send_header(self, keyword: str, value: str) -> None:
            if keyword.lower() == "connection" and value.lower() == "close" and not self.close_connection:
                return  # werkzeug's "always close"; a client's own "Connection: close" still closes
            super().send_header(keyword, value)

    return KeepAliveHandler


def make_keep_alive_server(host: str, port: int) -> serving.BaseWSGIServer:
    """moto's own application (as ``moto.server.main`` builds it) behind the keep-alive handler."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    serving.selectors = _NoDrain  # type: ignore[assignment]  # this process serves only moto
    os.environ.setdefault("MOTO_PORT", str(port))
    app = DomainDispatcherApplication(create_backend_app)
    app.debug = True  # type: ignore[attr-defined]  # as moto.server.main
    return serving.make_server(host, port, app, threaded=True, request_handler=keep_alive_handler())


def serve(host: str, port: int) -> None:
    server = make_keep_alive_server(host, port)
    server.serve_forever()


def serve_in_thread(host: str = "127.0.0.1", port: int = 0) -> tuple[serving.BaseWSGIServer, threading.Thread]:
    """For the tests: a keep-alive moto server on a thread of this process."""
    server = make_keep_alive_server(host, port)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread
