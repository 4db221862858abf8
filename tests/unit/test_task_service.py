"""Registration and cancellation rules, on the in-memory repository (no AWS)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from shared.domain.errors import ConcurrentUpdate, InvalidTransition, TaskNotFound, ValidationFailed
from shared.domain.ids import parse_task_id
from shared.domain.registration import new_task
from shared.domain.retry import RetryPolicy
from shared.domain.schedules import After, At, Cron, Every
from shared.domain.states import TaskStatus
from shared.domain.tasks import HttpTarget, Misfire, TaskSpec
from shared.domain.times import to_ms
from shared.services.tasks import TaskService
from tests.support.fakes import InMemoryTaskRepository

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 22, 10, 0, 0, 250_000, tzinfo=UTC)
HOOK = (HttpTarget("https://example.com/hook"),)


def service(shards: int = 8) -> TaskService:
    return TaskService(InMemoryTaskRepository(), bucket_shards=shards, retention=timedelta(days=30), clock=lambda: NOW)


def spec(schedule, **fields) -> TaskSpec:
    return TaskSpec(schedule=schedule, targets=HOOK, **fields)


def test_the_id_names_the_first_due_time_and_a_shard():
    svc = service(shards=8)
    due = NOW + timedelta(hours=3, milliseconds=17)
    tasks = [svc.register("default", spec(At(due))) for _ in range(200)]
    homes = [parse_task_id(task.id) for task in tasks]
    assert {home.due_ms for home in homes} == {to_ms(due)}
    assert {home.shard for home in homes} == set(range(8))  # 200 draws cover 8 shards
    assert len({task.id for task in tasks}) == 200


def test_after_seconds_counts_from_registration():
    task = service().register("default", spec(After(90.5)))
    assert task.next_fire_at == NOW + timedelta(seconds=90, milliseconds=500)
    assert task.schedule == After(90.5, NOW)


def test_every_without_start_fires_one_period_after_registration():
    task = service().register("default", spec(Every(60)))
    assert task.next_fire_at == NOW + timedelta(seconds=60)
    assert task.misfire is Misfire.SKIP


def test_a_past_at_fires_now_unless_misfire_is_skip_or_it_is_too_old():
    svc = service()
    assert svc.register("default", spec(At(NOW - timedelta(hours=1)))).next_fire_at == NOW
    with pytest.raises(ValidationFailed) as skipped:
        svc.register("default", spec(At(NOW - timedelta(hours=1)), misfire=Misfire.SKIP))
    assert skipped.value.details[0].field == "schedule.at"
    with pytest.raises(ValidationFailed) as old:
        svc.register("default", spec(At(NOW - timedelta(days=2))))
    assert old.value.details[0].field == "schedule.at"


def test_a_schedule_that_never_fires_or_fires_too_late_is_refused():
    svc = service()
    with pytest.raises(ValidationFailed) as ended:
        svc.register("default", spec(Cron("* * * * *", end=NOW - timedelta(minutes=1))))
    assert ended.value.details[0].field == "schedule.cron"
    with pytest.raises(ValidationFailed) as far:
        svc.register("default", spec(Every(60, start=NOW + timedelta(days=400))))
    assert far.value.details[0].field == "schedule.every_seconds"


def test_cancel_is_idempotent_and_sets_the_expiry():
    svc = service()
    task = svc.register("default", spec(At(NOW + timedelta(minutes=5)), retry=RetryPolicy(max_attempts=1)))
    cancelled = svc.cancel("default", task.id)
    assert cancelled.status is TaskStatus.CANCELLED
    assert cancelled.next_fire_at is None
    assert cancelled.expires_at == NOW + timedelta(days=30)
    assert svc.cancel("default", task.id).version == cancelled.version


def test_a_completed_task_cannot_be_cancelled():
    svc = service()
    task = svc.register("default", spec(At(NOW + timedelta(minutes=5))))
    svc.repository.update(replace(task, status=TaskStatus.COMPLETED))
    with pytest.raises(InvalidTransition):
        svc.cancel("default", task.id)


def test_tenants_never_see_each_others_tasks():
    svc = service()
    task = svc.register("a", spec(At(NOW + timedelta(minutes=5))))
    with pytest.raises(TaskNotFound):
        svc.get("b", task.id)
    with pytest.raises(TaskNotFound):
        svc.cancel("b", task.id)
    assert svc.list("b", status=None, limit=10, cursor=None).items == []


def test_a_stale_update_is_refused():
    svc = service()
    task = svc.register("default", spec(At(NOW + timedelta(minutes=5))))
    svc.repository.update(replace(task, name="first"))
    with pytest.raises(ConcurrentUpdate):
        svc.repository.update(replace(task, name="second"))


def test_state_changes_are_re_applied_when_the_pipeline_wrote_the_task_meanwhile():
    svc = service()
    task = svc.register("default", spec(Every(60)))
    real_update = svc.repository.update
    raced = []

    def update_after_a_claim(changed, **kwargs):
        if not raced:  # the trigger wrote the item between our read and our write
            raced.append(real_update(replace(svc.repository.get("default", task.id), name="claimed")))
        return real_update(changed, **kwargs)

    svc.repository.update = update_after_a_claim
    cancelled = svc.cancel("default", task.id)
    assert raced
    assert cancelled.status is TaskStatus.CANCELLED
    assert cancelled.name == "claimed"  # re-read, not overwritten


# --- management: update, run now, batches, redrive ---------------------------------------------


class RecordingStager:
    def __init__(self) -> None:
        self.staged: list[object] = []

    def stage(self, occurrences, now_ms: int) -> None:
        self.staged.extend(occurrences)


class Letters:
    def __init__(self, *letters) -> None:
        self.letters = {letter.id: letter for letter in letters}

    def get(self, tenant, letter_id):
        return self.letters[letter_id]

    def list(self, tenant, *, limit, cursor, status=None):
        from shared.domain.tasks import Page

        return Page([d for d in self.letters.values() if status is None or d.status == status][:limit])


def test_an_update_with_a_schedule_re_arms_and_stages_what_is_due_soon():
    from shared.domain.patches import TaskPatch

    stager = RecordingStager()
    svc = replace(service(), stager=stager)
    task = svc.register("default", spec(Cron("0 0 1 1 *")))
    moved = svc.update("default", task.id, TaskPatch(schedule=After(30), payload={"a": 1}))
    assert moved.next_fire_at == NOW + timedelta(seconds=30)
    assert moved.due_at == moved.next_fire_at
    assert moved.schedule == After(30, NOW)
    assert moved.version == task.version + 1
    assert [s.due_ms for s in stager.staged] == [to_ms(NOW + timedelta(seconds=30))]


def test_an_update_without_a_schedule_keeps_the_armed_occurrence():
    from shared.domain.patches import TaskPatch

    svc = service()
    task = svc.register("default", spec(Cron("0 0 1 1 *")))
    kept = svc.update("default", task.id, TaskPatch(name="renamed"))
    assert kept.name == "renamed"
    assert kept.due_at == task.due_at
    assert kept.schedule == task.schedule


def test_a_cancelled_task_cannot_be_updated_and_if_match_guards_the_version():
    from shared.domain.errors import VersionMismatch
    from shared.domain.patches import TaskPatch

    svc = service()
    task = svc.register("default", spec(Cron("0 0 1 1 *")))
    same = TaskPatch()
    with pytest.raises(VersionMismatch):
        svc.update("default", task.id, same, if_version=task.version + 7)
    svc.cancel("default", task.id)
    with pytest.raises(InvalidTransition):
        svc.update("default", task.id, same)


def test_run_now_is_an_unlisted_one_shot_run_of_the_task_staged_at_once():
    stager = RecordingStager()
    svc = replace(service(), stager=stager)
    task = svc.register("default", spec(Cron("0 0 1 1 *"), payload={"p": 1}))
    run_id = svc.run_now("default", task.id)
    (staged,) = stager.staged
    assert staged.run_id == run_id
    assert staged.due_ms == to_ms(NOW)
    assert staged.one_shot
    assert [t.id for t in svc.list("default", status=None, limit=10, cursor=None).items] == [task.id]
    with pytest.raises(TaskNotFound):
        svc.get("default", staged.task_id)  # the run is not a task of its own
    svc.pause("default", task.id)
    with pytest.raises(InvalidTransition):
        svc.run_now("default", task.id)


def test_a_batch_answers_each_spec_on_its_own():
    svc = service()
    refused = ValidationFailed.on("schedule.cron", "bad")
    answers = svc.register_many(
        "default", [spec(After(5)), refused, spec(At(NOW - timedelta(days=3))), spec(Every(60))]
    )
    assert [type(a).__name__ for a in answers] == ["Task", "ValidationFailed", "ValidationFailed", "Task"]
    assert answers[1] is refused
    assert answers[2].details[0].field == "schedule.at"
    assert {t.id for t in svc.list("default", status=None, limit=10, cursor=None).items} == {
        answers[0].id,
        answers[3].id,
    }


def test_a_dead_letter_is_redriven_once_as_a_new_run():
    """A redrive does not send the dead run back through staging: it makes a run of its own (the
    letter keeps its dead-lettered run), once."""
    from shared.domain.tasks import DeadLetter

    letter = DeadLetter(
        "01KA0000000000000000000000", "default", "01KA0000000000000000000001", "01KA0000000000000000000000",
        NOW, NOW, 3, "retries exhausted", HOOK, False, {"a": 1}, RetryPolicy(),
    )  # fmt: skip
    svc = replace(service(), dead_letters_store=Letters(letter))
    (done,) = svc.redrive("default", [letter.id]).runs
    assert done[0] is letter
    assert done[1] != letter.run_id
    assert svc.redrive("default", None).runs == []  # the fake's transaction refuses a second redrive


def test_a_task_is_its_spec_and_what_sundial_keeps_a_field_declared_once() -> None:
    """Task extends TaskSpec: every field a client sets is a task's field of the same name, and a
    task's spec (what an update merges into, what an extra run fires) round-trips."""
    from dataclasses import fields

    from shared.domain.tasks import SPEC_FIELDS, Task, TaskSpec

    assert set(SPEC_FIELDS) == {f.name for f in fields(TaskSpec)}
    assert set(SPEC_FIELDS) <= {f.name for f in fields(Task)}
    spec = TaskSpec(
        Every(60),
        (HttpTarget("https://example.com/a"), HttpTarget("https://example.com/b")),
        multicast=True,
        name="n",
        payload={"k": 1},
        pause_after_failures=3,
        on_success=("01KAZ0000000000000000000AA",),
    )
    task = new_task(spec, tenant="acme", now=NOW, shard=0)
    assert task.spec == replace(spec, schedule=task.schedule, misfire=spec.effective_misfire())
    renamed = task.with_spec(replace(task.spec, name="m"))
    assert (renamed.name, renamed.id, renamed.spec) == ("m", task.id, replace(task.spec, name="m"))
