"""Waiting for an eventually consistent read: Sundial's task and job lists come from a DynamoDB
global secondary index, whose Queries may not show a write for a moment (local/moto_patches/index_lag.py
models it, and the suites run with it on). A test that lists what it just wrote waits for the list
to show it with :func:`eventually` instead of assuming read-after-write."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TypeVar

T = TypeVar("T")

POLL_S = 0.05
"""The first wait between two looks."""
MAX_POLL_S = 0.3
"""The longest wait between two looks: each wait is half again the one before, up to this. A look
at a local runtime is an HTTP request that costs its runtime and moto about 10 ms of CPU (measured:
168 looks in 10 s, 1.7 CPU-seconds); at a fixed 50 ms a test waiting 20 s spent 3.6 CPU-seconds
looking, beside every other suite on two cores. With the waits growing it is about 0.7, and a
condition that came true is seen at most this late."""


def _waits(first: float) -> Iterator[float]:
    """``first``, then half again each time, up to :data:`MAX_POLL_S` (or ``first``, when larger)."""
    wait, most = first, max(first, MAX_POLL_S)
    while True:
        yield wait
        wait = min(wait * 1.5, most)


def eventually(check: Callable[[], T], timeout: float = 5.0, poll: float = POLL_S) -> T:
    """``check()``'s result once it returns without raising (an ``AssertionError`` or any other
    error), retried after ``poll`` seconds, then after longer waits (:data:`MAX_POLL_S`); after
    ``timeout`` seconds its last error is raised, so a check that never passes still fails the test."""
    deadline = time.monotonic() + timeout
    for wait in _waits(poll):
        try:
            return check()
        except Exception:
            if time.monotonic() >= deadline:
                raise
        time.sleep(min(wait, max(0.0, deadline - time.monotonic())))
    raise AssertionError("unreachable")  # _waits never ends


def until(probe: Callable[[], T], timeout: float = 15.0, poll: float = POLL_S) -> T:
    """``probe()``'s first truthy answer, asked after ``poll`` seconds, then after longer waits
    (:data:`MAX_POLL_S`), for at most ``timeout`` seconds (its last answer after that: the caller's
    assertion then says what it was). For a state read over HTTP, where there is no event to wait on."""
    deadline = time.monotonic() + timeout
    for wait in _waits(poll):
        answer = probe()
        if answer or time.monotonic() >= deadline:
            return answer
        time.sleep(min(wait, max(0.0, deadline - time.monotonic())))
    raise AssertionError("unreachable")  # _waits never ends
