"""Limits per destination (docs/receivers.md, section 1): the API's use cases (put, read, list,
delete) and :class:`LimitCache`, the trigger's copy of each tenant's limits."""

from __future__ import annotations

import math
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
from shared.domain.times import now_ms
from shared.services.cache import TenantCopies
from shared.services.ports.tenants import LimitStore

CACHE_SECONDS = 60
"""A container uses a tenant's limits this long at most: a limit put or deleted applies within it."""
REFRESH_SECONDS = 45
"""A container reads a tenant's limits again once its copy is this old (while its other callers
keep using the copy)."""


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


@dataclass
class LimitCache:
    """A container's copy of each tenant's limits (one query a tenant), kept as the signers are
    (shared/services/cache.py): a destination without a limit costs, per container, one query a
    tenant a minute."""

    store: LimitStore
    clock: Callable[[], int] = now_ms
    cache_ms: int = CACHE_SECONDS * 1000
    refresh_ms: int = REFRESH_SECONDS * 1000
    _copies: TenantCopies[tuple[Limit, ...]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._copies = TenantCopies(
            lambda tenant, _: tuple(self.store.for_tenant(tenant)), self.clock, self.cache_ms, self.refresh_ms
        )

    def limits(self, tenant: str) -> tuple[Limit, ...]:
        """The tenant's limits, as read at most ``cache_ms`` ago."""
        return self._copies.get(tenant)

    def refresh(self, tenant: str) -> tuple[Limit, ...]:
        """The tenant's limits as read after this call began (a booking found a limit at another
        version than the copy's, or gone)."""
        return self._copies.fresh(tenant)
