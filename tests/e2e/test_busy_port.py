"""`make run` on a port something else listens on: it says so in one line and exits, leaving no
moto behind (its moto starts first, before the API's port is bound). The tests' harness starts
again on another port when that happens to a port it picked free (tests/unit/test_runtime_harness.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from local.__main__ import PORT_IN_USE
from local.settings import IN_MEMORY, LocalSettings
from tests.support.eventually import until

pytestmark = pytest.mark.e2e

MARK = "BUSY_PORT_TEST_MARK"
"""An environment variable no runtime reads: its processes, moto's included, inherit it, so a
look at every process's environment finds what a start left running."""


def marked(mark: str) -> list[int]:
    """The processes whose environment carries ``MARK=mark``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if f"{MARK}={mark}".encode() in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


@pytest.fixture
def taken() -> Iterator[int]:
    """A loopback port something listens on."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield int(listener.getsockname()[1])


def test_make_run_on_a_taken_port_says_so_and_leaves_no_moto_behind(taken):
    mark = uuid.uuid4().hex
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k not in LocalSettings.env_names()},
        LocalSettings.setting_name("port"): str(taken),
        LocalSettings.setting_name("data"): IN_MEMORY,
        MARK: mark,
    }
    ran = subprocess.run(
        [sys.executable, "-W", "ignore", "-m", "local"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,  # the exit code is asserted with the output
    )
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert ran.stderr.strip().splitlines() == [
        f"make run: {PORT_IN_USE} 127.0.0.1:{taken} ({LocalSettings.setting_name('port')} sets another)"
    ]
    assert until(lambda: not marked(mark), timeout=10), "a process of the start is still running"
