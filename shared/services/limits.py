"""Limits per destination (docs/receivers.md, section 1): the API's use cases (put, read, list,
delete) and :class:`LimitCache`, the trigger's copy of each tenant's limits."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from shared.domain.errors import TooManyLimits, ValidationFailed
from shared.domain.limits import (
    MAX_BURST,
    MAX_IN_FLIGHT,
    MAX_LIMITS,
    MAX_PER_SECOND,
    MIN_PER_SECOND,
    NAME_PATTERN,
    Limit,
    LimitSpec,
    parse_origin,
)
from shared.domain.tasks import HttpTarget, Target
from shared.services.ports import LimitStore

CACHE_SECONDS = 60
"""A container uses a tenant's limits this long at most: a limit put or deleted applies within it."""
REFRESH_SECONDS = 45
"""A container reads a tenant's limits again once its copy is this old (while its other callers
keep using the copy)."""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def _count(value: object, field_name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValidationFailed.on(field_name, f"is a whole number from {low} to {high}")
    return value


def checked(name: str, spec: LimitSpec) -> LimitSpec:
    """The spec with its origin normalised, or :class:`ValidationFailed` naming the field (the
    API's model checks the same; this keeps the service honest for any other caller)."""
    if not NAME_PATTERN.match(name):
        raise ValidationFailed.on("name", f"does not have the form of a limit's name ({NAME_PATTERN.pattern})")
    rate = spec.per_second
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not math.isfinite(rate):
        raise ValidationFailed.on("per_second", "is a number")
    if not MIN_PER_SECOND <= rate <= MAX_PER_SECOND:
        raise ValidationFailed.on("per_second", f"is from {MIN_PER_SECOND} to {MAX_PER_SECOND}")
    burst = _count(spec.burst, "burst", 1, MAX_BURST)
    in_flight = None if spec.max_in_flight is None else _count(spec.max_in_flight, "max_in_flight", 1, MAX_IN_FLIGHT)
    origin = None
    if spec.origin is not None:
        try:
            origin = parse_origin(spec.origin)
        except ValueError as exc:
            raise ValidationFailed.on("origin", str(exc)) from exc
    return LimitSpec(per_second=rate, burst=burst, max_in_flight=in_flight, origin=origin)


@dataclass
class LimitService:
    store: LimitStore
    clock: Callable[[], int] = now_ms

    def put(self, tenant: str, name: str, spec: LimitSpec) -> Limit:
        """Create or replace the tenant's limit ``name`` (:class:`TooManyLimits` for a new one past
        MAX_LIMITS; two puts racing past it may both pass: the bound is for the trigger's one query,
        not a quota)."""
        spec = checked(name, spec)
        names = {limit.name for limit in self.store.for_tenant(tenant)}
        if name not in names and len(names) >= MAX_LIMITS:
            raise TooManyLimits(f"a tenant has at most {MAX_LIMITS} limits: delete one first")
        return self.store.put(tenant, name, spec, self.clock())

    def get(self, tenant: str, name: str) -> Limit:
        return self.store.get(tenant, name)

    def list(self, tenant: str) -> Sequence[Limit]:
        return self.store.for_tenant(tenant)

    def delete(self, tenant: str, name: str) -> None:
        self.store.delete(tenant, name)


def named_limits(targets: Sequence[Target], multicast: bool, unchanged: Sequence[Target] = ()) -> dict[str, str]:
    """The limits HTTP targets name (``limit``), each with the field of the first target naming
    it; a target equal to the one at its place in ``unchanged`` (a task's before a change) is left
    out."""
    named: dict[str, str] = {}
    for i, target in enumerate(targets):
        if i < len(unchanged) and unchanged[i] == target:
            continue
        if isinstance(target, HttpTarget) and target.limit is not None:
            named.setdefault(target.limit, f"targets[{i}].http.limit" if multicast else "target.http.limit")
    return named


def check_named_limits(named: dict[str, str], limits: Sequence[Limit]) -> None:
    """:class:`ValidationFailed` naming the field of the first limit named that the tenant has not."""
    known = {limit.name for limit in limits}
    for name, where in named.items():
        if name not in known:
            raise ValidationFailed.on(
                where, f"names the limit {name!r}, which this tenant does not have (PUT it first)"
            )


class _Read:
    """One read of a tenant's limits that other callers may wait for."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.done = threading.Event()
        self.limits: tuple[Limit, ...] | None = None
        self.error: BaseException | None = None


@dataclass(frozen=True)
class _Copy:
    read_at: int
    number: int
    """The number of the read that made it (reads are numbered in the order they start)."""
    limits: tuple[Limit, ...]


@dataclass
class LimitCache:
    """A container's copy of each tenant's limits (one query a tenant), as
    :class:`~shared.services.signing.SigningService` keeps signers: a copy is used for
    ``cache_ms`` at most; once it is ``refresh_ms`` old the next caller reads the limits again
    while the others keep using the copy; with no usable copy, a tenant's callers wait for one
    read. A destination without a limit thus costs, per container, one query a tenant a minute."""

    store: LimitStore
    clock: Callable[[], int] = now_ms
    cache_ms: int = CACHE_SECONDS * 1000
    refresh_ms: int = REFRESH_SECONDS * 1000
    _copies: dict[str, _Copy] = field(default_factory=dict, repr=False)
    _reading: dict[str, _Read] = field(default_factory=dict, repr=False)
    _reads: int = field(default=0, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def limits(self, tenant: str) -> tuple[Limit, ...]:
        """The tenant's limits, as read at most ``cache_ms`` ago."""
        return self._limits(tenant, None)

    def refresh(self, tenant: str) -> tuple[Limit, ...]:
        """The tenant's limits as read after this call began (a booking found the limit at
        another version than the copy's, or gone): one read however many callers ask at once;
        a read that was already under way when they asked may predate what they saw, so they
        wait for it and then share a new one."""
        with self._lock:
            after = self._reads
        return self._limits(tenant, after)

    def _limits(self, tenant: str, after: int | None) -> tuple[Limit, ...]:
        """``after`` None: a copy young enough will do; else only what a read numbered above
        ``after`` found."""
        while True:
            now = self.clock()
            with self._lock:
                copy = self._copies.get(tenant)
                reading = self._reading.get(tenant)
                if after is None:
                    usable = copy is not None and now < copy.read_at + self.cache_ms
                    if copy is not None and usable and (now < copy.read_at + self.refresh_ms or reading is not None):
                        return copy.limits  # fresh, or another caller is reading it again
                elif copy is not None and copy.number > after:
                    return copy.limits
                mine = reading is None
                if reading is None:
                    self._reads += 1
                    reading = self._reading[tenant] = _Read(self._reads)
            if mine:
                return self._read(tenant, reading, now)
            reading.done.wait()
            if after is not None and reading.number <= after:
                continue  # under way before the caller asked: read (or join a read) again
            if reading.limits is None:
                raise reading.error or RuntimeError("reading the limits failed")
            return reading.limits

    def _read(self, tenant: str, reading: _Read, now: int) -> tuple[Limit, ...]:
        try:
            reading.limits = tuple(self.store.for_tenant(tenant))
            with self._lock:
                self._copies[tenant] = _Copy(now, reading.number, reading.limits)
            return reading.limits
        except BaseException as exc:
            reading.error = exc
            raise
        finally:
            with self._lock:
                self._reading.pop(tenant, None)
            reading.done.set()
