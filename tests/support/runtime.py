"""The local runtime (``make run``) in a subprocess, talked to only over HTTP, like a client would:
the e2e and browser suites each start one for their session."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from local.__main__ import PORT_IN_USE
from local.moto_server import free_port
from local.settings import IN_MEMORY, INDEX_LAG_ENV, LocalSettings
from shared.settings.environment import env_name
from tests.support.eventually import until

ADMIN_KEY = "sk_admin_e2e-tests"
"""The runtime's admin key (its setting ``admin_key``; the runtime makes one up when it is unset)."""
SIGNING_CACHE_S = 2
"""How long the runtime's functions keep a tenant's signing secrets (60 s when unset), so a test
sees a rotation reach the trigger without waiting a minute."""
AUTHORIZER_CACHE_S = 2
"""How long the runtime's API Gateway keeps the authorizer's answer for one key (60 s, the stack's,
when unset), so a test sees a revoked key refused without waiting a minute."""
INDEX_LAG_MS = 300
"""How long after a write the runtime's index Queries (its task and job lists) see it, as on AWS
(local/moto_patches/index_lag.py): the suites that talk to it wait for a list (tests/support/eventually.py)."""

OPENING_LINES = 40
BANNER_END = "Ctrl-C stops it."
"""The last line of the banner `make run` prints at its start (local/__main__.py)."""


@dataclass
class Client:
    base: str
    opening: list[str] = field(default_factory=list)
    """The first lines the runtime printed (its start-up banner)."""
    process: subprocess.Popen[str] | None = None
    """The runtime's process (a test that stops it its own way: a Ctrl-C, a ``kill -9``)."""
    printed: deque[str] = field(default_factory=lambda: deque(maxlen=200))
    """The last lines it printed."""

    def call(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None, timeout: float = 10
    ) -> tuple[int, Any]:
        status, answer, _ = self.exchange(method, path, body, headers, timeout)
        return status, answer

    def exchange(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None, timeout: float = 10
    ) -> tuple[int, Any, dict[str, str]]:
        """(status, JSON body, response headers)."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                text = answer.read()
                return answer.status, json.loads(text) if text else None, dict(answer.headers.items())
        except urllib.error.HTTPError as error:
            text = error.read()
            return error.code, json.loads(text) if text else None, dict(error.headers.items())


def answers(client: Client) -> bool:
    """Whether the runtime serves its OpenAPI document yet (False while nothing listens)."""
    try:
        return client.call("GET", "/v1/openapi.json")[0] == 200
    except OSError:
        return False


KIT_LAMBDA = "kit-reindex=tests.e2e.kit_lambda:handler"


STOP_TIMEOUT_S = 120
"""How long a stop may take: the runtime's moto writes its last snapshot first (docs/devserver.md)."""


def _start(data: Path | None, admin_key: str | None, env: dict[str, str] | None) -> Client:
    """``make run`` on a port free now, once it answers with its banner printed, or once it
    exited (the caller reads why in its ``printed``)."""
    port = free_port()
    # The runtime's own settings, not this process's (nor its AWS credentials).
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k not in LocalSettings.env_names()}
    environ.update(
        {
            LocalSettings.setting_name("port"): str(port),
            LocalSettings.setting_name("data"): str(data) if data is not None else IN_MEMORY,
            env_name("signing_cache_seconds"): str(SIGNING_CACHE_S),
            LocalSettings.setting_name("authorizer_cache_s"): str(AUTHORIZER_CACHE_S),
            INDEX_LAG_ENV: str(INDEX_LAG_MS),
            # a kit-built job processor as the runtime's own Lambda function (tests/e2e/kit_lambda.py)
            LocalSettings.setting_name("lambdas"): KIT_LAMBDA,
            "PYTHONUNBUFFERED": "1",
            **({env_name("admin_key"): admin_key} if admin_key else {}),
            **(env or {}),
        }
    )
    process = subprocess.Popen(
        [sys.executable, "-W", "ignore", "-m", "local"],
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    # The runtime prints a line per fire: read them all the time (a pipe nobody reads fills at
    # 64 KB and blocks the trigger thread that prints), keeping the last ones for a failed start.
    client = Client(f"http://127.0.0.1:{port}", process=process)
    printed = client.printed

    def read() -> None:
        for line in process.stdout or ():
            printed.append(line)
            if len(client.opening) < OPENING_LINES:
                client.opening.append(line)

    reader = threading.Thread(target=read, name="runtime-output", daemon=True)
    reader.start()
    if not until(lambda: process.poll() is not None or answers(client), STOP_TIMEOUT_S, poll=0.1):
        process.kill()
        raise RuntimeError(f"the local runtime did not answer within {STOP_TIMEOUT_S} s")
    # its banner is printed once the API serves: a moment after its first answer
    until(lambda: process.poll() is not None or any(BANNER_END in line for line in client.opening), 30, poll=0.01)
    if process.poll() is not None:
        reader.join(5)  # its last lines: the pipe ends when the process has gone
    return client


PORT_TRIES = 3
"""How many free ports a start tries: a port is free when picked and taken by the runtime seconds
later (its start), and another process's listener can take it meanwhile (a whole e2e half's
session fixture once failed so: ``make run`` then says so and exits, :data:`PORT_IN_USE`)."""


@contextmanager
def running_runtime(
    data: Path | None = None, *, admin_key: str | None = ADMIN_KEY, env: dict[str, str] | None = None
) -> Iterator[Client]:
    """``make run`` on a free port, with ``admin_key`` (None: the runtime's own, kept in its data
    folder), keeping its state in ``data`` (in memory when None: a runtime that snapshots its
    state every 2 s costs CPU no other test needs), with ``env`` added to its environment, until
    the block ends (SIGTERM, unless the test stopped it)."""
    for tries_left in range(PORT_TRIES - 1, -1, -1):
        client = _start(data, admin_key, env)
        process = client.process
        assert process is not None
        if process.poll() is None:
            break
        said = "".join(client.printed)
        if PORT_IN_USE not in said or not tries_left:
            raise RuntimeError("make run exited: " + said)
    try:
        yield client
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
