"""The state of limits per destination (docs/receivers.md, section 1): item
``LIMIT#<tenant>#<name>#<k>`` / ``S`` per sub-bucket, on a partition of its own.

Booking is GCRA booked ahead (shared/domain/limits.py) in one conditional write, never a read
first: the TAT moves to ``max(TAT, reference) + interval``, which an update expression cannot
compute, so the booking guesses which case it is in, as the tenants' rate limiter does
(shared/store/rate.py): *busy* (``TAT >= reference``: add the interval) or *idle* (no TAT, or
``TAT < reference``: set ``reference + interval``); a wrong guess fails its condition and the
other is written. Every write is conditional on the limit's ``version``: a limit changed or
deleted since the trigger read it fails the write, and the trigger reads the limit again.

Calls in flight are a map run id -> lease end: taking a slot is conditional on the map's size,
and a crashed trigger's slot is removed by the next taker that finds the map full and the lease
over.
"""

from __future__ import annotations

import math

from pynamodb.exceptions import DoesNotExist, PynamoDBException
from pynamodb.expressions.condition import Condition, size
from pynamodb.expressions.update import Action

from shared.domain.errors import StorageUnavailable
from shared.domain.limits import Booking, Limit, LimitState, booked_start
from shared.store.models import is_conflict
from shared.store.tenant_items import LimitStateItem

ATTEMPTS = 4
"""Rounds of (guessed case, other case) before a booking gives up under contention."""


def state_pk(tenant: str, name: str, k: int) -> str:
    return f"LIMIT#{tenant}#{name}#{k}"


def _item(limit: Limit, k: int) -> LimitStateItem:
    return LimitStateItem(state_pk(limit.tenant, limit.name, k), "S")


def _found(limit: Limit, k: int, consistent: bool) -> LimitStateItem | None:
    try:
        return LimitStateItem.get(state_pk(limit.tenant, limit.name, k), "S", consistent_read=consistent)
    except DoesNotExist:
        return None
    except PynamoDBException as exc:
        raise StorageUnavailable(f"limit {limit.name}: {exc.msg}") from exc


def _written(item: LimitStateItem, actions: list[Action], condition: Condition, limit: Limit) -> bool:
    """One conditional update of a state item: True when written, False when its condition did
    not hold; anything else is the store being unavailable."""
    try:
        item.update(actions, condition)
    except PynamoDBException as exc:
        if not is_conflict(exc):
            raise StorageUnavailable(f"limit {limit.name}: {exc.msg}") from exc
        return False
    return True


