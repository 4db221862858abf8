"""moto in server mode, as its own process on loopback (so it never shares the GIL with timers)."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

FAKE_ENV = {
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
}


READY_POLL_S = 0.01
"""How often a start asks whether moto answers yet (a refused connection costs well under a
millisecond; a start waited half this on average after moto was ready)."""

SNAPSHOT_PATH = "/sundial/snapshot"
"""``POST`` there: a moto that keeps its state takes a snapshot now, if anything changed (the runtime
asks for one once it has made a data folder's resources at its first start: local/moto_host/journal.py
keeps no KMS write)."""

CLOCK_PATH = "/sundial/clock"
"""``POST`` there ``{"now_ms": N}``: a moto whose SQS follows the runtime's clock sets it; ``GET``:
what the advance looks at (local/moto_patches/clock.py serves both). Beside :data:`SNAPSHOT_PATH`, here
with the client that calls it, so the patches import this module and it imports none of them."""


class ClockRefused(RuntimeError):
    """moto's clock route refused a request (``400``: a time before the one it holds)."""

    def __init__(self, status: int, answer: str) -> None:
        super().__init__(f"moto's clock answered {status}: {answer[:200]}")
        self.status = status


@dataclass(frozen=True)
class Look:
    next_message_ms: int | None
    receivable: frozenset[str]
    """Names of the queues with a message receivable now."""
    unstaged_ms: int | None = None
    marks: dict[int, int | None] | None = None
    """Each shard's scan mark, asked with ``shards`` (else None)."""
    clean: dict[int, int] = field(default_factory=dict)
    """The tick's clean map, asked with ``shards``."""


