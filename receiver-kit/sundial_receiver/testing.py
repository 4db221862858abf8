"""Sundial on a virtual clock in your own tests: months of schedules in seconds.

The fixture starts your Sundial checkout's local runtime (``make run``'s) on a free port with a
virtual clock and nothing kept, once per test session; ``advance`` moves its clock and answers
once everything due up to then has fired and been recorded, retries included. Your receivers get
the callbacks as they would from a deployed stack, signed::

    # conftest.py
    pytest_plugins = ["sundial_receiver.testing"]

    # test_reports.py: SUNDIAL_HOME=/path/to/sundial pytest
    def test_the_report_runs_on_each_first_of_the_month(sundial, my_receiver_url):
        status, task = sundial.call("POST", "/v1/tasks", {
            "schedule": {"cron": "0 0 9 1 * *", "timezone": "Asia/Shanghai"},
            "target": {"http": {"url": my_receiver_url}},
        })
        assert sundial.advance(days=365) in (12, 13)  # a result a month (13: starting on a first)

Nothing here imports Sundial: the runtime runs in its own process, from ``SUNDIAL_HOME`` (its
``.venv`` when it has one, as ``make run`` makes it), and this module needs only the standard
library (and pytest, for the fixture).
"""

from __future__ import annotations

import json
import math
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

HOME_ENV = "SUNDIAL_HOME"
"""Where your Sundial checkout is (the fixture skips without it)."""
CLOCK_ENV, PORT_ENV, DATA_ENV, ADMIN_KEY_ENV = "SUNDIAL_CLOCK", "SUNDIAL_PORT", "SUNDIAL_DATA", "SUNDIAL_ADMIN_KEY"
"""The runtime's settings (Sundial spells them in its settings modules; a test of Sundial's holds
these equal to them)."""
STARTUP_S = 120.0


class Sundial:
    """A local runtime on a virtual clock: its API, and its clock."""

    def __init__(self, base: str, admin_key: str = "", timeout_s: float = 600.0) -> None:
        self.base = base
        self.admin_key = admin_key
        """The runtime's admin key (for ``/v1/tenants``; no key at all acts as the tenant "default")."""
        self.timeout_s = timeout_s

    def tenant(self, tenant_id: str) -> tuple[dict[str, str], str]:
        """A new tenant: the headers that call as it, and the secret its callbacks are signed with."""
        admin = {"Authorization": f"Bearer {self.admin_key}"}
        status, made = self.call("POST", "/v1/tenants", {"id": tenant_id}, admin)
        if status != 201:
            raise RuntimeError(f"creating tenant {tenant_id!r} answered {status}: {made}")
        return {"Authorization": f"Bearer {made['key']['secret']}"}, str(made["signing_secret"]["secret"])

    def call(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        """``(status, JSON answer)`` of one API request."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method)  # noqa: S310 (loopback)
        request.add_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:  # noqa: S310 (loopback)
                text = answer.read()
                return answer.status, json.loads(text) if text else None
        except urllib.error.HTTPError as error:
            text = error.read()
            return error.code, json.loads(text) if text else None

    def now(self) -> datetime:
        """The runtime's time."""
        status, answer = self.call("GET", "/v1/test/clock")
        if status != 200:
            raise RuntimeError(f"the runtime's clock is not virtual: GET /v1/test/clock answered {status}")
        return _instant(answer["now"])

    def advance(self, to: datetime | None = None, *, days: float = 0, seconds: float = 0) -> int:
        """Move the clock to ``to`` (an aware datetime), or on by ``days`` and ``seconds``; returns
        how many occurrences fired meanwhile: each once, in the advance its first attempt called
        its targets (a retry is not counted again). A long
        advance goes a month at a time."""
        target = to if to is not None else self.now().timestamp() + days * 86_400 + seconds
        # whole milliseconds, the clock's: each step then moves it on by one at least
        end = math.floor((target.timestamp() if isinstance(target, datetime) else target) * 1000) / 1000
        fired = 0
        while (now := self.now().timestamp()) < end:
            step = min(end, now + 31 * 86_400)
            status, answer = self.call("POST", "/v1/test/clock:advance", {"seconds": round(step - now, 3)})
            if status != 200:
                raise RuntimeError(f"advancing the clock answered {status}: {answer}")
            fired += int(answer["fired"])
        return fired


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running_sundial(home: str | Path, *, port: int | None = None) -> Iterator[Sundial]:
    """The local runtime of the Sundial checkout at ``home`` on a virtual clock, on ``port`` (a
    free one by default), keeping nothing, until the block ends."""
    root = Path(home).resolve()
    if not (root / "local" / "__main__.py").is_file():
        raise FileNotFoundError(f"{root} is not a Sundial checkout (no local/__main__.py)")
    python = root / ".venv" / "bin" / "python"
    port = port or _free_port()
    admin_key = f"sk_admin_{secrets.token_urlsafe(24)}"
    env = {
        **os.environ,
        CLOCK_ENV: "virtual",
        PORT_ENV: str(port),
        DATA_ENV: "memory",
        ADMIN_KEY_ENV: admin_key,
        "PYTHONPATH": str(root),
    }
    process = subprocess.Popen(
        [str(python) if python.exists() else sys.executable, "-W", "ignore", "-m", "local"],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    sundial = Sundial(f"http://127.0.0.1:{port}", admin_key)
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the runtime exited with {process.returncode}")
            try:
                sundial.now()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the runtime did not answer within {STARTUP_S} s") from None
                time.sleep(0.2)
        yield sundial
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


try:
    import pytest
except ImportError:  # the fixture needs pytest; the rest does not
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    @pytest.fixture(scope="session")
    def sundial() -> Iterator[Sundial]:
        """Sundial on a virtual clock, started once per session from ``SUNDIAL_HOME``."""
        home = os.environ.get(HOME_ENV)
        if not home:
            pytest.skip(f"set {HOME_ENV} to a Sundial checkout to test against its local runtime")
        with running_sundial(home) as runtime:
            yield runtime
