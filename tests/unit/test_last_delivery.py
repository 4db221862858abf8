"""A batch gives an occurrence up on its message's last delivery (shared/services/firing/trigger.py,
``Batch.fire``): before it, whatever failed is raised, so that SQS delivers the message again."""

from __future__ import annotations

from typing import Any

import pytest

from shared.domain.claims import Fired, Result
from shared.domain.firing import Staged
from shared.services.firing import Batch

pytestmark = pytest.mark.unit

STAGED = Staged("01TASK", 1_000, "01RUN", 1, True)


class FailingTrigger:
    """Fails every fire; records what was given up, and under which batch."""

    max_receives = 3

    def __init__(self) -> None:
        self.abandoned: list[tuple[Staged, str, str]] = []

    def fire(self, staged: Staged, log_id: str, turn: Any) -> Fired:
        raise RuntimeError("a bug in delivery")

    def abandon(self, staged: Staged, reason: str, log_id: str) -> Fired:
        self.abandoned.append((staged, reason, log_id))
        return Fired(staged, Result.DEAD_LETTERED, attempts=staged.attempt, reason=reason)


@pytest.mark.parametrize("receives", [1, 2])
def test_a_failure_before_the_last_delivery_is_raised(receives: int) -> None:
    trigger = FailingTrigger()
    batch = Batch(trigger, "log")  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="a bug in delivery"):
        batch.fire(STAGED, "m-1", receives)
    assert trigger.abandoned == []
    assert batch.results == []


@pytest.mark.parametrize("receives", [3, 4])
def test_on_the_last_delivery_the_occurrence_is_given_up_as_a_dead_letter(receives: int) -> None:
    trigger = FailingTrigger()
    batch = Batch(trigger, "log")  # type: ignore[arg-type]
    fired = batch.fire(STAGED, "m-1", receives)
    assert fired.result is Result.DEAD_LETTERED
    [(staged, reason, log_id)] = trigger.abandoned
    assert (staged, log_id) == (STAGED, "log")
    assert reason == f"the trigger failed on it {receives} times: RuntimeError: a bug in delivery"
    assert batch.results == [fired]
