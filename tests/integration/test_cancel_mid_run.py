"""A task cancelled while one of its runs is firing stays cancelled when that run ends: the run's
outcome is kept (its status, attempts, error), the task is neither completed nor re-armed."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from shared.domain.firing import staged_for
from shared.domain.registration import new_task
from shared.domain.schedules import At, Every
from shared.domain.states import RunStatus, TaskStatus
from shared.domain.tasks import HttpTarget, Run, TaskSpec
from shared.domain.times import to_ms, truncate_ms
from shared.store.dynamo import DynamoTaskRepository
from shared.store.pipeline import DynamoPipelineStore

pytestmark = pytest.mark.integration

TARGET = (HttpTarget("https://example.com"),)


def claimed(schedule, *, one_shot: bool):
    repository, store = DynamoTaskRepository(list_shards=1), DynamoPipelineStore(retention_ms=60_000)
    now = truncate_ms(datetime.now(UTC))
    task = repository.create(new_task(TaskSpec(schedule, TARGET), tenant="t", now=now, shard=0))
    staged = staged_for(task.id, to_ms(task.due_at), one_shot=one_shot)
    claim = store.claim(staged, now_ms=to_ms(now), lease_until_ms=to_ms(now) + 60_000, log_id="b")
    repository.update(replace(repository.get("t", task.id), status=TaskStatus.CANCELLED, next_fire_at=None))
    return repository, store, staged, claim, now


@pytest.mark.parametrize("counted", [True, False], ids=["registered", "run now or redrive"])
def test_a_one_shot_cancelled_mid_run_stays_cancelled_with_its_runs_outcome(aws, counted):
    repository, store, staged, claim, now = claimed(At(datetime.now(UTC) + timedelta(seconds=1)), one_shot=True)
    run = Run(staged.run_id, staged.task_id, now, RunStatus.DEAD_LETTERED, 1, now, 0, "HTTP 500")
    assert store.finish_one_shot(
        staged, run, now_ms=to_ms(now), targets_done=0, counted_in="t" if counted and claim.counted else None
    )
    task = repository.get("t", staged.task_id)
    assert task.status is TaskStatus.CANCELLED
    assert task.next_fire_at is None
    (shown,) = repository.runs(task, limit=10, cursor=None).items
    assert (shown.status, shown.last_error) == (RunStatus.DEAD_LETTERED, "HTTP 500")


@pytest.mark.parametrize("next_due", [True, False], ids=["another occurrence", "the last one"])
def test_a_recurring_task_cancelled_mid_run_is_neither_rearmed_nor_completed(aws, next_due):
    repository, store, staged, claim, now = claimed(Every(60), one_shot=False)
    task = repository.get("t", staged.task_id)
    run = Run(staged.run_id, staged.task_id, now, RunStatus.SUCCEEDED, 1, now, 0)
    following = staged.due_ms + 60_000 if next_due else None
    store.rearm(task, staged, run, next_due_ms=following, staged_next=False, now_ms=to_ms(now), counted=claim.counted)
    after = repository.get("t", staged.task_id)
    assert after.status is TaskStatus.CANCELLED
    assert after.next_fire_at is None
    assert [r.status for r in repository.runs(after, limit=10, cursor=None).items] == [RunStatus.SUCCEEDED]
