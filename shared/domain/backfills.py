"""Backfill: a recurring task's occurrences in a past window fired now, oldest first, at most
``per_second`` a second, each once, as runs of the task with their own ``scheduled_for``
(``POST /v1/tasks/{task_id}/backfill``; docs/backfill.md). Pure: no I/O.

Each occurrence is fired by an extra run (the one-shot item a run now is: shared/services/tasks.py)
whose schedule is ``At(<the occurrence>)`` and whose due time is its place in the backfill's pace:
the pipeline fires it as any one-shot, and its callback says the occurrence's time. Whether an
occurrence may be taken at all is decided by one conditional write per occurrence, keyed by the
task and the occurrence's time (shared/store/backfills.py), so no two backfills, nor a backfill
and the task itself, ever fire one occurrence twice.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from shared.domain import schedules as sched
from shared.domain.errors import SundialError, ValidationFailed
from shared.domain.ids import MAX_SHARDS, new_task_id
from shared.domain.times import iso, to_ms

MAX_OCCURRENCES = 1000
"""Occurrences one backfill fires at most: every one is written by the request (four items in a
conditional transaction, 24 occurrences a TransactWriteItems: 42 calls of about 100 items), which
must end within the API function's 10 s (docs/backfill.md, section 5, the estimate); a longer
window is backfilled in parts (the refusal says where the first part ends)."""
MIN_PER_SECOND = 0.01
MAX_PER_SECOND = 100.0
"""``per_second`` bounds: one occurrence every 100 s at the slowest, 100 a second at the fastest
(a tenant's receivers are held to its limits per destination on top: docs/receivers.md)."""
MAX_AGE = timedelta(days=366)
"""How far back ``from`` may lie: each occurrence's mark is kept longer than this (400 days), so a
later backfill always finds what an earlier one took."""
MARK_DAYS = 400
"""How long an occurrence's mark outlives the occurrence (DynamoDB TTL)."""


class BackfillNotFound(SundialError):
    code = "backfill_not_found"
    status = 404


class BackfillStatus(StrEnum):
    RUNNING = "running"
    """Some of its runs are still to fire (or firing)."""
    DONE = "done"
    """Every run it started has ended (succeeded, failed, skipped)."""
    CANCELLED = "cancelled"
    """Cancelled: none of its runs fires from then on (one being called finishes)."""


class LeftOut(StrEnum):
    """Why an occurrence of the window is not fired by a backfill."""

    FIRED = "fired_by_task"
    """The task fired it itself (its run is on record, not skipped)."""
    BACKFILLED = "backfilled"
    """Another backfill took it (an earlier one, or one running beside it)."""
    TASK = "task_armed"
    """The task itself will fire it or is firing it: at or after the occurrence the task is armed
    for, or the one it is firing now."""
    CANCELLED = "cancelled"
    """The backfill was cancelled before it was taken."""


@dataclass(frozen=True)
class Progress:
    """Where a backfill's runs stand (read from their items)."""

    waiting: int = 0
    """Not claimed yet: due later, at the backfill's pace."""
    firing: int = 0
    """Claimed and not ended: being called, retrying, or held back by a limit."""
    succeeded: int = 0
    failed: int = 0
    """Ended failed or dead-lettered."""
    skipped: int = 0
    cancelled: int = 0
    """Cancelled before they fired."""
    next_fire_ms: int | None = None
    """When the next waiting one fires (None: none waits)."""

    @property
    def open(self) -> int:
        return self.waiting + self.firing


@dataclass(frozen=True)
class Planned:
    """One occurrence a backfill fires: its time on the task's schedule, when it fires, and the
    extra run's item that fires it."""

    scheduled_ms: int
    fire_ms: int
    item_id: str


@dataclass(frozen=True)
class Backfill:
    id: str
    tenant: str
    task_id: str
    start: datetime
    """The window's start (``from``), included."""
    end: datetime
    """The window's end (``to``), excluded."""
    per_second: float
    created_at: datetime
    in_window: int
    """The schedule's occurrences in the window."""
    plan: tuple[Planned, ...] = ()
    """The occurrences this backfill fires (taken), oldest first."""
    left_out: Mapping[str, int] = field(default_factory=dict)
    """The window's other occurrences, counted by why (``LeftOut`` values)."""
    cancelled_at: datetime | None = None
    progress: Progress | None = None
    """Read with the backfill by id; None in a list."""

    def status(self) -> BackfillStatus:
        if self.cancelled_at is not None:
            return BackfillStatus.CANCELLED
        if self.progress is not None and self.progress.open == 0:
            return BackfillStatus.DONE
        return BackfillStatus.RUNNING


def check_window(start: datetime, end: datetime, now: datetime) -> None:
    """A backfill's window is in the past and not empty: ``from`` before ``to``, ``to`` not after
    ``now``, ``from`` at most :data:`MAX_AGE` back. A :class:`ValidationFailed` naming the member."""
    if end > now:
        raise ValidationFailed.on("to", f"{iso(end)} is after now ({iso(now)}): a backfill fires past occurrences only")
    if start >= end:
        raise ValidationFailed.on("to", f"must be after from ({iso(start)})")
    if now - start > MAX_AGE:
        raise ValidationFailed.on(
            "from", f"is more than {MAX_AGE.days} days back (the marks of taken occurrences are kept {MARK_DAYS} days)"
        )


def occurrences(schedule: sched.Schedule, start: datetime, end: datetime) -> list[datetime]:
    """The schedule's occurrences in ``[start, end)``, oldest first; a :class:`ValidationFailed`
    naming ``to`` when there are more than :data:`MAX_OCCURRENCES`, saying where a first part of
    that many ends."""
    found: list[datetime] = []
    at = sched.at_or_after(schedule, start)
    while at is not None and at < end:
        if len(found) == MAX_OCCURRENCES:
            raise ValidationFailed.on(
                "to",
                f"the window holds more than {MAX_OCCURRENCES} occurrences of the task's schedule: backfill it in "
                f"parts (the first {MAX_OCCURRENCES} end with {iso(found[-1])}: "
                f"a part to {iso(found[-1] + sched.ONE_MS)})",
            )
        found.append(at)
        at = sched.next_after(schedule, at)
    return found


def fire_times(start_ms: int, count: int, per_second: float) -> list[int]:
    """When each of ``count`` occurrences fires, from ``start_ms``, at most ``per_second`` in any
    second: occurrence i at ``start + ceil(i * 1000 / per_second)`` ms, so any ``n = per_second``
    of them in a row span at least a second (occurrences i and i + n are 1000 ms apart or more)."""
    return [start_ms + math.ceil(i * 1000 / per_second) for i in range(count)]


def item_id(backfill_id: str, scheduled_ms: int, fire_ms: int, shards: int) -> str:
    """The id of the extra run that fires one occurrence for one backfill: its home is the bucket
    of its fire time (so the scanners find it there), its shard and random bits a hash of the
    backfill and the occurrence (the same id for a retried write of the same plan)."""
    if not 0 < shards <= MAX_SHARDS:
        raise ValueError(f"shards must be in [1, {MAX_SHARDS}]")
    digest = hashlib.sha256(f"{backfill_id}|{scheduled_ms}".encode()).digest()
    shard = int.from_bytes(digest[10:14], "big") % shards
    return new_task_id(fire_ms, shard, lambda n: digest[:n])


def left_out(
    times: Sequence[datetime], *, armed: datetime | None, firing: datetime | None, fired: set[int], taken: set[int]
) -> dict[int, LeftOut]:
    """The occurrences (by their ms) a backfill must not fire, and why: the task's own (at or after
    ``armed``, the occurrence the task is armed for while it can still fire, and ``firing``, the one
    it fires now), those it fired (``fired``: its runs on record, not skipped), those another
    backfill took (``taken``). What is left is taken by the conditional write, which settles a race
    with a backfill running beside this one."""
    out: dict[int, LeftOut] = {}
    for at in times:
        ms = to_ms(at)
        if (armed is not None and at >= armed) or at == firing:
            out[ms] = LeftOut.TASK
        elif ms in fired:
            out[ms] = LeftOut.FIRED
        elif ms in taken:
            out[ms] = LeftOut.BACKFILLED
    return out
