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

An asynchronous invocation (``InvocationType=Event``: the tick's of the scanner, shared/adapters/scans.py)
is answered 202 at once and run on the runtime's workers, as Lambda's own queue would run it
("Invoking a Lambda function asynchronously"): a failure is run again after each of
:attr:`EventInvokeConfig.retry_delays_s`, and when those are spent the event goes to its
``on_failure`` destination, with the error (the stack's ``EventInvokeConfig``, infra/pipeline.py).
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
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
INVOCATION_TYPE = "X-Amz-Invocation-Type"
ASYNCHRONOUS = "Event"


@dataclass(frozen=True)
class EventInvokeConfig:
    """What Lambda does with a function's asynchronous invocations (the stack's
    ``EventInvokeConfig``): with no config, no retry and no destination."""

    retry_delays_s: tuple[float, ...] = ()
    """A wait before each retry, one per retry: Lambda's are 60 and 120 s (two retries)."""
    on_failure: Callable[[str, Any, BaseException], None] | None = None
    """``(function, event, error)`` once the retries are spent: the on-failure destination."""
    timeout_s: float = INVOKE_TIMEOUT_S
    """The function's timeout, which its context counts down from."""


class FunctionServer:
    """The runtime's functions, invocable over HTTP on loopback. ``handlers`` (function name ->
    ``handler(event, context)``) may be filled in after it starts: nothing invokes them before the
    state machine exists."""

    def __init__(self) -> None:
        self.handlers: dict[str, LambdaHandler] = {}
        self.event_configs: dict[str, EventInvokeConfig] = {}
        """Function name -> what its asynchronous invocations get (none: no retry)."""
        self.submit: Callable[[Callable[[], None]], Any] = _thread
        """Runs an asynchronous invocation: the runtime hands it to its workers."""
        handlers = self.handlers
        server = self

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
                event = json.loads(body) if body else {}
                if self.headers.get(INVOCATION_TYPE) == ASYNCHRONOUS:
                    server.submit(lambda: server.run_event(function_name_of(name), handler, event, attempt=0))
                    self._answer(202, b"")
                    return
                try:
                    result = handler(event, server.context(function_name_of(name)))
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

    def context(self, name: str) -> LocalContext:
        return LocalContext(
            function_name=name,
            invoked_function_arn=f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}",
            timeout_s=self.event_configs.get(name, EventInvokeConfig()).timeout_s,
        )

    def run_event(self, name: str, handler: LambdaHandler, event: Any, attempt: int) -> None:
        """One attempt at an asynchronous invocation; a failed one is submitted again after its
        retry's wait, or handed to the on-failure destination when none is left."""
        config = self.event_configs.get(name, EventInvokeConfig())
        try:
            handler(event, self.context(name))
        except Exception as exc:
            if attempt < len(config.retry_delays_s):
                retry = threading.Timer(
                    config.retry_delays_s[attempt],
                    lambda: self.submit(lambda: self.run_event(name, handler, event, attempt + 1)),
                )
                retry.daemon = True
                retry.start()
            elif config.on_failure is not None:
                config.on_failure(name, event, exc)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._server.serve_forever, name="functions", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _thread(run: Callable[[], None]) -> None:
    threading.Thread(target=run, name="lambda-event", daemon=True).start()


def forwarding_invoke(url: str) -> Callable[..., bytes | None]:
    """A ``LambdaSimpleBackend.invoke`` (in the moto process) that invokes the function at ``url``
    (a :class:`FunctionServer`) and answers what it answered, error header included."""

    def invoke(
        self: Any, function_name: str, qualifier: str | None, body: Any, headers: Any, response_headers: Any
    ) -> bytes | None:
        data = body.encode() if isinstance(body, str) else (body or b"")
        forwarded = {"Content-Type": "application/json"}
        if headers.get(INVOCATION_TYPE):
            forwarded[INVOCATION_TYPE] = headers[INVOCATION_TYPE]
        request = urllib.request.Request(  # noqa: S310 (a loopback URL of the runtime)
            f"{url}{PATH_PREFIX}{urllib.parse.quote(function_name, safe='')}/invocations",
            data=data,
            method="POST",
            headers=forwarded,
        )
        try:
            with urllib.request.urlopen(request, timeout=INVOKE_TIMEOUT_S) as answer:  # noqa: S310
                if answer.headers.get(FUNCTION_ERROR):
                    response_headers["x-amz-function-error"] = answer.headers[FUNCTION_ERROR]
                payload: bytes = answer.read()
                return payload
        except urllib.error.HTTPError as error:
            if error.code != 404:
                raise
        if not _exists(self, function_name):
            return None  # moto answers 404, as Lambda does for a function that does not exist
        return _user_function(self, function_name, data)

    return invoke


def _exists(backend: Any, function_name: str) -> bool:
    try:
        backend.get_function(function_name)
    except Exception:  # moto's UnknownFunctionException, and a name it cannot read
        return False
    return True


USER_LOG_STREAM = "sundial-local"


def _user_function(backend: Any, function_name: str, data: bytes) -> bytes:
    """A function of the user's, made in moto (not one of the runtime's): its code is not run
    (no Docker); each invocation is written, its event as the message, to the function's log
    group in moto's CloudWatch Logs (``/aws/lambda/<name>``, stream ``sundial-local``), as a
    function that logs its event would, so a test sees what it was sent. Answers the event
    (moto's simple Lambda's answer to a synchronous invocation)."""
    from moto.core.utils import unix_time_millis
    from moto.logs.models import logs_backends

    logs = logs_backends[backend.account_id][backend.region_name]
    name = function_name.split(":")[6] if function_name.startswith("arn:") else function_name  # arn:...:function:<name>
    group = f"/aws/lambda/{name}"
    if group not in logs.groups:
        logs.create_log_group(group, {})
    logs.ensure_log_stream(group, USER_LOG_STREAM)
    message = data.decode("utf-8", "replace") or "{}"
    logs.put_log_events(group, USER_LOG_STREAM, [{"timestamp": int(unix_time_millis()), "message": message}])
    return data


def install_forwarding(url: str) -> None:
    """In the moto process: Step Functions executes state machines (its context object as AWS's:
    local/stepfunctions.py, ``context_object_as_aws``), Lambda needs no Docker, and every
    invocation goes to ``url``."""
    from moto.awslambda_simple.models import LambdaSimpleBackend
    from moto.core.config import default_user_config

    from local.stepfunctions import MOTO_CONFIG

    default_user_config["stepfunctions"] = MOTO_CONFIG["stepfunctions"]
    default_user_config["lambda"] = MOTO_CONFIG["lambda"]
    LambdaSimpleBackend.invoke = forwarding_invoke(url)  # type: ignore[method-assign]
    patch_step_functions_when_first_asked()


STEP_FUNCTIONS_TARGET = "AWSStepFunctions."


def patch_step_functions_when_first_asked() -> None:
    """The interpreter's patches (local/stepfunctions.py) installed by the first Step Functions
    request, before it is served: they import moto's ASL parser, which imports EC2's models, 0.8 s
    that every start of the moto process spent before it answered anything (the runtime waits for
    it). A state machine's execution starts with a request, so none runs without them."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    installed = threading.Event()
    installing = threading.Lock()
    serve = DomainDispatcherApplication.__call__

    def call(self: Any, environ: dict[str, Any], start_response: Any) -> Any:
        if not installed.is_set() and environ.get("HTTP_X_AMZ_TARGET", "").startswith(STEP_FUNCTIONS_TARGET):
            with installing:
                if not installed.is_set():
                    from local.stepfunctions import context_object_as_aws, interpreter_speedups

                    for patch in (*interpreter_speedups(), *context_object_as_aws()):
                        patch.start()
                    installed.set()
        return serve(self, environ, start_response)

    DomainDispatcherApplication.__call__ = call  # type: ignore[method-assign]
