"""The tour's echo receiver (`python -m local.echo`) prints each callback from one clock reading."""

from __future__ import annotations

import io
import json
import re
import time
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from local import echo

pytestmark = pytest.mark.unit

SECOND_BOUNDARY_NS = 1_700_000_010_000_000_000
"""2023-11-14T22:13:30Z: the clock below starts half a millisecond before it."""


class Clock:
    """A wall clock that moves on 1 ms at every reading, whichever function reads it."""

    def __init__(self, start_ns: int) -> None:
        self.now_ns = start_ns
        self.readings: list[int] = []

    def time_ns(self) -> int:
        self.readings.append(self.now_ns)
        self.now_ns += 1_000_000
        return self.readings[-1]

    def time(self) -> float:
        return self.time_ns() / 1e9

    def gmtime(self, seconds: float | None = None) -> time.struct_time:
        return time.gmtime(self.time() if seconds is None else seconds)


class FakeSocket:
    """One HTTP request in, the answer written out: the handler without a network."""

    def __init__(self, request: bytes) -> None:
        self.incoming = io.BytesIO(request)
        self.outgoing = io.BytesIO()

    def makefile(self, mode: str, *args: Any, **kwargs: Any) -> io.BytesIO:
        return self.incoming if "r" in mode else self.outgoing

    def sendall(self, data: bytes) -> None:
        self.outgoing.write(data)


def serve(path: str, body: dict[str, Any]) -> bytes:
    data = json.dumps(body).encode()
    request = f"POST {path} HTTP/1.1\r\nHost: echo\r\nContent-Length: {len(data)}\r\nSundial-Attempt: 1\r\n\r\n"
    sock = FakeSocket(request.encode() + data)
    echo.Echo(sock, ("127.0.0.1", 1), SimpleNamespace())  # type: ignore[arg-type]
    return sock.outgoing.getvalue()


def printed_ms(line: str) -> int:
    """The instant a printed line shows, in ms since the epoch (the clock's day)."""
    stamp = re.match(r"(\d\d):(\d\d):(\d\d)\.(\d{3})Z", line)
    assert stamp, line
    hours, minutes, seconds, millis = (int(part) for part in stamp.groups())
    day = datetime.fromtimestamp(SECOND_BOUNDARY_NS // 10**9, UTC).replace(hour=0, minute=0, second=0)
    return int(day.timestamp()) * 1000 + ((hours * 60 + minutes) * 60 + seconds) * 1000 + millis


def test_a_callback_read_across_a_second_boundary_is_printed_when_it_arrived(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    clock = Clock(SECOND_BOUNDARY_NS - 500_000)
    fake_time = SimpleNamespace(time=clock.time, time_ns=clock.time_ns, gmtime=clock.gmtime, strftime=time.strftime)
    monkeypatch.setattr(echo, "time", fake_time)
    scheduled = datetime.fromtimestamp((SECOND_BOUNDARY_NS - 1_000_000) / 1e9, UTC)
    body = {"task_id": "01TASK", "scheduled_for": scheduled.isoformat(timespec="milliseconds")}

    answer = serve("/hook", body)

    assert answer.startswith(b"HTTP/1.0 200")
    line = capsys.readouterr().out.splitlines()[0]
    shown = printed_ms(line)
    first, last = clock.readings[0] // 1_000_000, clock.readings[-1] // 1_000_000
    assert first <= shown <= last, f"printed {shown}, the clock read {first}..{last}: {line}"
    scheduled_ms = (SECOND_BOUNDARY_NS - 1_000_000) // 1_000_000
    assert f"({shown - scheduled_ms} ms after scheduled_for)" in line


def test_the_line_says_how_long_after_scheduled_for_from_the_same_reading() -> None:
    now_ns = SECOND_BOUNDARY_NS + 7_400_000  # 22:13:30.007
    line = echo.describe(now_ns, "POST", "/cron", 200, {}, {"scheduled_for": "2023-11-14T22:13:29.995Z"})
    assert line.startswith("22:13:30.007Z POST /cron -> 200")
    assert "(12 ms after scheduled_for)" in line


def test_an_early_callback_is_called_out() -> None:
    line = echo.describe(SECOND_BOUNDARY_NS, "POST", "/a", 200, {}, {"scheduled_for": "2023-11-14T22:13:30.250Z"})
    assert line.startswith("22:13:30.000Z")
    assert "(250 ms BEFORE scheduled_for)" in line


@pytest.mark.parametrize("body", [None, "text", {"scheduled_for": "soon"}, {"scheduled_for": 5}, [1]])
def test_a_body_without_a_scheduled_time_prints_without_a_comparison(body: Any) -> None:
    line = echo.describe(SECOND_BOUNDARY_NS, "GET", "/x", 200, {}, body)
    assert line.startswith("22:13:30.000Z GET /x -> 200  {}\n")
    assert "scheduled_for)" not in line
