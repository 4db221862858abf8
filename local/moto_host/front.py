"""moto served by a lean HTTP/1.1 front instead of werkzeug's development server, and its DynamoDB
answered without Flask.

Why: a registration through the local API is two DynamoDB calls, and py-spy on the moto process
(one client registering one by one) put two thirds of moto's CPU around DynamoDB's work, not in
it: werkzeug's request handler (the request line and headers parsed by ``email.parser``, the
environ built, each header of the answer written on its own) about a fifth, and Flask's
dispatch (a request context, URL routing, flask_cors's hook, a ``Response``) another seventh.
This front keeps what moto answers and drops the rest:

* **Every request** is read by a small parser of its own (request line, headers, a body by
  ``Content-Length`` or chunked, ``Expect: 100-continue``) into the WSGI environ werkzeug's server
  builds (moto's ``MotoRequestHandler`` included: headers whose names hold an underscore are
  dropped but for S3's ``x-amz-meta-`` ones, kept under their spelling) and handed to moto's own
  ``DomainDispatcherApplication``, with every wrapper local/ puts around it (the snapshots'
  counter, local/moto_host/persist.py; the SQS clock's route, local/moto_patches/clock.py). The
  answer goes out in one write (no wait on the client's delayed ACK), with ``Date`` as werkzeug
  adds it.
* **Connections are kept alive** (HTTP/1.1; closed when the client asks or closes, or after a
  request the front could not read): botocore keeps its connections in a pool, so a call costs
  no connection, accept and thread of its own. werkzeug's server closes every connection, and a
  keep-alive handler over werkzeug was tried before and taken out after two `make bench` runs at
  100 fires a second fired tasks twice (docs/results.md). This front reads every request's body to its
  end before answering it and never closes a connection with a request in it unanswered; the
  same bench with it fired none twice (docs/measured.md, "Registration one by one").
* **A DynamoDB request** (``X-Amz-Target: DynamoDB_20120810.*`` on ``/``) skips Flask: the
  dispatcher hands it to the callable Flask would have routed it to (moto's
  ``DynamoHandler.dispatch``, with moto's ``BackendRequest`` built from the same environ), and the
  answer is what Flask's ``Response`` (and flask_cors's ``Access-Control-Allow-Origin: *``) would
  have made of its ``(status, headers, body)``. The fidelity test
  (tests/integration/test_moto_front.py) sends the same DynamoDB requests through both and
  compares status, body and headers.

moto still runs in its own process; its models, parsers and errors are untouched."""

from __future__ import annotations

import email.utils
import io
import signal
import socket
import socketserver
import sys
import time
from typing import Any
from urllib.parse import unquote_to_bytes

DYNAMODB_TARGET = "DynamoDB_20120810."
MAX_LINE = 65536
MAX_HEADERS = 200

_STATUS_TEXT: dict[int, str] = {}


def _reason(status: int) -> str:
    try:
        return _STATUS_TEXT[status]
    except KeyError:
        from http import HTTPStatus

        try:
            text = HTTPStatus(status).phrase
        except ValueError:
            text = "Unknown"
        _STATUS_TEXT[status] = text
        return text


class _Date:
    """The ``Date`` header, formatted once a second."""

    second = -1
    text = ""

    @classmethod
    def now(cls) -> str:
        second = int(time.time())
        if second != cls.second:
            cls.text, cls.second = email.utils.formatdate(second, usegmt=True), second
        return cls.text


class BadRequest(Exception):
    pass


def wsgi_keys() -> dict[str, Any]:
    """The WSGI server's own keys of an environ (PEP 3333), as werkzeug's threaded server sets them."""
    return {
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }


