"""A change to a task, merged into the task as it is stored (shared/domain/patches.py): what it
leaves out is kept, ``None`` clears, and a secret sent back as ``[redacted]`` keeps its value."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared.domain.errors import ValidationFailed
from shared.domain.patches import TaskPatch, patched
from shared.domain.registration import new_task
from shared.domain.retry import RetryPolicy
from shared.domain.schedules import EVENTBRIDGE, After, Cron, Flexible
from shared.domain.secrets import REDACTED
from shared.domain.tasks import (
    Alert,
    EventBridgeSchedule,
    HttpTarget,
    Misfire,
    Priority,
    SqsTarget,
    Task,
    TaskSpec,
)

pytestmark = pytest.mark.unit

NOW = datetime(2030, 1, 1, tzinfo=UTC)
SIGNED = HttpTarget("https://a.example.com/hook", headers={"Authorization": "Bearer s3cret"})
OTHER = HttpTarget("https://b.example.com/hook", headers={"X-Api-Key": "k-b"})
QUEUE = SqsTarget("https://sqs.us-east-1.amazonaws.com/123456789012/q")


def task(**fields) -> Task:
    spec = TaskSpec(
        schedule=Cron("0 0 1 1 *"),
        targets=(SIGNED, OTHER),
        multicast=True,
        name="nightly",
        payload={"n": 1},
        retry=RetryPolicy(max_attempts=5),
        misfire=Misfire.FIRE_NOW,
        priority=Priority.HIGH,
        alert=Alert(SIGNED, 3),
        pause_after_failures=4,
        on_success=("A",),
        on_failure=("B",),
    )
    for name, value in fields.items():
        spec = TaskSpec(**{**vars(spec), name: value})
    return new_task(spec, tenant="acme", now=NOW, shard=0)


def test_nothing_given_keeps_the_task_as_it_is():
    stored = task()
    spec = patched(stored, TaskPatch())
    assert spec == TaskSpec(
        stored.schedule,
        stored.targets,
        stored.multicast,
        stored.name,
        stored.payload,
        stored.retry,
        stored.misfire,
        stored.priority,
        stored.alert,
        stored.pause_after_failures,
        stored.on_success,
        stored.on_failure,
    )
    assert not TaskPatch().reschedules


def test_none_clears_what_it_can_and_the_rest_is_kept():
    stored = task()
    spec = patched(stored, TaskPatch(name=None, payload=None, alert=None, pause_after_failures=None, on_success=()))
    assert (spec.name, spec.payload, spec.alert, spec.pause_after_failures, spec.on_success) == (
        None,
        None,
        None,
        None,
        (),
    )
    assert spec.on_failure == ("B",)
    assert spec.retry == RetryPolicy(max_attempts=5)
    assert (spec.misfire, spec.priority) == (Misfire.FIRE_NOW, Priority.HIGH)


def test_a_schedule_given_re_arms_even_the_same_one():
    stored = task()
    patch = TaskPatch(schedule=stored.schedule)
    assert patch.reschedules
    assert patched(stored, TaskPatch(schedule=After(30))).schedule == After(30)


def test_one_target_replaces_a_multicast_and_targets_replace_one():
    single = patched(task(), TaskPatch(targets=(QUEUE,)))
    assert (single.targets, single.multicast) == ((QUEUE,), False)
    many = patched(task(targets=(QUEUE,), multicast=False), TaskPatch(targets=(QUEUE, OTHER), multicast=True))
    assert (many.targets, many.multicast) == ((QUEUE, OTHER), True)


def test_a_secret_sent_back_keeps_the_value_the_same_target_stores_in_any_order():
    sent = (
        HttpTarget(OTHER.url, headers={"X-Api-Key": REDACTED}),
        HttpTarget(SIGNED.url, headers={"Authorization": REDACTED}),
    )
    spec = patched(task(), TaskPatch(targets=sent, multicast=True))
    assert spec.targets == (OTHER, SIGNED)


def test_a_secret_sent_back_for_a_target_that_holds_none_is_refused_naming_it():
    sent = (QUEUE, HttpTarget("https://c.example.com/", headers={"Authorization": REDACTED}))
    with pytest.raises(ValidationFailed) as refused:
        patched(task(), TaskPatch(targets=sent, multicast=True))
    assert refused.value.details[0].field == "targets[1].http.headers.Authorization"
    with pytest.raises(ValidationFailed) as single:
        patched(task(), TaskPatch(targets=sent[1:]))
    assert single.value.details[0].field == "target.http.headers.Authorization"


def test_the_alert_keeps_the_secret_of_the_alert_it_replaces():
    sent = Alert(HttpTarget(SIGNED.url, headers={"Authorization": REDACTED}), None)
    assert patched(task(), TaskPatch(alert=sent)).alert == Alert(SIGNED, None)
    with pytest.raises(ValidationFailed) as refused:
        patched(task(alert=None), TaskPatch(alert=sent))
    assert refused.value.details[0].field == "alert.target.http.headers.Authorization"


def test_a_native_schedule_change_keeps_an_eventbridge_schedule_s_flexible_window():
    made = EventBridgeSchedule("arn:aws:scheduler:us-east-1:123456789012:schedule/default/n")
    flexible = Flexible(Cron("0 9 ? * MON *", "UTC", None, None, EVENTBRIDGE), 900, made.arn)
    stored = task(schedule=flexible, eventbridge=made)
    native = patched(stored, TaskPatch(schedule=Cron("0 10 * * 1")))
    assert native.schedule == Flexible(Cron("0 10 * * 1"), 900, made.arn)  # the window stays
    # the EventBridge Scheduler API's own change says whether it stays: here it goes (Mode OFF)
    off = patched(stored, TaskPatch(schedule=Cron("0 10 ? * MON *", dialect=EVENTBRIDGE), eventbridge=made))
    assert off.schedule == Cron("0 10 ? * MON *", dialect=EVENTBRIDGE)
