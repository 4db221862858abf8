"""Time buckets: every occurrence lives in the partition of its due minute and a shard."""

from __future__ import annotations

from datetime import UTC, datetime

MINUTE_MS = 60_000


def minute_of(due_ms: int) -> int:
    """The start (ms) of the minute an instant falls in."""
    return due_ms - due_ms % MINUTE_MS


def bucket_of(due_ms: int) -> str:
    """The bucket name of an instant: its UTC minute as ``YYYYMMDDHHMM``."""
    return datetime.fromtimestamp(minute_of(due_ms) / 1000, tz=UTC).strftime("%Y%m%d%H%M")


def minutes_between(from_ms: int, to_ms: int) -> list[int]:
    """Every minute start from ``from_ms``'s minute to ``to_ms``'s minute, both included."""
    start, end = minute_of(from_ms), minute_of(to_ms)
    return list(range(start, end + 1, MINUTE_MS)) if end >= start else []


def choose_shard(random_value: int, shards: int) -> int:
    """A shard for a new task: uniform over ``[0, shards)`` given a uniform random integer."""
    if shards < 1:
        raise ValueError("a bucket has at least one shard")
    return random_value % shards
