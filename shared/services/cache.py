"""What a container keeps per tenant and reads again now and then: its signing secrets
(shared/services/signing.py) and its limits per destination (shared/services/limits.py).

One read at a time per tenant: a copy is used for ``cache_ms`` at most; once it is ``refresh_ms``
old, the next caller reads again while every other caller keeps using the copy; with no usable
copy, a tenant's callers wait for one read. Without this, every call of a tenant in flight when
its copy expired read it itself, and all of them waited for theirs."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from shared.domain.times import now_ms

T = TypeVar("T")


class _Read(Generic[T]):
    """One read of a tenant's value that other callers may wait for."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.done = threading.Event()
        self.value: T | None = None
        self.error: BaseException | None = None


@dataclass(frozen=True)
class _Copy(Generic[T]):
    read_at: int
    number: int
    """The number of the read that made it (reads are numbered in the order they start)."""
    value: T


@dataclass
class TenantCopies(Generic[T]):
    """Each tenant's copy of what ``load(tenant, now_ms)`` reads."""

    load: Callable[[str, int], T]
    clock: Callable[[], int] = now_ms
    cache_ms: int = 60_000
    refresh_ms: int = 45_000
    _copies: dict[str, _Copy[T]] = field(default_factory=dict, repr=False)
    _reading: dict[str, _Read[T]] = field(default_factory=dict, repr=False)
    _reads: int = field(default=0, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def get(self, tenant: str) -> T:
        """The tenant's value, as read at most ``cache_ms`` ago."""
        return self._get(tenant, None)

    def fresh(self, tenant: str) -> T:
        """The tenant's value as read after this call began: one read however many callers ask
        at once; a read already under way when they asked may predate what they saw, so they
        wait for it and then share a new one."""
        with self._lock:
            after = self._reads
        return self._get(tenant, after)

    def forget(self, tenant: str) -> None:
        """Drop the tenant's copy (it changed here): the next caller reads it."""
        with self._lock:
            self._copies.pop(tenant, None)

    def _get(self, tenant: str, after: int | None) -> T:
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
                        return copy.value  # fresh, or another caller is reading it again
                elif copy is not None and copy.number > after:
                    return copy.value
                mine = reading is None
                if reading is None:
                    self._reads += 1
                    reading = self._reading[tenant] = _Read(self._reads)
            if mine:
                return self._read(tenant, reading, now)
            reading.done.wait()
            if after is not None and reading.number <= after:
                continue  # under way before the caller asked: read (or join a read) again
            if reading.value is None:
                raise reading.error or RuntimeError(f"reading what tenant {tenant} has failed")
            return reading.value

    def _read(self, tenant: str, reading: _Read[T], now: int) -> T:
        try:
            reading.value = self.load(tenant, now)
            with self._lock:
                self._copies[tenant] = _Copy(now, reading.number, reading.value)
            return reading.value
        except BaseException as exc:
            reading.error = exc
            raise
        finally:
            with self._lock:
                self._reading.pop(tenant, None)
            reading.done.set()
