"""A trigger batch claims its occurrences in due order, one at a time
(shared/services/firing/claim.py, ``claim_turns``; ``Batch.take_turns``). No test here waits on
the wall clock: the claims wait on each other's events, and a turn's wait is set per test."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import pytest

from shared.domain.firing import Staged
from shared.services.firing import Batch
from shared.services.firing.claim import ClaimTurn, claim_turns

pytestmark = pytest.mark.unit

LONG_S = 60.0
"""A turn wait no claim of a passing test reaches."""


def _staged(task_id: str, due_ms: int) -> Staged:
    return Staged(task_id, due_ms, f"run-{task_id}", 1, True)


class OrderRecorder:
    """Stands in for the Trigger: 'claims' by recording the order, as Trigger.fire uses its turn.
    A claim of ``held`` does not end before ``release`` is set."""

    max_receives = 3

    def __init__(self, fail: str | None = None, held: str | None = None) -> None:
        self.order: list[str] = []
        self.fail, self.held = fail, held
        self.release = threading.Event()
        self.lock = threading.Lock()

    def fire(self, staged: Any, log_id: str, turn: ClaimTurn | None) -> Any:
        assert turn is not None
        turn.wait()
        try:
            if staged.task_id == self.held:
                assert self.release.wait(LONG_S)
            with self.lock:
                self.order.append(staged.task_id)
                if len(self.order) == 1 and self.held is not None and staged.task_id != self.held:
                    self.release.set()  # the held claim ends after the first other one
            if staged.task_id == self.fail:
                raise RuntimeError("claim failed")
        finally:
            turn.done()
        return staged


def _batch(recorder: OrderRecorder, records: list[tuple[str, Staged]], wait_s: float) -> Batch:
    batch = Batch(recorder, "log")  # type: ignore[arg-type]
    batch.turns = claim_turns([(record_id, staged.due_ms) for record_id, staged in records], wait_s)
    return batch


def _run(batch: Batch, records: list[tuple[str, Any]]) -> None:
    threads = [threading.Thread(target=_fire, args=(batch, staged, record_id)) for record_id, staged in records]
    for thread in threads:  # started in message order, which is not due order
        thread.start()
    for thread in threads:
        thread.join()


def _fire(batch: Batch, staged: Any, record_id: str) -> None:
    with contextlib.suppress(RuntimeError):
        batch.fire(staged, record_id)


def test_claims_go_in_due_order_whatever_order_the_records_came_in() -> None:
    recorder = OrderRecorder()
    dues = {"c": 3_000, "a": 1_000, "d": 4_000, "b": 2_000}
    records = [(f"m-{task}", _staged(task, due)) for task, due in dues.items()]
    batch = _batch(recorder, records, LONG_S)
    _run(batch, records)
    assert recorder.order == ["a", "b", "c", "d"]


def test_take_turns_orders_the_batch_by_due_time() -> None:
    batch = Batch(OrderRecorder(), "log")  # type: ignore[arg-type]
    batch.take_turns([("m-b", _staged("b", 2_000)), ("m-a", _staged("a", 1_000))])
    assert batch.turns["m-a"].previous is None
    assert batch.turns["m-b"].previous is batch.turns["m-a"].claimed


def test_a_failed_claim_still_hands_the_turn_on() -> None:
    recorder = OrderRecorder(fail="a")
    records = [("m-b", _staged("b", 2_000)), ("m-a", _staged("a", 1_000))]
    batch = _batch(recorder, records, LONG_S)
    _fire(batch, records[1][1], "m-a")
    assert batch.turns["m-a"].claimed.is_set()  # b does not wait for it
    _run(batch, records[:1])
    assert recorder.order == ["a", "b"]


def test_a_slow_claim_holds_the_next_one_back_for_at_most_the_turn_wait() -> None:
    recorder = OrderRecorder(held="a")
    records = [("m-a", _staged("a", 1_000)), ("m-b", _staged("b", 2_000))]
    batch = _batch(recorder, records, wait_s=0.01)
    _run(batch, records)
    # b did not wait for a's whole claim (a ends only after b's): it went after the turn wait
    assert recorder.order == ["b", "a"]
