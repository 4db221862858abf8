"""A batch gives an occurrence up on its message's last delivery (shared/services/firing/trigger.py,
``Batch.fire``): before it, whatever failed is raised, so that SQS delivers the message again."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

from shared.domain.claims import Handled, Result
from shared.domain.firing import Staged
from shared.messages import staged_message
from shared.services.firing import Batch
from shared.topology import DELAY_MAX_RECEIVES

pytestmark = pytest.mark.unit

STAGED = Staged("01TASK", 1_000, "01RUN", 1, True)


class FailingTrigger:
    """Fails every fire; records what was given up, and under which batch."""

    max_receives = 3

    def __init__(self) -> None:
        self.abandoned: list[tuple[Staged, str, str]] = []

    def fire(self, staged: Staged, log_id: str, turn: Any) -> Handled:
        raise RuntimeError("a bug in delivery")

    def abandon(self, staged: Staged, reason: str, log_id: str) -> Handled:
        self.abandoned.append((staged, reason, log_id))
        return Handled(staged, Result.DEAD_LETTERED, attempts=staged.attempt, reason=reason)


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


class Unrecorded:
    """The recorder and alert sender a batch closes with: nothing to record or send here."""

    def log_successes(self, log_id: str, results: list[Handled]) -> None:
        pass

    def send(self, alerts: list[Any]) -> None:
        pass


class FailingTriggerWithBatches(FailingTrigger):
    max_receives = DELAY_MAX_RECEIVES
    recorder = alerts = Unrecorded()

    def new_batch(self) -> Batch:
        return Batch(self, "log")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "receives",
    [pytest.param(1, id="count restarted at 1"), pytest.param(DELAY_MAX_RECEIVES + 1, id="count continued")],
)
def test_the_recovering_trigger_gives_up_what_it_fails_on_whatever_the_receive_count(
    monkeypatch: pytest.MonkeyPatch, receives: int
) -> None:
    """A stranded message's count may start again at 1 or continue from the delay queue's
    (shared/topology.py, ``STRANDED``, says which the code assumes): either way its delivery is its
    last, and the occurrence the trigger fails on is given up as a dead letter, not handed back to
    SQS; the delay queues' trigger hands back the same record on its first delivery."""
    from functions.recover.handler import fire_last_deliveries
    from functions.trigger import handler as trigger_handler
    from tests.support.events import FakeLambdaContext
    from tests.support.recordings import recording, with_values

    trigger = FailingTriggerWithBatches()
    monkeypatch.setattr(trigger_handler, "trigger", lambda: trigger)
    times = {"sent-timestamp": "1795751187682", "<approximate-first-receive-timestamp>": "1795751188499"}
    event = with_values(recording("sqs-event"), times)  # as AWS records it, with a staged occurrence
    event["Records"][0]["body"] = json.dumps(staged_message(STAGED))
    event["Records"][0]["attributes"]["ApproximateReceiveCount"] = str(receives)
    assert fire_last_deliveries(event, FakeLambdaContext()) == {"batchItemFailures": []}
    [(staged, reason, _)] = trigger.abandoned
    assert staged == STAGED
    assert reason.startswith(f"the trigger failed on it {DELAY_MAX_RECEIVES} times")
    if receives < DELAY_MAX_RECEIVES:
        with pytest.raises(BatchProcessingError):  # the delay queues' trigger: the record, alone, failed
            trigger_handler.fire_records(event, FakeLambdaContext(), last_delivery=False)