def read_request(rfile: Any, server_name: str, server_port: int, client: tuple[str, int]) -> dict[str, Any] | None:
    """One request from ``rfile`` as the WSGI environ werkzeug's server (with moto's handler) would
    build for it; None when the client closed the connection first."""
    from moto.core.request import (
        PRESERVED_HEADER_NAMES_ENVIRON_KEY,
        environ_key_for_header,
        should_preserve_original_header_name,
    )

    line = rfile.readline(MAX_LINE + 1)
    if not line:
        return None
    if len(line) > MAX_LINE:
        raise BadRequest("request line too long")
    parts = line.decode("latin-1").split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise BadRequest(f"bad request line {line[:100]!r}")
    method, target, protocol = parts
    headers: list[tuple[str, str]] = []
    while True:
        raw = rfile.readline(MAX_LINE + 1)
        if raw in (b"\r\n", b"\n", b""):
            break
        if len(raw) > MAX_LINE or len(headers) >= MAX_HEADERS:
            raise BadRequest("headers too long")
        name, colon, value = raw.decode("latin-1").partition(":")
        if not colon:
            raise BadRequest(f"bad header line {raw[:100]!r}")
        headers.append((name.strip(), value.strip()))

    if "://" in target.split("?", 1)[0]:  # an absolute URI: its path is what the server routes
        rest = target.split("://", 1)[1]
        path_and_query = rest[rest.find("/") :] if "/" in rest else "/"
    else:
        path_and_query = target
    path, _, query = path_and_query.partition("?")
    environ: dict[str, Any] = {
        **wsgi_keys(),
        "SERVER_SOFTWARE": "sundial-moto-front",
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": unquote_to_bytes(path).decode("latin-1"),
        "QUERY_STRING": query,
        "REQUEST_URI": target,
        "RAW_URI": target,
        "REMOTE_ADDR": client[0],
        "REMOTE_PORT": client[1],
        "SERVER_NAME": server_name,
        "SERVER_PORT": str(server_port),
        "SERVER_PROTOCOL": protocol,
    }
    dashed = {environ_key_for_header(name) for name, _ in headers if "_" not in name}
    preserved: dict[str, str] = {}
    for name, value in headers:
        key = environ_key_for_header(name)
        if "_" in name:  # werkzeug drops these (WSGI cannot tell X_Foo from X-Foo); moto keeps S3's metadata
            if not should_preserve_original_header_name(name) or key in dashed:
                continue
            preserved.setdefault(key, name)
        environ[key] = f"{environ[key]},{value}" if key in environ and key.startswith("HTTP_") else value
    environ[PRESERVED_HEADER_NAMES_ENVIRON_KEY] = preserved
    environ.setdefault("CONTENT_TYPE", "")
    return environ


def read_body(environ: dict[str, Any], rfile: Any, wfile: Any) -> None:
    """The request's body into ``wsgi.input`` (after a ``100 Continue`` when asked); a chunked body is
    decoded whole and given its length, as werkzeug hands it to moto."""
    if environ.get("HTTP_EXPECT", "").lower() == "100-continue":
        wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        wfile.flush()
    if environ.get("HTTP_TRANSFER_ENCODING", "").lower() == "chunked":
        chunks = []
        while True:
            size_line = rfile.readline(MAX_LINE + 1)
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError as error:
                raise BadRequest(f"bad chunk size {size_line[:40]!r}") from error
            if size == 0:
                while rfile.readline(MAX_LINE + 1) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                break
            chunks.append(rfile.read(size))
            rfile.readline(MAX_LINE + 1)
        body = b"".join(chunks)
        del environ["HTTP_TRANSFER_ENCODING"]
        environ["CONTENT_LENGTH"] = str(len(body))
    else:
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError as error:
            raise BadRequest("bad Content-Length") from error
        body = rfile.read(length) if length > 0 else b""
        if len(body) < length:
            raise BadRequest("body shorter than its Content-Length")
    environ["wsgi.input"] = io.BytesIO(body)


