"""The local event source's batching window behaves as Lambda's MaximumBatchingWindowInSeconds
(on a fake clock: its timers go off when a test says so)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from local import sqs_lambda
from local.sqs_lambda import BatchingWindow

pytestmark = pytest.mark.unit


def _messages(*ids: int) -> list[dict[str, Any]]:
    return [{"MessageId": str(i)} for i in ids]


class Batches:
    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    def __call__(self, batch: list[dict[str, Any]]) -> None:
        self.seen.append([m["MessageId"] for m in batch])


class FakeTimer:
    """``threading.Timer`` on a fake clock: it goes off when the test says its time has come
    (:meth:`expire`), so a test sees when a window was opened and closed without waiting it out
    (how punctually a real timer goes off is ``make bench ARGS=--batching-window``'s figure)."""

    made: list[FakeTimer] = []

    def __init__(self, interval: float, function: Callable[[], object]) -> None:
        self.interval, self.function = interval, function
        self.started = self.cancelled = False
        self.daemon = False
        FakeTimer.made.append(self)

    def start(self) -> None:
        self.started = True

    def cancel(self) -> None:
        self.cancelled = True

    def expire(self) -> None:
        assert self.started, "only a started timer goes off"
        assert not self.cancelled, "a cancelled timer never goes off"
        self.function()

    @classmethod
    def running(cls) -> list[FakeTimer]:
        return [timer for timer in cls.made if timer.started and not timer.cancelled]


@pytest.fixture(autouse=True)
def fake_timers(monkeypatch: pytest.MonkeyPatch) -> None:
    """local.sqs_lambda's ``threading`` with fake timers (only its own: the process's stays)."""
    FakeTimer.made = []
    monkeypatch.setattr(sqs_lambda, "threading", SimpleNamespace(**{**vars(threading), "Timer": FakeTimer}))


def test_a_full_batch_goes_at_once_and_the_rest_waits_for_the_window() -> None:
    batches = Batches()
    window = BatchingWindow(3, 0.3, batches)
    window.add(_messages(1, 2))
    assert batches.seen == []
    window.add(_messages(3, 4))
    assert batches.seen == [["1", "2", "3"]]  # full: at once, its window closed
    (waiting,) = FakeTimer.running()  # a window of its own for the rest
    assert waiting.interval == 0.3
    assert waiting is not FakeTimer.made[0]
    waiting.expire()
    assert batches.seen == [["1", "2", "3"], ["4"]]
    assert FakeTimer.running() == []


def test_the_window_runs_from_the_first_message_of_a_batch() -> None:
    batches = Batches()
    window = BatchingWindow(10, 0.3, batches)
    window.add(_messages(1))
    (opened,) = FakeTimer.running()
    window.add(_messages(2))
    assert FakeTimer.made == [opened]  # the second message joins the window the first one opened
    assert batches.seen == []
    opened.expire()
    assert batches.seen == [["1", "2"]]


def test_without_a_window_every_receive_is_a_batch() -> None:
    batches = Batches()
    window = BatchingWindow(10, 0, batches)
    window.add(_messages(1, 2))
    window.add(_messages(3))
    assert batches.seen == [["1", "2"], ["3"]]


def test_flush_hands_over_what_is_pending_once() -> None:
    batches = Batches()
    window = BatchingWindow(10, 5, batches)
    window.add(_messages(1))
    window.flush()
    window.flush()
    assert batches.seen == [["1"]]
