"""Lambda's Invoke API between the two processes of the local runtime.

moto's Step Functions interpreter runs in the moto process and invokes the job function through
moto's Lambda (``LambdaSimpleBackend.invoke``, no Docker). The function itself runs in the runtime
process, next to the other handlers: with their environment, their warmed services and their
connections, its calls attributed like theirs. So the moto process forwards each invocation
(:func:`forwarding_invoke`) to a small HTTP server of the runtime's (:class:`FunctionServer`) that
speaks the Invoke API's shape: ``POST /2015-03-31/functions/<name>/invocations`` with the event as
the body, answering the function's result, or for an unhandled exception Lambda's error payload
(``errorType`` = the exception's class name) with ``X-Amz-Function-Error: Unhandled``, which moto
turns into the task's error, the name ``Retry``/``Catch`` match. An unknown function is a 404,
which moto answers as Lambda does (ResourceNotFoundException).
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from local.apigw import LocalContext
from local.http_adapter import LoopbackServer
from local.stepfunctions import ACCOUNT, REGION, function_name_of, lambda_error

PATH_PREFIX = "/2015-03-31/functions/"
FUNCTION_ERROR = "X-Amz-Function-Error"
INVOKE_TIMEOUT_S = 900.0
"""Lambda's own limit: a job step waiting on a slow processor is not cut short here."""

LambdaHandler = Callable[[Any, Any], Any]


class FunctionServer:
    """The runtime's functions, invocable over HTTP on loopback. ``handlers`` (function name ->
    ``handler(event, context)``) may be filled in after it starts: nothing invokes them before the
    state machine exists."""

    def __init__(self) -> None:
        self.handlers: dict[str, LambdaHandler] = {}
        handlers = self.handlers

        class Invoke(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are two writes: no delayed-ACK wait between

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                path = urllib.parse.urlparse(self.path).path
                name = urllib.parse.unquote(path.removeprefix(PATH_PREFIX).split("/")[0])
                handler = handlers.get(function_name_of(name)) if path.startswith(PATH_PREFIX) else None
                if handler is None:
                    self._answer(404, b'{"Message": "Function not found"}')
                    return
                context = LocalContext(
                    function_name=function_name_of(name),
                    invoked_function_arn=f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{function_name_of(name)}",
                )
                try:
                    result = handler(json.loads(body) if body else {}, context)
                    payload = json.dumps(result).encode()
                except Exception as exc:
                    self._answer(200, lambda_error(exc), {FUNCTION_ERROR: "Unhandled"})
                    return
                self._answer(200, payload)

            def _answer(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = LoopbackServer(("127.0.0.1", 0), Invoke)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._server.serve_forever, name="functions", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def forwarding_invoke(url: str) -> Callable[..., bytes | None]:
    """A ``LambdaSimpleBackend.invoke`` (in the moto process) that invokes the function at ``url``
    (a :class:`FunctionServer`) and answers what it answered, error header included."""

    def invoke(
        self: Any, function_name: str, qualifier: str | None, body: Any, headers: Any, response_headers: Any
    ) -> bytes | None:
        data = body.encode() if isinstance(body, str) else (body or b"")
        request = urllib.request.Request(  # noqa: S310 (a loopback URL of the runtime)
            f"{url}{PATH_PREFIX}{urllib.parse.quote(function_name, safe='')}/invocations",
            data=data,
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=INVOKE_TIMEOUT_S) as answer:  # noqa: S310
                if answer.headers.get(FUNCTION_ERROR):
                    response_headers["x-amz-function-error"] = answer.headers[FUNCTION_ERROR]
                payload: bytes = answer.read()
                return payload
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return None  # moto answers 404, as Lambda does for a function that does not exist
            raise

    return invoke


def install_forwarding(url: str) -> None:
    """In the moto process: Step Functions executes state machines, Lambda needs no Docker, and
    every invocation goes to ``url``."""
    from moto.awslambda_simple.models import LambdaSimpleBackend
    from moto.core.config import default_user_config

    from local.stepfunctions import MOTO_CONFIG, interpreter_speedups

    default_user_config["stepfunctions"] = MOTO_CONFIG["stepfunctions"]
    default_user_config["lambda"] = MOTO_CONFIG["lambda"]
    LambdaSimpleBackend.invoke = forwarding_invoke(url)  # type: ignore[method-assign]
    for speedup in interpreter_speedups():
        speedup.start()
