"""The local event source's batching window behaves as Lambda's MaximumBatchingWindowInSeconds."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from local.sqs_lambda import BatchingWindow

pytestmark = pytest.mark.unit


def _messages(*ids: int) -> list[dict[str, Any]]:
    return [{"MessageId": str(i)} for i in ids]


class Batches:
    def __init__(self) -> None:
        self.seen: list[tuple[float, list[str]]] = []
        self.arrived = threading.Event()

    def __call__(self, batch: list[dict[str, Any]]) -> None:
        self.seen.append((time.monotonic(), [m["MessageId"] for m in batch]))
        self.arrived.set()


def test_a_full_batch_goes_at_once_and_the_rest_waits_for_the_window() -> None:
    batches = Batches()
    window = BatchingWindow(3, 0.3, batches)
    started = time.monotonic()
    window.add(_messages(1, 2))
    assert batches.seen == []
    window.add(_messages(3, 4))
    assert [ids for _, ids in batches.seen] == [["1", "2", "3"]]
    batches.arrived.clear()
    assert batches.arrived.wait(2)
    assert [ids for _, ids in batches.seen] == [["1", "2", "3"], ["4"]]
    assert batches.seen[1][0] - started >= 0.29


def test_the_window_runs_from_the_first_message_of_a_batch() -> None:
    batches = Batches()
    window = BatchingWindow(10, 0.3, batches)
    started = time.monotonic()
    window.add(_messages(1))
    time.sleep(0.2)
    window.add(_messages(2))
    assert batches.arrived.wait(2)
    assert [ids for _, ids in batches.seen] == [["1", "2"]]
    assert 0.29 <= batches.seen[0][0] - started < 0.45


def test_without_a_window_every_receive_is_a_batch() -> None:
    batches = Batches()
    window = BatchingWindow(10, 0, batches)
    window.add(_messages(1, 2))
    window.add(_messages(3))
    assert [ids for _, ids in batches.seen] == [["1", "2"], ["3"]]


def test_flush_hands_over_what_is_pending_once() -> None:
    batches = Batches()
    window = BatchingWindow(10, 5, batches)
    window.add(_messages(1))
    window.flush()
    window.flush()
    assert [ids for _, ids in batches.seen] == [["1"]]
