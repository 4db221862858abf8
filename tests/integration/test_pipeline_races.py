"""The DynamoDB pipeline store between its read and its conditional write. A refused claim reads
the task's item and decides from it (take the run over, end it unfired, or say why not); another
trigger can write the item in between, and only the write's condition stands in its way. The
explorer (make verify) runs every interleaving of the firing steps on the in-memory store, whose
steps are atomic; here the competing write is put exactly between the DynamoDB store's read and
its write, as two Lambda containers can put it ("Condition expressions": a conditional write
fails when the item no longer matches, whatever was read before)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any
from unittest import mock

import pytest

from shared.domain.claims import Claimed, Refusal
from shared.domain.firing import Staged, staged_for
from shared.domain.registration import new_task
from shared.domain.schedules import At
from shared.domain.states import RunStatus, TaskStatus
from shared.domain.tasks import HttpTarget, Task, TaskSpec
from shared.domain.times import to_ms
from shared.store.dynamo import DynamoTaskRepository
from shared.store.models import BucketItem
from shared.store.pipeline import DynamoPipelineStore

pytestmark = pytest.mark.integration

NOW = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
LEASE_MS = 150_000
RETENTION = timedelta(days=36_500)
TARGETS = (HttpTarget("https://example.com/hook"),)


@pytest.fixture
def stores(aws: Any) -> tuple[DynamoTaskRepository, DynamoPipelineStore]:
    return DynamoTaskRepository(list_shards=1, retention=RETENTION), DynamoPipelineStore(
        int(RETENTION.total_seconds() * 1000)
    )


@contextmanager
def at_the_next_read(
    *, before: Callable[[], Any] | None = None, after: Callable[[], Any] | None = None
) -> Iterator[None]:
    """Run ``before`` just before the store's next read of an item, ``after`` just after it (before
    the write that read decides), once."""
    original = BucketItem.get
    pending = [True]

    def get(*args: Any, **kwargs: Any) -> Any:
        if not pending:
            return original(*args, **kwargs)
        pending.clear()
        if before is not None:
            before()
        item = original(*args, **kwargs)
        if after is not None:
            after()
        return item

    with mock.patch.object(BucketItem, "get", get):
        yield


def one_shot(repository: DynamoTaskRepository, seconds: int = 90) -> Task:
    return repository.create(
        new_task(TaskSpec(At(NOW + timedelta(seconds=seconds)), TARGETS), tenant="t", now=NOW, shard=0)
    )


def first(task: Task) -> Staged:
    return staged_for(task.id, to_ms(task.due_at), one_shot=True)


def claim(store: DynamoPipelineStore, staged: Staged, at: int, log: str) -> Claimed | Refusal:
    return store.claim(staged, now_ms=at, lease_until_ms=at + LEASE_MS, log_id=log)


def test_of_two_triggers_taking_over_one_expired_lease_the_one_whose_write_lands_second_is_refused(stores) -> None:
    repository, store = stores
    task = one_shot(repository)
    staged = first(task)
    assert isinstance(claim(store, staged, staged.due_ms, "b1"), Claimed)  # its trigger dies
    expired = staged.due_ms + LEASE_MS + 1
    won: list[Any] = []
    with at_the_next_read(after=lambda: won.append(claim(store, staged, expired, "b3"))):
        lost = claim(store, staged, expired, "b2")  # read the expired lease, then b3 took it over
    assert lost is Refusal.IN_FLIGHT
    (taken,) = won
    assert isinstance(taken, Claimed)
    assert (taken.log_id, taken.counted, taken.targets_done) == ("b3", True, 0)
    assert claim(store, staged, expired + 1, "b4") is Refusal.IN_FLIGHT  # b3's lease holds


def retried(repository: DynamoTaskRepository, store: DynamoPipelineStore) -> tuple[Task, Staged]:
    """A one-shot whose first attempt was claimed and failed, its first target done, its retry due."""
    task = one_shot(repository)
    one = first(task)
    assert isinstance(claim(store, one, one.due_ms, "b1"), Claimed)
    assert store.record_retry(one, error="HTTP 500", targets_done=0b1, fired_ms=one.due_ms + 5, lateness_ms=5)
    return task, one


def test_a_take_over_keeps_the_targets_the_run_has_done_and_its_place_in_the_quota(stores) -> None:
    repository, store = stores
    _task, one = retried(repository, store)
    two = one.next_attempt()
    assert isinstance(claim(store, two, one.due_ms + 2_000, "b2"), Claimed)  # its trigger dies
    taken = claim(store, two, one.due_ms + 2_000 + LEASE_MS + 1, "b3")
    assert isinstance(taken, Claimed)
    assert (taken.log_id, taken.targets_done, taken.counted) == ("b3", 0b1, True)


def test_of_two_copies_ending_a_cancelled_tasks_run_the_one_whose_write_lands_second_is_refused(stores) -> None:
    repository, store = stores
    task, one = retried(repository, store)
    current = repository.get("t", task.id)
    repository.update(replace(current, status=TaskStatus.CANCELLED, next_fire_at=None))
    two = one.next_attempt()
    at = one.due_ms + 2_000
    won: list[Any] = []
    with at_the_next_read(after=lambda: won.append(claim(store, two, at, "b3"))):
        lost = claim(store, two, at, "b2")  # read the run to end, then a copy of b3 took it
    assert lost is Refusal.STALE
    (taken,) = won
    assert isinstance(taken, Claimed)
    assert (taken.superseded is not None, taken.log_id, taken.targets_done) == (True, "b3", 0b1)
    read = repository.get("t", task.id)
    assert read.run is not None
    assert (read.run.status, read.run.attempts) == (RunStatus.FIRING, 2)


@pytest.mark.parametrize(("attempt", "refusal"), [(1, Refusal.BEHIND), (2, Refusal.STALE)])
def test_a_message_whose_task_is_armed_between_its_claim_and_the_read_is_behind_on_a_first_attempt(
    stores, attempt: int, refusal: Refusal
) -> None:
    """The claim's conditional write failed (nothing armed yet); the writer's write lands before the
    store reads the item to say why: armed for this occurrence but not claimed. A first attempt
    comes back to claim it; a retry of a run the item never held is stale."""
    repository, store = stores
    task = new_task(TaskSpec(At(NOW + timedelta(seconds=90)), TARGETS), tenant="t", now=NOW, shard=0)
    staged = first(task)
    for _ in range(attempt - 1):
        staged = staged.next_attempt()
    with at_the_next_read(before=lambda: repository.create(task)):
        assert claim(store, staged, staged.due_ms, "b1") is refusal
    if attempt == 1:
        assert isinstance(claim(store, staged, staged.due_ms + 1, "b1"), Claimed)


def test_a_take_over_racing_the_batch_that_takes_its_own_lease_back_is_refused(stores) -> None:
    """The lease changed under the take-over, its run log did not (the same batch took it again):
    the condition on both refuses it."""
    repository, store = stores
    task = one_shot(repository)
    staged = first(task)
    assert isinstance(claim(store, staged, staged.due_ms, "b1"), Claimed)
    expired = staged.due_ms + LEASE_MS + 1

    def own() -> None:
        taken = store.claim(staged, now_ms=expired, lease_until_ms=expired + LEASE_MS, log_id="b1", take_own=True)
        assert isinstance(taken, Claimed)

    with at_the_next_read(after=own):
        assert claim(store, staged, expired, "b2") is Refusal.IN_FLIGHT


def test_a_re_arm_keeps_its_run_and_points_at_the_next_occurrence_for_the_retention_only(stores) -> None:
    """Both items carry DynamoDB's TTL ("Using time to live (TTL) in DynamoDB"): the run record a
    retention after the occurrence ended, the next occurrence's pointer a retention after it is due."""
    from shared.domain.schedules import Every
    from shared.domain.times import from_ms
    from shared.store.items import occurrence_item
    from shared.store.models import OccurrenceItem, RunItem

    repository, store = stores
    every = Every(60, start=NOW + timedelta(minutes=1))
    task = repository.create(new_task(TaskSpec(every, TARGETS), tenant="t", now=NOW, shard=0))
    one = staged_for(task.id, to_ms(task.due_at), one_shot=False)
    claimed = claim(store, one, one.due_ms, "b1")
    assert isinstance(claimed, Claimed)
    ended = one.due_ms + 10
    ran = replace(claimed.task.run, status=RunStatus.SUCCEEDED) if claimed.task.run else None
    assert ran is not None
    following = one.due_ms + 60_000
    assert store.rearm(claimed.task, one, ran, next_due_ms=following, staged_next=False, now_ms=ended)
    retention = int(RETENTION.total_seconds() * 1000)

    def in_seconds(ms: int) -> datetime:  # a TTL attribute holds whole seconds
        return from_ms(ms // 1000 * 1000)

    (record,) = RunItem.query(f"R#{task.id}")
    assert record.expires_at == in_seconds(ended + retention)
    pointer = occurrence_item(task, following, False)
    assert pointer is not None
    read = OccurrenceItem.get(pointer.pk, pointer.sk, consistent_read=True)
    assert read.expires_at == in_seconds(following + retention)


def test_of_two_late_copies_freeing_a_cancelled_runs_place_only_the_first_frees_it(stores) -> None:
    """Two copies of an earlier attempt of a run whose task was cancelled while it fired: each
    reads the run abandoned and gives its place back; the second's write must find it given."""
    repository, store = stores
    task = one_shot(repository)
    one = first(task)
    assert isinstance(claim(store, one, one.due_ms, "b1"), Claimed)
    current = repository.get("t", task.id)
    repository.update(replace(current, status=TaskStatus.CANCELLED, next_fire_at=None))
    assert store.record_retry(one, error="HTTP 500", targets_done=0, fired_ms=one.due_ms + 5, lateness_ms=5)
    assert repository.live_tasks("t") == 1  # the cancel left the place to the run's outcome
    first_copy: list[Any] = []
    with at_the_next_read(after=lambda: first_copy.append(claim(store, one, one.due_ms + 1_000, "b8"))):
        assert claim(store, one, one.due_ms + 1_000, "b9") is Refusal.STALE
    assert first_copy == [Refusal.STALE]
    assert repository.live_tasks("t") == 0  # once, not twice
