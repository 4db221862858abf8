"""Alerts and self-pausing, the pure rules (shared/domain/alerts.py), the alert's envelope and the
task service's side (own resources refused, a resume starting afresh)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.delivery import AlertEnvelope, Outcome
from shared.domain.alerts import AlertType, Notice, notices, streak_after
from shared.domain.errors import StorageUnavailable, ValidationFailed
from shared.domain.own import OwnResources
from shared.domain.schedules import At, Every
from shared.domain.signing import Signer, secret_text
from shared.domain.states import RunStatus, TaskStatus
from shared.domain.tasks import Alert, HttpTarget, SqsTarget, Task, TaskSpec
from shared.domain.times import to_ms
from shared.services.firing.alerts import AlertSender
from shared.services.tasks import TaskService
from tests.support.fakes import InMemoryTaskRepository

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 24, 7, 0, tzinfo=UTC)
HOOK = HttpTarget("https://example.com/hook")
PAGER = HttpTarget("https://example.com/pager")


def task(schedule=None, **fields) -> Task:
    return Task(
        id="01KAZ0000000000000000000AA",
        tenant="acme",
        name=None,
        schedule=schedule or Every(60),
        targets=(HOOK,),
        multicast=False,
        payload=None,
        retry=TaskSpec(At(NOW), (HOOK,)).retry,
        misfire=TaskSpec(At(NOW), (HOOK,)).effective_misfire(),
        status=TaskStatus.SCHEDULED,
        due_at=NOW,
        next_fire_at=NOW,
        created_at=NOW,
        updated_at=NOW,
        **fields,
    )


@pytest.mark.parametrize("status", [RunStatus.FAILED, RunStatus.DEAD_LETTERED])
def test_a_failed_occurrence_counts_one_more(status):
    assert streak_after(task(consecutive_failures=4), status).failures == 5


def test_a_success_sets_the_count_back_and_writes_nothing_when_it_is_0():
    assert streak_after(task(consecutive_failures=4), RunStatus.SUCCEEDED).failures == 0
    assert streak_after(task(), RunStatus.SUCCEEDED).failures is None


def test_a_skipped_occurrence_leaves_the_count():
    assert streak_after(task(consecutive_failures=4), RunStatus.SKIPPED).failures is None


def test_the_failure_that_reaches_pause_after_failures_pauses_a_recurring_task():
    assert streak_after(task(pause_after_failures=3, consecutive_failures=1), RunStatus.FAILED).paused_reason is None
    reached = streak_after(task(pause_after_failures=3, consecutive_failures=2), RunStatus.FAILED)
    assert reached.failures == 3
    assert reached.paused_reason is not None
    assert "3 failed occurrences in a row" in reached.paused_reason
    lowered = streak_after(task(pause_after_failures=3, consecutive_failures=7), RunStatus.DEAD_LETTERED)
    assert lowered.paused_reason is not None  # a threshold lowered below the count pauses at the next failure


def test_a_one_shot_or_an_extra_run_is_never_paused():
    one_shot = task(At(NOW), pause_after_failures=1)
    assert streak_after(one_shot, RunStatus.FAILED).failures == 1
    assert streak_after(one_shot, RunStatus.FAILED).paused_reason is None  # its only occurrence ends it anyway
    extra = task(At(NOW), pause_after_failures=1, parent_id="01KAZ0000000000000000000BB")
    assert streak_after(extra, RunStatus.FAILED).paused_reason is None


def test_every_dead_letter_alerts_and_the_threshold_alerts_once():
    watched = task(alert=Alert(PAGER, after_consecutive_failures=2))
    at = to_ms(NOW)
    (first,) = notices(watched, "R1", RunStatus.FAILED, "failed after 1 attempt(s): HTTP 400", 1, at)
    assert first.type is AlertType.DEAD_LETTERED
    assert first.target == PAGER
    both = notices(watched, "R2", RunStatus.DEAD_LETTERED, "retries exhausted", 2, at)
    assert [n.type for n in both] == [AlertType.DEAD_LETTERED, AlertType.FAILING]
    assert both[1].reason == "2 occurrences in a row failed; the last: retries exhausted"
    assert [n.type for n in notices(watched, "R3", RunStatus.FAILED, "x", 3, at)] == [AlertType.DEAD_LETTERED]
    assert notices(watched, "R4", RunStatus.SUCCEEDED, "", 0, at) == []
    assert notices(watched, "R5", RunStatus.SKIPPED, "missed", 3, at) == []
    assert notices(task(), "R6", RunStatus.FAILED, "x", 1, at) == []  # no alert: nothing to send


def test_an_extra_runs_alert_names_its_task_and_never_says_failing():
    extra = task(At(NOW), alert=Alert(PAGER, 1), parent_id="01KAZ0000000000000000000BB")
    (notice,) = notices(extra, "R1", RunStatus.FAILED, "x", 1, to_ms(NOW))
    assert notice.task_id == "01KAZ0000000000000000000BB"


def test_the_alert_envelope_sends_the_body_as_it_is():
    notice = Notice(PAGER, AlertType.FAILING, "acme", "T1", "R1", "3 occurrences in a row failed", to_ms(NOW))
    envelope = AlertEnvelope("T1", notice.key, NOW, NOW, 1, tenant="acme", content=notice.body())
    assert json.loads(envelope.body()) == {
        "type": "sundial.task.failing",
        "task_id": "T1",
        "run_id": "R1",
        "reason": "3 occurrences in a row failed",
        "at": "2026-11-24T07:00:00.000Z",
    }
    assert envelope.text() == envelope.body().decode()
    assert envelope.headers() == {
        "Content-Type": "application/json",
        "Idempotency-Key": "sundial.task.failing:R1",
        "Sundial-Task-Id": "T1",
        "Sundial-Alert": "sundial.task.failing",
    }


def service(own: OwnResources | None = None) -> TaskService:
    return TaskService(
        InMemoryTaskRepository(),
        bucket_shards=4,
        retention=timedelta(days=30),
        clock=lambda: NOW,
        own=own or OwnResources(),
    )


def test_an_alert_target_that_is_one_of_sundials_own_resources_is_refused():
    own = OwnResources("Sundial-", "123456789012")
    ours = SqsTarget("https://sqs.us-east-1.amazonaws.com/123456789012/Sundial-PipelineQueuesdelay0")
    spec = TaskSpec(Every(60), (HOOK,), alert=Alert(ours))
    with pytest.raises(ValidationFailed) as refused:
        service(own).register("acme", spec)
    assert [d.field for d in refused.value.details] == ["alert.target.sqs.queue_url"]
    (answer,) = service(own).register_many("acme", [spec])
    assert isinstance(answer, ValidationFailed)


def test_a_resume_clears_the_reason_and_the_count():
    svc = service()
    registered = svc.register("acme", TaskSpec(Every(60), (HOOK,), pause_after_failures=2))
    assert registered.pause_after_failures == 2
    repository = svc.repository
    assert isinstance(repository, InMemoryTaskRepository)
    paused = replace(
        registered, status=TaskStatus.PAUSED, paused_reason="paused after 2 failed occurrences", consecutive_failures=2
    )
    repository._tasks[registered.id] = paused  # as the pipeline's write leaves it
    resumed = svc.resume("acme", registered.id)
    assert resumed.status is TaskStatus.SCHEDULED
    assert resumed.paused_reason is None
    assert resumed.consecutive_failures == 0
    assert resumed.pause_after_failures == 2


# --- sending (AlertSender.send) ---------------------------------------------------------------


class Receiving:
    """A Delivery whose target answers ``answers`` in turn (an exception is raised)."""

    def __init__(self, *answers: Outcome | Exception) -> None:
        self.answers = list(answers)
        self.received: list[tuple[Any, Any]] = []
        self.slept: list[float] = []

    def deliver(self, target: Any, envelope: Any) -> Outcome:
        self.received.append((target, envelope))
        answer = self.answers[min(len(self.received), len(self.answers)) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer


def sending(delivery: Receiving, signer: Any = None) -> AlertSender:
    return AlertSender(delivery, signer=signer, sleep=delivery.slept.append)


NOTICE = Notice(
    HttpTarget("https://example.com/pager", timeout_seconds=60),
    AlertType.DEAD_LETTERED,
    "acme",
    "T1",
    "R1",
    "x",
    to_ms(NOW),
)


def test_an_alert_answered_with_a_retryable_failure_is_tried_once_more_with_the_same_key():
    delivery = Receiving(Outcome.retry("HTTP 503"), Outcome.retry("HTTP 503"))
    sending(delivery).send([NOTICE])
    assert [e.run_id for _, e in delivery.received] == ["sundial.run.dead_lettered:R1"] * 2
    assert [e.attempt for _, e in delivery.received] == [1, 2]
    assert delivery.slept == [0.5]


def test_an_alert_refused_for_good_is_not_tried_again_and_a_broken_delivery_raises_nothing():
    refused = Receiving(Outcome.fail("HTTP 404"))
    sending(refused).send([NOTICE, replace(NOTICE, run_id="R2")])
    assert len(refused.received) == 2  # once each
    broken = Receiving(RuntimeError("boom"))
    sending(broken).send([NOTICE])  # logged, not raised
    assert len(broken.received) == 1


def test_an_http_alert_waits_10_s_at_most_and_is_signed_or_not_sent():
    delivery = Receiving(Outcome.success(200))
    sending(delivery, signer=lambda tenant: Signer.of([secret_text(bytes(32))])).send([NOTICE])
    ((target, envelope),) = delivery.received
    assert target.timeout_seconds == 10
    assert envelope.signer is not None
    assert envelope.tenant == "acme"

    def unreadable(tenant: str) -> Signer:
        raise StorageUnavailable("KMS unavailable")

    unsigned = Receiving(Outcome.success(200))
    sending(unsigned, signer=unreadable).send([NOTICE])
    assert unsigned.received == []


def test_the_document_bounds_both_thresholds_as_the_api_does():
    """The fuzzer found these bounds missing from the document (a misplaced Field in an Annotated)."""
    from shared.api.models.alerts import AlertIn
    from shared.api.models.task_patches import TaskPatchIn
    from shared.api.models.tasks import TaskIn

    bounded = {"type": "integer", "minimum": 1, "maximum": 1000}
    for model, member in [
        (TaskIn, "pause_after_failures"),
        (TaskPatchIn, "pause_after_failures"),
        (AlertIn, "after_consecutive_failures"),
    ]:
        options = model.model_json_schema()["properties"][member]["anyOf"]
        assert bounded in options, (model.__name__, options)