def answer(app: Any, environ: dict[str, Any]) -> bytes:
    """What ``app`` answers ``environ``, as the bytes of one HTTP/1.1 response."""
    started: list[Any] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        started[:] = [status, headers]
        return lambda data: None

    result = app(environ, start_response)
    try:
        body = b"".join(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    status, headers = started
    lines = [f"HTTP/1.1 {status}"]
    has_length = False
    for name, value in headers:
        lowered = name.lower()
        if lowered == "connection":
            continue
        has_length = has_length or lowered == "content-length"
        lines.append(f"{name}: {value}")
    head_only = environ["REQUEST_METHOD"] == "HEAD"
    if not has_length and not head_only:
        lines.append(f"Content-Length: {len(body)}")
    lines.append(f"Date: {_Date.now()}")
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (b"" if head_only else body)


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        while self.handle_one():
            pass

    def handle_one(self) -> bool:
        try:
            environ = read_request(self.rfile, self.server.name, self.server.port, self.client_address)
            if environ is None:
                return False
            read_body(environ, self.rfile, self.wfile)
        except (BadRequest, UnicodeDecodeError) as error:
            message = str(error).encode()
            self.wfile.write(
                b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Type: text/plain\r\n"
                + f"Content-Length: {len(message)}\r\n\r\n".encode()
                + message
            )
            return False
        keep = environ["SERVER_PROTOCOL"] == "HTTP/1.1" and environ.get("HTTP_CONNECTION", "").lower() != "close"
        try:
            response = answer(self.server.app, environ)
        except Exception as error:  # as werkzeug's server: a 500, and the traceback on stderr
            import traceback

            traceback.print_exc()
            message = f"{type(error).__name__}: {error}".encode()
            response = (
                b"HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\nContent-Type: text/plain\r\n"
                + f"Content-Length: {len(message)}\r\n\r\n".encode()
                + message
            )
        if keep:
            response = response.replace(b"\r\nConnection: close\r\n", b"\r\n", 1)
        self.wfile.write(response)
        return keep


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, host: str, port: int, app: Any) -> None:
        super().__init__((host, port), _Handler)
        self.app = app
        self.name = socket.getfqdn(host) if host not in ("127.0.0.1", "localhost") else host
        self.port = port


def make_dynamodb_direct() -> None:
    """A DynamoDB request goes from moto's dispatcher to moto's ``DynamoHandler.dispatch`` without
    Flask (the application Flask would build for it is still made, once, for everything else)."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    original = DomainDispatcherApplication.get_application
    if getattr(original, "_sundial_direct", False):
        return

    def get_application(self: Any, environ: dict[str, Any]) -> Any:
        if environ.get("HTTP_X_AMZ_TARGET", "").startswith(DYNAMODB_TARGET) and environ.get("PATH_INFO") == "/":
            return _direct_dynamodb
        return original(self, environ)

    get_application._sundial_direct = True  # type: ignore[attr-defined]
    DomainDispatcherApplication.get_application = get_application  # type: ignore[method-assign]


def _direct_dynamodb(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """What moto's Flask app answers a DynamoDB request (``convert_to_flask_response`` around
    ``DynamoHandler.dispatch``, then Flask's ``Response``), without Flask."""
    from botocore.exceptions import ClientError
    from moto.dynamodb.responses import DynamoHandler
    from moto.moto_api import recorder
    from moto.moto_server.werkzeug_app import BackendRequest
    from moto.settings import DISABLE_GLOBAL_CORS

    request = BackendRequest(environ)
    recorder._record_request(request)
    try:
        result = DynamoHandler.dispatch(request, request.raw_url, dict(request.headers))
    except ClientError as exc:
        result = 400, {}, exc.response["Error"]["Message"]
    if len(result) == 3:
        status, headers, content = result
    else:
        status, headers, content = 200, {}, result
    body = content.encode("utf-8") if isinstance(content, str) else bytes(content or b"")
    names = {name.lower() for name in headers}
    out = [(str(name), str(value)) for name, value in headers.items()]
    if "content-type" not in names:
        out.append(("Content-Type", "text/html; charset=utf-8"))
    if "content-length" not in names:
        out.append(("Content-Length", str(len(body))))
    if not DISABLE_GLOBAL_CORS:  # flask_cors's default: sent whether or not the request has an Origin
        out.append(("Access-Control-Allow-Origin", "*"))
    start_response(f"{status} {_reason(int(status))}", out)
    return [body]


def serve(host: str, port: int) -> None:
    """moto's server (``moto.server.main``'s application and signals) behind this front."""
    import os

    import moto.server
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    os.environ.setdefault("MOTO_PORT", str(port))
    signal.signal(signal.SIGINT, moto.server.signal_handler)
    signal.signal(signal.SIGTERM, moto.server.signal_handler)
    app = DomainDispatcherApplication(create_backend_app)
    app.debug = True  # type: ignore[attr-defined]
    with _Server(host, port, app) as server:
        server.serve_forever(poll_interval=0.5)
