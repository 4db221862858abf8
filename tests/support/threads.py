"""Waiting until threads are blocked: a test that releases a held read once the other callers
wait for it waits for them to be waiting (their stacks say so), not for a guessed while."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable

from tests.support.eventually import eventually


def waiting(thread: threading.Thread) -> bool:
    """Whether ``thread`` is blocked in a wait of :mod:`threading` (an Event's, a Condition's, a
    Semaphore's...): its innermost frame is a ``wait`` of that module."""
    frame = sys._current_frames().get(thread.ident or -1)
    return frame is not None and frame.f_code.co_name == "wait" and frame.f_code.co_filename == threading.__file__


def until_waiting(threads: Iterable[threading.Thread], timeout: float = 5.0) -> None:
    """Returns once every one of ``threads`` is blocked in a wait (:func:`waiting`); fails the
    test, naming those that are not, after ``timeout`` seconds."""
    watched = list(threads)

    def all_waiting() -> None:
        running = [thread.name for thread in watched if not waiting(thread)]
        assert not running, f"not waiting yet: {running}"

    eventually(all_waiting, timeout=timeout, poll=0.005)