class DynamoThrottle:
    """Implements shared.services.ports.tenants.Throttle."""

    def __init__(self) -> None:
        self._busy: dict[str, bool] = {}
        """Per state item, which case its last booking was: the first guess for the next."""

    def book(self, limit: Limit, k: int, reference_ms: int) -> Booking | None:
        """Book the earliest start at or after ``reference_ms``; None when the limit is not (any
        more) at ``limit.version``: changed or deleted since it was read."""
        item = _item(limit, k)
        rate = limit.rate()
        same = LimitStateItem.version == limit.version
        extra: list[Action] = []
        if limit.in_flight() is not None:
            extra.append(LimitStateItem.slots.set(LimitStateItem.slots | {}))
        key = item.pk
        for _ in range(ATTEMPTS):
            first = self._busy.get(key, True)
            for busy in (first, not first):
                condition: Condition
                step: Action
                if busy:
                    condition = same & (LimitStateItem.tat_ms >= reference_ms)
                    step = LimitStateItem.tat_ms.add(rate.interval_ms)
                else:
                    condition = same & (LimitStateItem.tat_ms.does_not_exist() | (LimitStateItem.tat_ms < reference_ms))
                    step = LimitStateItem.tat_ms.set(reference_ms + rate.interval_ms)
                if not _written(item, [step, *extra], condition, limit):
                    continue
                self._busy[key] = busy
                start = booked_start(float(item.tat_ms or 0), reference_ms, rate)
                hold = int(item.hold_until_ms) if item.hold_until_ms is not None else 0
                return Booking(max(math.ceil(start), hold))
            current = self.state(limit, k, consistent=True)
            if current is None or current.version != limit.version:
                return None
        raise StorageUnavailable(f"limit {limit.name}: too many bookings at once; the occurrence comes back")

    def acquire(self, limit: Limit, k: int, run_id: str, now_ms: int, lease_until_ms: int) -> bool | None:
        """Take one of the limit's in-flight slots for ``run_id`` until ``lease_until_ms``: True
        when taken, False when all are taken (after removing those whose lease is over), None
        when the limit changed or is gone."""
        cap = limit.in_flight()
        if cap is None:
            return True
        item = _item(limit, k)
        same = LimitStateItem.version == limit.version
        slot = LimitStateItem.slots[run_id]
        for _ in range(2):
            if _written(
                item, [slot.set(lease_until_ms)], same & ((size(LimitStateItem.slots) < cap) | slot.exists()), limit
            ):
                return True
            found = _found(limit, k, consistent=True)
            if found is None or int(found.version) != limit.version:
                return None
            if not self._purge(limit, k, now_ms, found):
                return False
        return False

    @staticmethod
    def _purge(limit: Limit, k: int, now_ms: int, found: LimitStateItem) -> bool:
        """Remove the slots whose lease is over (each conditional on its lease, so a slot taken
        again meanwhile stays); False when none was."""
        slots = found.slots.as_dict() if found.slots is not None else None
        if slots is None:
            # the map is made by bookings of a limit with max_in_flight; one set before it had one
            empty = (LimitStateItem.version == limit.version) & LimitStateItem.slots.does_not_exist()
            _written(_item(limit, k), [LimitStateItem.slots.set({})], empty, limit)
            return True
        expired = {run: int(lease) for run, lease in slots.items() if int(lease) < now_ms}
        if not expired:
            return False
        condition: Condition = LimitStateItem.version == limit.version
        for run, lease in expired.items():
            condition &= LimitStateItem.slots[run] == lease
        _written(_item(limit, k), [LimitStateItem.slots[run].remove() for run in expired], condition, limit)
        return True

    def release(self, limit: Limit, k: int, run_id: str) -> None:
        """Give the run's slot back (nothing when it has none, or the limit is gone)."""
        if limit.in_flight() is None:
            return
        slot = LimitStateItem.slots[run_id]
        _written(_item(limit, k), [slot.remove()], slot.exists(), limit)

    def hold(self, limit: Limit, until_ms: int) -> None:
        """A receiver answered Retry-After for the whole limit: no booking starts before
        ``until_ms`` (and the ones after it start one interval apart, not in a burst). Two writes
        per sub-bucket, each conditional on not moving a later value back."""
        rate = limit.rate()
        tat = until_ms + (rate.burst - 1) * rate.interval_ms
        for k in range(limit.sub_buckets):
            item = _item(limit, k)
            live = LimitStateItem.version.exists()
            writes = (
                (
                    LimitStateItem.hold_until_ms.set(until_ms),
                    LimitStateItem.hold_until_ms.does_not_exist() | (LimitStateItem.hold_until_ms < until_ms),
                ),
                (
                    LimitStateItem.tat_ms.set(tat),
                    LimitStateItem.tat_ms.does_not_exist() | (LimitStateItem.tat_ms < tat),
                ),
            )
            for action, condition in writes:
                _written(item, [action], live & condition, limit)

    def state(self, limit: Limit, k: int, consistent: bool = False) -> LimitState | None:
        """The sub-bucket's version and hold (None: the limit is gone); a call reads it right
        before it starts (an eventually consistent read: half a read unit)."""
        found = _found(limit, k, consistent)
        if found is None:
            return None
        hold = int(found.hold_until_ms) if found.hold_until_ms is not None else None
        return LimitState(int(found.version), hold)
