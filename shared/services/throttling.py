"""Limits per destination in the firing path (docs/receivers.md, section 1): which of a run's
targets are limited, the start their limits book for it, their in-flight slots, and a
receiver's Retry-After held limit-wide. The trigger (shared/services/firing/call.py) decides what to
do with a start: call at once, wait out a short one, or put the occurrence back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shared.domain.limits import Limit, limit_for
from shared.domain.tasks import HttpTarget, Target
from shared.observability import logger
from shared.services.ports.tenants import LimitSource, Throttle

SLOT_MARGIN_MS = 5_000
"""An in-flight slot's lease: the call's timeout and this (a crashed trigger's slot comes back then)."""
LATE_FLOOR_MS = 20
"""A call woken this late after its booked start still goes (see Throttling.tolerance_ms)."""
BOOKING_ROUNDS = 3
"""A booking that finds its limit changed reads the tenant's limits again, at most this often."""


@dataclass(frozen=True)
class Limited:
    """One of a run's targets that a limit holds: the target's index, its limit, the
    sub-bucket the run books in."""

    index: int
    limit: Limit
    k: int
    timeout_ms: int


@dataclass(frozen=True)
class Start:
    """What the limits of a run's targets give it: when it may start and what it booked."""

    start_ms: int
    limited: tuple[Limited, ...]
    booked: tuple[tuple[str, int], ...]


@dataclass
class Throttling:
    throttle: Throttle
    source: LimitSource

    def limited(self, tenant: str, run_id: str, pending: Sequence[tuple[int, Target]]) -> tuple[Limited, ...]:
        """The pending targets a limit of the tenant holds (none: no write, no read)."""
        http = [(i, t) for i, t in pending if isinstance(t, HttpTarget)]
        if not http:
            return ()
        return _match(self.source.limits(tenant), run_id, http)

    def book(self, tenant: str, run_id: str, pending: Sequence[tuple[int, Target]], reference_ms: int) -> Start:
        """Book each limited target's call at or after ``reference_ms``: the run starts at the
        latest of them. A limit changed or deleted since the container read it is read again."""
        http = [(i, t) for i, t in pending if isinstance(t, HttpTarget)]
        limits = self.source.limits(tenant)
        for _ in range(BOOKING_ROUNDS):
            limited = _match(limits, run_id, http)
            starts, stale = [], False
            for item in limited:
                booking = self.throttle.book(item.limit, item.k, reference_ms)
                if booking is None:
                    stale = True
                    break
                starts.append(booking.start_ms)
            if not stale:
                booked = tuple(sorted({(item.limit.name, item.limit.version) for item in limited}))
                return Start(max([reference_ms, *starts]), limited, booked)
            limits = self.source.refresh(tenant)
        logger.warning("limits kept changing while booking; the call goes unthrottled", extra={"run_id": run_id})
        return Start(reference_ms, (), ())

    def recheck(self, limited: Sequence[Limited], booked: Sequence[tuple[str, int]], now_ms: int) -> int | None:
        """Read the run's limits once more right before its call (an eventually consistent read
        each: half a read unit): None when its start stands; else the time to book again from:
        now for a limit changed since the booking, the end of a receiver's hold (Retry-After)
        that came after it. A limit that is gone holds nothing."""
        versions = dict(booked)
        again: int | None = None
        for item in limited:
            state = self.throttle.state(item.limit, item.k)
            if state is None:
                continue
            if versions.get(item.limit.name) != state.version:
                again = max(again or 0, now_ms)
            if (state.hold_until_ms or 0) > now_ms:
                again = max(again or 0, state.hold_until_ms or 0)
        return again

    @staticmethod
    def tolerance_ms(limited: Sequence[Limited]) -> float:
        """How late after its booked start a call may still go: one interval of its strictest
        limit, at least :data:`LATE_FLOOR_MS`. Calls booked GCRA's way and each started within
        an interval of its booking see at most ``per_second + burst`` starts in any second; the
        floor (a trigger cannot wake more precisely) lets a limit above 50 a second see up to 2 %
        more."""
        interval = min((item.limit.rate().interval_ms for item in limited), default=float("inf"))
        return max(interval, LATE_FLOOR_MS)

    def acquire(self, run_id: str, limited: Sequence[Limited], now_ms: int) -> bool:
        """Take an in-flight slot in every limit of the run that caps them, or none (False)."""
        taken: list[Limited] = []
        for item in limited:
            if item.limit.in_flight() is None:
                continue
            lease = now_ms + item.timeout_ms + SLOT_MARGIN_MS
            got = self.throttle.acquire(item.limit, item.k, run_id, now_ms, lease)
            if got is False:
                self.release(run_id, taken)
                return False
            if got:
                taken.append(item)
        return True

    def release(self, run_id: str, limited: Sequence[Limited]) -> None:
        for item in limited:
            try:
                self.throttle.release(item.limit, item.k, run_id)
            except Exception:  # its lease frees it anyway
                logger.warning("an in-flight slot was not given back", extra={"run_id": run_id})

    def hold(self, limited: Sequence[Limited], until_ms: int) -> None:
        """A receiver asked to wait (Retry-After): its whole limit waits until ``until_ms``."""
        for limit in {item.limit for item in limited}:
            self.throttle.hold(limit, until_ms)


def _match(limits: Sequence[Limit], run_id: str, http: Sequence[tuple[int, Target]]) -> tuple[Limited, ...]:
    found = []
    for index, target in http:
        assert isinstance(target, HttpTarget)
        limit = limit_for(target, tuple(limits))
        if limit is not None:
            timeout = round(target.timeout_seconds * 1000)
            found.append(Limited(index, limit, limit.sub_bucket(run_id), timeout))
    return tuple(found)
