"""Identifiers.

A task id is a ULID (26 Crockford base32 characters, sortable) whose 48-bit timestamp is the
task's *first* due time in milliseconds and whose 80 random bits begin with the task's bucket
shard (10 bits). The id therefore names the item's home in the table — bucket
``minute(first_due)`` and shard — so a task is read by id with one GetItem and no index
(see docs/design.md, "Finding a task by id").

A run id is an ordinary ULID stamped with the time it was created.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from dataclasses import dataclass

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_DECODE = {c: i for i, c in enumerate(ALPHABET)}
_FROM_RFC4648 = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", ALPHABET.encode())
"""RFC 4648's base32 alphabet onto Crockford's, symbol for symbol: both are the 32 values in order."""
ID_LENGTH = 26
MAX_SHARDS = 1 << 10
_TIME_BITS = 48
_RANDOM_BITS = 80
_SHARD_SHIFT = _RANDOM_BITS - 10
LAST_DUE_MS = 253_402_300_799_999
"""9999-12-31T23:59:59.999Z: the last instant a task can be due (the API takes years 1 to 9999,
and a bucket is named by its UTC minute). A ULID's 48 bits reach year 10889; a task id past this
instant names no task, and its bucket has no name."""


@dataclass(frozen=True)
class TaskKey:
    """Where a task id says its item lives."""

    due_ms: int
    shard: int


def _encode(value: int) -> str:
    """The 26 symbols of a 128-bit value, most significant first (130 bits: two leading zeros).
    base64's base32 reads bytes 5 bits at a time from the most significant, so the value shifted
    to the top of 20 bytes (160 bits) gives these 26 symbols first, in RFC 4648's alphabet: one C
    call where a loop of 26 shifts was a twentieth of the explorer's time (verify/)."""
    encoded = base64.b32encode((value << (160 - 5 * ID_LENGTH)).to_bytes(20, "big"))
    return encoded[:ID_LENGTH].translate(_FROM_RFC4648).decode()


def _decode(text: str) -> int:
    if len(text) != ID_LENGTH:
        raise ValueError("an id has 26 characters")
    if not text.isascii():  # str.upper() maps some non-ASCII letters onto the alphabet (U+017F -> "S")
        raise ValueError("an id is ASCII Crockford base32")
    value = 0
    for char in text.upper():
        if char not in _DECODE:
            raise ValueError(f"{char!r} is not a Crockford base32 character")
        value = (value << 5) | _DECODE[char]
    if value >> (_TIME_BITS + _RANDOM_BITS):
        raise ValueError("id overflows 128 bits")
    return value


def ulid(time_ms: int, random_bits: int) -> str:
    if not 0 <= time_ms < (1 << _TIME_BITS):
        raise ValueError("time out of the ULID range")
    return _encode((time_ms << _RANDOM_BITS) | (random_bits & ((1 << _RANDOM_BITS) - 1)))


def _random80(randbytes: Callable[[int], bytes]) -> int:
    return int.from_bytes(randbytes(10), "big")


def new_task_id(due_ms: int, shard: int, randbytes: Callable[[int], bytes] = os.urandom) -> str:
    if not 0 <= shard < MAX_SHARDS:
        raise ValueError(f"shard must be in [0, {MAX_SHARDS})")
    if due_ms > LAST_DUE_MS:
        raise ValueError("due time after year 9999")
    rest = _random80(randbytes) & ((1 << _SHARD_SHIFT) - 1)
    return ulid(due_ms, (shard << _SHARD_SHIFT) | rest)


def parse_task_id(task_id: str) -> TaskKey:
    """The home (first due time, shard) a task id encodes; ``ValueError`` if it is not an id."""
    value = _decode(task_id)
    random_part = value & ((1 << _RANDOM_BITS) - 1)
    if value >> _RANDOM_BITS > LAST_DUE_MS:
        raise ValueError("its time is after year 9999, when no task is due")
    return TaskKey(due_ms=value >> _RANDOM_BITS, shard=random_part >> _SHARD_SHIFT)


def new_run_id(now_ms: int, randbytes: Callable[[int], bytes] = os.urandom) -> str:
    return ulid(now_ms, _random80(randbytes))


def random_part(task_id: str) -> int:
    """The 80 random bits of an id (the shard included)."""
    return _decode(task_id) & ((1 << _RANDOM_BITS) - 1)


def ulid_floor(time_ms: int) -> str:
    """The smallest ULID of a millisecond: ``ulid_floor(a) <= id < ulid_floor(b)`` selects the
    ids stamped in ``[a, b)``."""
    return ulid(time_ms, 0)


def ulid_ceiling(time_ms: int) -> str:
    """The largest ULID of a millisecond."""
    return ulid(time_ms, (1 << _RANDOM_BITS) - 1)
