"""A trigger batch claims its occurrences in due order, one at a time (shared/services/firing.py)."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import pytest

from shared.domain.firing import Staged
from shared.services.firing import CLAIM_TURN_WAIT_S, Batch, ClaimTurn

pytestmark = pytest.mark.unit


def _staged(task_id: str, due_ms: int) -> Staged:
    return Staged(task_id, due_ms, f"run-{task_id}", 1, True)


class OrderRecorder:
    """Stands in for the Trigger: 'claims' by recording the order, as Trigger.fire uses its turn."""

    def __init__(self, claim_s: float = 0.02, fail: str | None = None, slow: str | None = None) -> None:
        self.order: list[str] = []
        self.claim_s = claim_s
        self.slow = slow
        self.fail = fail
        self.lock = threading.Lock()

    def fire(self, staged: Any, log_id: str, turn: ClaimTurn | None) -> Any:
        assert turn is not None
        turn.wait()
        try:
            time.sleep(CLAIM_TURN_WAIT_S + 0.5 if staged.task_id == self.slow else self.claim_s)
            with self.lock:
                self.order.append(staged.task_id)
            if staged.task_id == self.fail:
                raise RuntimeError("claim failed")
        finally:
            turn.done()
        return staged


def _run(batch: Batch, records: list[tuple[str, Any]]) -> None:
    threads = [threading.Thread(target=_fire, args=(batch, staged, record_id)) for record_id, staged in records]
    for thread in threads:
        thread.start()
        time.sleep(0.005)  # started in message order, which is not due order
    for thread in threads:
        thread.join(5)


def _fire(batch: Batch, staged: Any, record_id: str) -> None:
    with contextlib.suppress(RuntimeError):
        batch.fire(staged, record_id)


def test_claims_go_in_due_order_whatever_order_the_records_came_in() -> None:
    recorder = OrderRecorder()
    batch = Batch(recorder, "log")  # type: ignore[arg-type]
    dues = {"c": 3_000, "a": 1_000, "d": 4_000, "b": 2_000}
    records = [(f"m-{task}", _staged(task, due)) for task, due in dues.items()]
    batch.take_turns(records)
    _run(batch, records)
    assert recorder.order == ["a", "b", "c", "d"]


def test_a_failed_claim_still_hands_the_turn_on() -> None:
    recorder = OrderRecorder(fail="a")
    batch = Batch(recorder, "log")  # type: ignore[arg-type]
    records = [("m-b", _staged("b", 2_000)), ("m-a", _staged("a", 1_000))]
    batch.take_turns(records)
    started = time.monotonic()
    _run(batch, records)
    assert recorder.order == ["a", "b"]
    assert time.monotonic() - started < CLAIM_TURN_WAIT_S


def test_a_slow_claim_holds_the_next_one_back_for_at_most_the_turn_wait() -> None:
    recorder = OrderRecorder(slow="a")
    batch = Batch(recorder, "log")  # type: ignore[arg-type]
    records = [("m-a", _staged("a", 1_000)), ("m-b", _staged("b", 2_000))]
    batch.take_turns(records)
    started = time.monotonic()
    _run(batch, records)
    # b did not wait for a's whole claim: it started after the turn wait and finished first
    assert recorder.order == ["b", "a"]
    assert time.monotonic() - started < 2 * CLAIM_TURN_WAIT_S + 0.5
