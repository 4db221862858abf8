"""The tests' harness for `make run` (tests/support/runtime.py): a start whose port was taken
before the runtime bound it (another process's listener got it first) starts again on another
port; any other failed start fails the test at once, with what the runtime printed. (That `make
run` on a taken port says so and exits: tests/e2e/test_busy_port.py.)"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from local.__main__ import PORT_IN_USE
from local.settings import LocalSettings
from tests.support import runtime
from tests.support.runtime import PORT_TRIES, Client, running_runtime

pytestmark = pytest.mark.unit


@dataclass
class Process:
    """A runtime's process as the harness looks at it: running (``code`` None) or exited."""

    code: int | None
    signals: int = 0

    def poll(self) -> int | None:
        return self.code

    def send_signal(self, signal: int) -> None:
        self.signals += 1
        self.code = 0

    def wait(self, timeout: float) -> int | None:
        return self.code


def starts(monkeypatch: pytest.MonkeyPatch, *outcomes: str | None) -> list[Client]:
    """Each start of the harness ends as the next of ``outcomes``: what an exited runtime printed,
    or None for one that answers."""
    made: list[Client] = []
    left = iter(outcomes)

    def start(data: Path | None, admin_key: str | None, env: dict[str, str] | None) -> Client:
        printed = next(left)
        client = Client(f"http://127.0.0.1:{1000 + len(made)}", process=Process(None if printed is None else 1))  # type: ignore[arg-type]
        client.printed.extend([printed] if printed else [])
        made.append(client)
        return client

    monkeypatch.setattr(runtime, "_start", start)
    return made


TAKEN = f"make run: {PORT_IN_USE} 127.0.0.1:1000 ({LocalSettings.setting_name('port')} sets another)\n"


def test_a_start_whose_port_was_taken_starts_again_and_the_block_gets_the_one_that_answers(monkeypatch):
    made = starts(monkeypatch, TAKEN, None)
    with running_runtime() as client:
        assert client is made[1]
    process: Any = made[1].process
    assert process.signals == 1  # stopped at the block's end
    assert len(made) == 2


def test_a_taken_port_every_time_fails_after_the_tries_saying_why(monkeypatch):
    made = starts(monkeypatch, *[TAKEN] * PORT_TRIES)
    with pytest.raises(RuntimeError, match=PORT_IN_USE), running_runtime():
        pass
    assert len(made) == PORT_TRIES


def test_any_other_failed_start_fails_at_once(monkeypatch):
    made = starts(monkeypatch, "make run: the data folder is in use\n", None)
    with pytest.raises(RuntimeError, match="data folder is in use"), running_runtime():
        pass
    assert len(made) == 1
