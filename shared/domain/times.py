"""Instants: timezone-aware UTC datetimes at millisecond precision, and their wire form."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """Where the time comes from: the wall, or a clock a test or the local runtime moves."""

    def now_ms(self) -> int:
        """Milliseconds since the epoch."""

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of this clock's time."""


class WallClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


_clock: Clock = WallClock()


def use_clock(clock: Clock) -> Clock:
    """Make ``clock`` the process's clock (the local runtime's virtual clock); the one it replaces."""
    global _clock
    before, _clock = _clock, clock
    return before


def now_ms() -> int:
    """The process's clock in milliseconds since the epoch: the one clock every service defaults
    to (tests hand theirs in instead). Nothing else in the code reads the wall: a test
    (tests/unit/test_clock_seam.py) holds every module to it."""
    return _clock.now_ms()


def utc_now() -> datetime:
    """:func:`now_ms` as an instant."""
    return from_ms(now_ms())


def sleep(seconds: float) -> None:
    """Wait on the process's clock (a pause before a retry, a wait for a due time)."""
    _clock.sleep(seconds)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def to_ms(instant: datetime) -> int:
    """Milliseconds since the epoch (the instant must be timezone-aware)."""
    if instant.tzinfo is None:
        raise ValueError("naive datetime: an instant needs a UTC offset")
    return (instant - _EPOCH) // _MS


def from_ms(ms: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=ms)


def truncate_ms(instant: datetime) -> datetime:
    return from_ms(to_ms(instant))


def iso(instant: datetime) -> str:
    """The API's time format: UTC, millisecond precision, ``Z`` suffix."""
    utc = instant.astimezone(UTC)
    # not strftime("%Y"): it does not pad years before 1000, and "309-04-24" is no ISO 8601 date
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}."
        f"{utc.microsecond // 1000:03d}Z"
    )
