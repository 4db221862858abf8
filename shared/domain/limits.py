"""Limits per destination (docs/receivers.md, section 1): how fast, and how many at once, a
tenant's calls may go to one receiver. Pure: no I/O.

A limit is matched to an HTTP target by name (the target's ``limit`` field) or by the origin of
its URL (scheme, host and port, the default port implied). Its rate is GCRA booked ahead
(shared/domain/rate.py has the arithmetic of admitting): a call due at ``due`` starts at
``max(due, TAT - (burst - 1) * interval)`` and moves the TAT one interval on, so every call gets
the earliest start the limit allows in one write, whether it fires at once or is held back.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

from shared.domain.rate import Rate
from shared.domain.tasks import HttpTarget

MAX_LIMITS = 100
"""Limits a tenant may have: the trigger reads them all with one query and keeps them."""
MAX_PER_SECOND = 10_000
MIN_PER_SECOND = 0.0001
"""One call every 10,000 s (2 h 47 min): slower is no limit a receiver needs, and a GCRA interval
beyond it would take the state's times past what DynamoDB numbers hold for tiny rates."""
MAX_BURST = 10_000
MAX_IN_FLIGHT = 10_000
SUB_BUCKET_RATE = 500
"""A limit's state item takes at most this many bookings a second (half of what DynamoDB writes
to one partition); a faster limit is split into sub-buckets (:attr:`Limit.sub_buckets`)."""
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(url: str) -> str | None:
    """``scheme://host[:port]`` of a URL, lower case, the scheme's default port left out;
    ``None`` for what is not an http(s) URL with a host."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if scheme not in DEFAULT_PORTS or not host:
        return None
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}" if port in (None, DEFAULT_PORTS[scheme]) else f"{scheme}://{host}:{port}"


def parse_origin(text: str) -> str:
    """A limit's ``origin`` as given by a client, normalised (:func:`origin_of`); ValueError when it
    is not a bare origin (a path, a query, credentials or a fragment are refused)."""
    parts = urlsplit(text.strip())
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError("an origin is scheme://host[:port], with no path, query or credentials")
    origin = origin_of(text)
    if origin is None:
        raise ValueError("an origin is http:// or https:// followed by a host")
    return origin


@dataclass(frozen=True)
class LimitSpec:
    """What a client puts: ``PUT /v1/limits/{name}``."""

    per_second: float
    burst: int = 1
    max_in_flight: int | None = None
    origin: str | None = None


@dataclass(frozen=True)
class Limit:
    tenant: str
    name: str
    per_second: float
    burst: int = 1
    max_in_flight: int | None = None
    origin: str | None = None
    version: int = 1
    """Bumped by every PUT: a booking made under another version is made again."""
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @property
    def sub_buckets(self) -> int:
        """How many state items share the limit (each takes an equal part, and a run's calls go
        to the one its run id hashes to): one up to :data:`SUB_BUCKET_RATE` a second."""
        return max(1, math.ceil(self.per_second / SUB_BUCKET_RATE))

    def rate(self) -> Rate:
        """The rate of one sub-bucket: its share of ``per_second`` and of ``burst`` (at least one)."""
        k = self.sub_buckets
        return Rate(self.per_second / k, max(1, self.burst // k))

    def in_flight(self) -> int | None:
        """The calls one sub-bucket may have outstanding (at least one), or None: no cap."""
        if self.max_in_flight is None:
            return None
        return max(1, self.max_in_flight // self.sub_buckets)

    def sub_bucket(self, run_id: str) -> int:
        """The sub-bucket a run's calls book in (the same for every attempt of the run)."""
        k = self.sub_buckets
        return 0 if k == 1 else int.from_bytes(hashlib.blake2b(run_id.encode(), digest_size=4).digest(), "big") % k


def limit_for(target: HttpTarget, limits: list[Limit] | tuple[Limit, ...]) -> Limit | None:
    """The limit an HTTP target is held to: the one it names, else the one of its URL's origin."""
    if target.limit is not None:
        return next((lim for lim in limits if lim.name == target.limit), None)
    origin = origin_of(target.url)
    if origin is None:
        return None
    return next((lim for lim in limits if lim.origin == origin), None)


@dataclass(frozen=True)
class Booking:
    start_ms: int
    """The earliest start the limit gives a call (never before its reference)."""


@dataclass(frozen=True)
class LimitState:
    """What a held occurrence reads of a limit's sub-bucket when it comes back."""

    version: int
    hold_until_ms: int | None


def booked_start(new_tat_ms: float, reference_ms: float, rate: Rate) -> float:
    """When a booking starts, from the TAT the booking left (``new_tat_ms``): the TAT before it
    was one interval less, and a call may start ``burst - 1`` intervals before that; never
    before ``reference_ms`` (the call's due time, or now when it is later)."""
    return max(reference_ms, new_tat_ms - rate.burst * rate.interval_ms)
