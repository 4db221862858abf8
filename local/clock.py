"""The local runtime's virtual clock (docs/virtual-clock.md, section 2): a ``Clock``
(shared/domain/times.py) whose time moves only when the runtime sets it, and that knows when the
runtime has nothing left to do at the current instant.

``sleep`` blocks the calling thread until the clock reaches its deadline, as a trigger waiting
for a due time would. The runtime marks the work it hands out (a batch, an invocation) with
:meth:`VirtualClock.busy`; a busy thread that sleeps counts as idle while it sleeps, and is
counted busy again *by the clock's move* that wakes it, so that :meth:`VirtualClock.quiescent`
cannot see the moment between its wake and its return to work as "nothing left"."""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class _Waiter:
    deadline_ms: int
    counted: bool
    """The thread was busy when it began to sleep: it is busy again when it wakes."""
    woken: bool = False


@dataclass
class VirtualClock:
    now: int
    """Milliseconds since the epoch."""
    _lock: threading.Condition = field(default_factory=threading.Condition, repr=False)
    _waiters: list[_Waiter] = field(default_factory=list, repr=False)
    _busy: int = 0
    _depth: threading.local = field(default_factory=threading.local, repr=False)

    def now_ms(self) -> int:
        with self._lock:
            return self.now

    def sleep(self, seconds: float) -> None:
        """Block until the clock has moved ``seconds`` on (at once for none)."""
        if seconds <= 0:
            return
        counted = getattr(self._depth, "value", 0) > 0
        with self._lock:
            waiter = _Waiter(self.now + math.ceil(seconds * 1000), counted)
            self._waiters.append(waiter)
            if counted:
                self._busy -= 1
            self._lock.notify_all()
            while not waiter.woken:
                self._lock.wait()

    def next_deadline(self) -> int | None:
        """The earliest instant a sleeping thread waits for (None: none sleeps)."""
        with self._lock:
            return min((w.deadline_ms for w in self._waiters), default=None)

    def resume_at(self, now_ms: int) -> None:
        """Start at ``now_ms`` (where a kept runtime's clock stood), before any thread uses the
        clock: the one time it may be set back."""
        with self._lock:
            if self._waiters or self._busy:
                raise RuntimeError("the clock is in use: it can only be resumed before the runtime starts")
            self.now = now_ms

    def move_to(self, now_ms: int) -> None:
        """Set the time (never back) and wake every thread whose deadline it reached, counting
        those that were busy as busy again before this returns."""
        with self._lock:
            if now_ms < self.now:
                raise ValueError(f"the clock does not go back: {now_ms} is before {self.now}")
            self.now = now_ms
            due = [w for w in self._waiters if w.deadline_ms <= now_ms]
            for waiter in due:
                self._waiters.remove(waiter)
                waiter.woken = True
                if waiter.counted:
                    self._busy += 1
            self._lock.notify_all()

    def hand_over(self) -> None:
        """Count a unit of work busy from now: it is handed to a worker that has not started it
        yet, which carries this count (``busy(carried=True)``). Between the two no thread is in
        it, and quiescence must not be seen there."""
        with self._lock:
            self._busy += 1

    @contextmanager
    def busy(self, carried: bool = False) -> Iterator[None]:
        """A unit of work the runtime handed out: quiescence waits for it to end (or sleep).
        ``carried``: counted already by :meth:`hand_over`."""
        if not carried:
            with self._lock:
                self._busy += 1
        self._depth.value = getattr(self._depth, "value", 0) + 1
        try:
            yield
        finally:
            self._depth.value -= 1
            with self._lock:
                self._busy -= 1
                self._lock.notify_all()

    def until_sleeping(self, count: int, timeout_s: float) -> bool:
        """Wait until ``count`` threads sleep on the clock (False if ``timeout_s`` passed first)."""
        with self._lock:
            return self._lock.wait_for(lambda: len(self._waiters) >= count, timeout=timeout_s)

    def quiescent(self, timeout_s: float) -> bool:
        """Wait until no work is under way but sleeping (False if ``timeout_s`` passed first)."""
        with self._lock:
            return self._lock.wait_for(lambda: self._busy == 0, timeout=timeout_s)