def scan_command(endpoint: str, table: str) -> str:
    """The AWS CLI command that lists a table's items on this moto, as a shell line that works
    as printed: moto takes any credentials, and the CLI wants some, and a region."""
    return (
        f"AWS_ACCESS_KEY_ID={FAKE_ENV['AWS_ACCESS_KEY_ID']} AWS_SECRET_ACCESS_KEY={FAKE_ENV['AWS_SECRET_ACCESS_KEY']} "
        f"aws --region {FAKE_ENV['AWS_REGION']} --endpoint-url {endpoint} dynamodb scan --table-name {table}"
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


AWAIT_ARGUMENT = "--await-configuration"
"""local/moto_host/process.py with it imports moto's modules, then reads its arguments and environment
from its standard input (one JSON line: :meth:`EarlyMoto.configure`)."""


class EarlyMoto:
    """moto's process started first thing (``make run``'s ``local/__main__.py``), before the
    runtime has imported its own modules and read its settings: moto's imports, which every start
    waits for, run meanwhile on the other core. It learns its port and environment once the
    runtime knows them (:meth:`MotoServer.launch`); until then it only imports. A runtime that
    never configures it (its settings refused) closes its input, and it exits."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "local.moto_host.process", AWAIT_ARGUMENT],
            stdin=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **FAKE_ENV},
        )
        self.configured = False

    def configure(self, arguments: list[str], environment: dict[str, str], *, shown: bool) -> subprocess.Popen[bytes]:
        """Hand the process its arguments and its whole environment (``shown``: whether what it
        prints shows in this process's output); the process, now moto's."""
        assert self.process.stdin is not None
        self.configured = True
        self.process.stdin.write(json.dumps({"argv": arguments, "env": environment, "shown": shown}).encode() + b"\n")
        self.process.stdin.close()
        return self.process

    def close(self) -> None:
        """A process never configured: its input closed, it exits (one configured is moto's, which
        :meth:`MotoServer.stop` stops)."""
        if self.configured:
            return
        assert self.process.stdin is not None
        self.process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)


class MotoServer:
    def __init__(self, port: int | None = None, env: dict[str, str] | None = None, *, shown: bool = False) -> None:
        self.port = port or free_port()
        self.env = env or {}
        self.shown = shown
        """Whether what the process prints (its stdout: local/moto_host/persist.py's lines) shows in
        this process's; werkzeug's request lines (stderr) never do."""
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._process: subprocess.Popen[bytes] | None = None
        self._clock_connection: http.client.HTTPConnection | None = None
        self._clock_lock = threading.Lock()

    def start(self, timeout: float = 30.0) -> None:
        self.launch()
        self.wait_ready(timeout)

    def launch(self, early: EarlyMoto | None = None) -> None:
        """Start the process (it answers once :meth:`wait_ready` returns: its imports and a kept
        state's load take seconds, which the runtime spends on its own imports meanwhile), or
        tell ``early``, a process started before, its port and environment."""
        arguments = ["-H", "127.0.0.1", "-p", str(self.port)]
        environment = {**os.environ, **FAKE_ENV, **self.env}
        if early is not None:
            self._process = early.configure(arguments, environment, shown=self.shown)
            return
        self._process = subprocess.Popen(
            [sys.executable, "-m", "local.moto_host.process", *arguments],
            stdout=None if self.shown else subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=environment,
        )

    def wait_ready(self, timeout: float = 30.0) -> None:
        assert self._process is not None, "moto is not launched"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"moto_server exited with {self._process.returncode}")
            try:
                urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=1).close()  # noqa: S310
                return
            except OSError:
                time.sleep(READY_POLL_S)
        raise RuntimeError(f"moto_server did not answer on {self.endpoint} within {timeout} s")

    @property
    def pid(self) -> int:
        assert self._process is not None, "moto is not started"
        return self._process.pid

    def set_clock(self, now_ms: int) -> int:
        """Set the time of this moto's SQS (a process started with ``local.settings.MOTO_CLOCK_ENV``:
        local/moto_patches/clock.py); the time it holds is answered."""
        return int(self._clock("POST", CLOCK_PATH, json.dumps({"now_ms": now_ms}).encode())["now_ms"])

    def look(self, table: str | None = None, *, shards: int | None = None) -> Look:
        """What the virtual clock's advance asks moto at each step (local/moto_patches/clock.py), in one
        request: the next moment a message becomes receivable, the queues with one receivable now,
        and given ``table`` and ``shards``, the shards' marks and clean map and the earliest due
        time nobody staged past where their windows start."""
        asked = {"table": table, "shards": shards}
        query = f"?{urllib.parse.urlencode(asked)}" if table and shards is not None else ""
        looked = self._clock("GET", f"{CLOCK_PATH}{query}")
        marks = {int(shard): mark for shard, mark in looked["marks"].items()} if "marks" in looked else None
        clean = {int(shard): ms for shard, ms in looked.get("clean", {}).items()}
        return Look(looked["next_ms"], frozenset(looked["receivable"]), looked.get("unstaged_ms"), marks, clean)

    def _clock(self, method: str, path: str, body: bytes | None = None) -> dict[str, Any]:
        """One request to the clock's route on a connection kept open (moto's front keeps it:
        local/moto_host/front.py): an advance makes three or four a step, and a connection of each
        one's own cost a connect, an accept and a thread in moto every time. A connection moto
        closed meanwhile is opened again once."""
        with self._clock_lock:
            for attempt in (1, 2):
                if self._clock_connection is None:
                    self._clock_connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                try:
                    self._clock_connection.request(method, path, body, {"Content-Type": "application/json"})
                    answer = self._clock_connection.getresponse()
                    data = answer.read()
                except (http.client.HTTPException, ConnectionError):
                    self._clock_connection.close()
                    self._clock_connection = None
                    if attempt == 2:
                        raise
                    continue
                if answer.status != 200:
                    raise ClockRefused(answer.status, data.decode(errors="replace"))
                looked: dict[str, Any] = json.loads(data)
                return looked
        raise AssertionError("unreachable")

    def snapshot(self) -> bool:
        """Have a moto that keeps its state (local/moto_host/persist.py) take a snapshot now; whether it wrote one."""
        request = urllib.request.Request(f"{self.endpoint}{SNAPSHOT_PATH}", data=b"{}", method="POST")  # noqa: S310
        with urllib.request.urlopen(request, timeout=120) as answer:  # noqa: S310 (loopback)
            return bool(json.loads(answer.read())["saved"])

    def use(self) -> None:
        """Point every AWS client this process creates from now on at this server."""
        os.environ.update(FAKE_ENV)
        os.environ["AWS_ENDPOINT_URL"] = self.endpoint

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM, and SIGKILL if it has not exited within ``timeout`` (a moto that keeps its
        state writes its last snapshot first: local/moto_host/persist.py)."""
        with self._clock_lock:
            if self._clock_connection is not None:
                self._clock_connection.close()
                self._clock_connection = None
        if self._process and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._process.kill()


def quiet_metrics() -> None:
    """Locally there is no CloudWatch: drop metrics instead of printing EMF records to stdout
    (Powertools prints a full buffer of 100 values even when POWERTOOLS_METRICS_DISABLED is set)."""
    from shared.observability import metrics

    metrics.add_metric = lambda *args, **kwargs: None  # type: ignore[method-assign]
