"""Waiting for an eventually consistent read: Sundial's task and job lists come from a DynamoDB
global secondary index, whose Queries may not show a write for a moment (local/moto_patches/index_lag.py
models it, and the suites run with it on). A test that lists what it just wrote waits for the list
to show it with :func:`eventually` instead of assuming read-after-write."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

POLL_S = 0.05


def eventually(check: Callable[[], T], timeout: float = 5.0, poll: float = POLL_S) -> T:
    """``check()``'s result once it returns without raising (an ``AssertionError`` or any other
    error), retried every ``poll`` seconds; after ``timeout`` seconds its last error is raised, so
    a check that never passes still fails the test."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except Exception:
            if time.monotonic() >= deadline:
                raise
        time.sleep(poll)


def until(probe: Callable[[], T], timeout: float = 15.0, poll: float = POLL_S) -> T:
    """``probe()``'s first truthy answer, asked every ``poll`` seconds for at most ``timeout``
    seconds (its last answer after that: the caller's assertion then says what it was). For a
    state read over HTTP, where there is no event to wait on."""
    deadline = time.monotonic() + timeout
    while True:
        answer = probe()
        if answer or time.monotonic() >= deadline:
            return answer
        time.sleep(poll)
