"""The in-memory fake and the DynamoDB repository behave the same (so domain tests can trust it)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from shared.domain.errors import ConcurrentUpdate, QuotaExceeded, TaskNotFound
from shared.domain.registration import new_task
from shared.domain.schedules import At, Cron, Every
from shared.domain.states import WATCHED_TASKS as WATCHED
from shared.domain.states import TaskStatus
from shared.domain.tasks import HttpTarget, SqsTarget, TaskSpec
from shared.store.dynamo import DynamoTaskRepository
from tests.support.eventually import eventually
from tests.support.fakes import InMemoryTaskRepository

pytestmark = pytest.mark.integration

NOW = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)


@pytest.fixture(params=["memory", "dynamo"])
def repo(request):
    if request.param == "memory":
        return InMemoryTaskRepository()
    request.getfixturevalue("aws")
    return DynamoTaskRepository(list_shards=3)


def make(tenant="default", minutes=5, shard=0, **spec_fields):
    spec = TaskSpec(
        schedule=spec_fields.pop("schedule", Every(30, start=NOW + timedelta(minutes=minutes))),
        targets=(HttpTarget("https://example.com/a", headers={"X-A": "1"}), SqsTarget("https://q/123456789012/q")),
        multicast=True,
        payload={"nested": [1, "two", None], "ünï": "cödé"},
        **spec_fields,
    )
    return new_task(spec, tenant=tenant, now=NOW + timedelta(seconds=minutes), shard=shard)


def test_a_task_round_trips_exactly(repo):
    task = make(name="n", schedule=Cron("*/5 * * * *", "Europe/Berlin", end=NOW + timedelta(days=3)))
    stored = repo.create(task)
    assert stored.version == 1
    assert repo.get("default", task.id) == stored
    assert replace(stored, version=0) == task


def test_creating_the_same_id_twice_is_refused(repo):
    task = make()
    repo.create(task)
    with pytest.raises(ConcurrentUpdate):
        repo.create(task)


def test_updates_are_optimistic(repo):
    stored = repo.create(make())
    renamed = repo.update(replace(stored, name="renamed"))
    assert renamed.version == 2
    assert repo.get("default", stored.id).name == "renamed"
    with pytest.raises(ConcurrentUpdate):
        repo.update(replace(stored, name="stale"))


def test_another_tenants_task_is_not_found(repo):
    stored = repo.create(make(tenant="a"))
    with pytest.raises(TaskNotFound):
        repo.get("b", stored.id)


def test_listing_is_newest_first_filters_and_pages_exactly_once(repo):
    tasks = [repo.create(make(minutes=i, shard=i % 4)) for i in range(1, 12)]
    repo.create(make(tenant="other"))
    for task in tasks[::3]:
        repo.update(replace(task, status=TaskStatus.CANCELLED))

    def lists(status: TaskStatus | None, expected: list) -> None:
        seen, cursor = [], None
        while True:
            page = repo.list("default", status=status, limit=2, cursor=cursor)
            assert len(page.items) <= 2
            seen += [t.id for t in page.items]
            cursor = page.next_cursor
            if cursor is None:
                break
        assert seen == [t.id for t in reversed(expected)]

    for status, expected in [
        (None, tasks),
        (TaskStatus.CANCELLED, tasks[::3]),
        (TaskStatus.SCHEDULED, [t for t in tasks if t not in tasks[::3]]),
    ]:
        eventually(lambda status=status, expected=expected: lists(status, expected))


def _same(listed: list[str], expected: list[str]) -> None:
    assert listed == expected


def batch(at: datetime, count: int, tenant: str = "default", recurring: int = 0) -> list:
    """``count`` tasks registered in one batch at ``at`` (one instant), the last ``recurring`` of
    them recurring, the others one-shots due at spread times on spread shards."""
    tasks = []
    for i in range(count):
        schedule = Every(60, start=at + timedelta(hours=1)) if i >= count - recurring else At(at + timedelta(minutes=i))
        spec = TaskSpec(schedule=schedule, targets=(HttpTarget("https://example.com/a"),), name=f"b{i}")
        tasks.append(new_task(spec, tenant=tenant, now=at, shard=i % 4))
    return tasks


def test_batches_single_registrations_and_changes_list_newest_first_each_task_once(repo):
    """Batch registrations are listed through listing pages on DynamoDB (shared/store/listing.py):
    the same order as the index, two batches of one millisecond merged, a paged task a client
    changed (its own index entry now) listed once, with cursors that cross pages."""
    first = batch(NOW, 7, recurring=2)
    single = make(minutes=1)  # created a second later
    same_ms = [batch(NOW + timedelta(seconds=2), 5), batch(NOW + timedelta(seconds=2), 4)]
    later = batch(NOW + timedelta(seconds=3), 1)  # one alone: no page
    repo.create_many([(t, False) for t in first])
    repo.create(single)
    for tasks in (*same_ms, later):
        repo.create_many([(t, False) for t in tasks])
    others = batch(NOW, 3, tenant="other")
    repo.create_many([(t, False) for t in others])
    everything = [*first, single, *same_ms[0], *same_ms[1], *later]
    changed = repo.get("default", same_ms[1][2].id)
    repo.update(replace(changed, name="renamed"))
    cancelled = repo.get("default", first[1].id)
    repo.update(replace(cancelled, status=TaskStatus.CANCELLED))
    newest_first = [t.id for t in sorted(everything, key=lambda t: (t.created_at, t.id), reverse=True)]

    def lists(limit: int, status: TaskStatus | None = None) -> list[str]:
        seen, cursor = [], None
        while True:
            page = repo.list("default", status=status, limit=limit, cursor=cursor)
            seen += [t.id for t in page.items]
            cursor = page.next_cursor
            if cursor is None:
                return seen

    for limit in (1, 3, 100):
        eventually(lambda limit=limit: _same(lists(limit), newest_first))
    assert lists(4, TaskStatus.CANCELLED) == [first[1].id]
    assert repo.get("default", changed.id).name == "renamed"
    listed_others = [t.id for t in repo.list("other", status=None, limit=10, cursor=None).items]
    assert listed_others == sorted((t.id for t in others), reverse=True)


# --- the quota of tasks that can still fire ----------------------------------------------------


@pytest.fixture(params=["memory", "dynamo"])
def small(request):
    """A repository whose tenants may have 3 tasks that can still fire."""
    if request.param == "memory":
        return InMemoryTaskRepository(default_max_tasks=3)
    request.getfixturevalue("aws")
    return DynamoTaskRepository(list_shards=3, default_max_tasks=3)


def test_registrations_past_the_quota_are_refused_and_store_nothing(small):
    stored = [small.create(make(minutes=i)) for i in range(3)]
    refused = make(minutes=9)
    with pytest.raises(QuotaExceeded):
        small.create(refused)
    with pytest.raises(TaskNotFound):
        small.get("default", refused.id)
    with pytest.raises(QuotaExceeded):
        small.create_many([(make(tenant="other", minutes=i), False) for i in range(4)])
    assert small.list("other", status=None, limit=10, cursor=None).items == []
    assert small.live_tasks("default") == 3
    assert small.live_tasks("other") == 0
    small.update(replace(stored[0], status=TaskStatus.CANCELLED))
    assert small.live_tasks("default") == 2
    assert small.create_many([(make(minutes=7), False)])[0].id


def test_extra_runs_are_not_counted(small):
    task = small.create(make())
    for k in range(3):
        run = replace(make(minutes=k + 1, schedule=At(NOW + timedelta(minutes=k + 1))), parent_id=task.id)
        small.create_run(run, staged=False)
    assert small.live_tasks("default") == 1


def test_a_chained_run_is_stored_once_with_its_parent_and_the_lists_round_trip(repo):
    from shared.domain.chains import ChainLink, ParentRun
    from shared.domain.states import RunStatus

    child = repo.create(make(minutes=9))
    parent = repo.create(make(on_success=(child.id,), on_failure=(child.id, make().id)))
    assert repo.get("default", parent.id).on_success == (child.id,)
    assert repo.get("default", parent.id).on_failure == parent.on_failure
    link = ChainLink(ParentRun(parent.id, "01J0000000000000000000000R", RunStatus.SUCCEEDED), 2, {"rows": 7})
    run = replace(make(minutes=3, schedule=At(NOW + timedelta(minutes=3))), parent_id=child.id, chain=link)
    stored = repo.create_run(run, staged=False)
    assert stored.chain == link
    with pytest.raises(ConcurrentUpdate):
        repo.create_run(replace(run, due_at=NOW + timedelta(minutes=4)), staged=False)  # the same hop, later


def test_a_status_somebody_must_look_at_lists_full_pages_and_counts_exactly(repo):
    """Failed and paused tasks come from the status index (docs/status-index.md): with many more
    tasks newer than them (more than a filtered read of the listing index would reach), the
    first page of ``?status=failed`` holds the failed one, ``paused`` both kinds of paused task
    and ``paused_after_failures`` only Sundial's, each counted exactly; a task that leaves the
    status leaves the list and the count."""
    from shared.domain.states import TaskFilter

    failed = repo.create(make(minutes=1))
    failed = repo.update(replace(failed, status=TaskStatus.FAILED))
    paused = repo.update(replace(repo.create(make(minutes=2)), status=TaskStatus.PAUSED))
    self_paused = repo.create(make(minutes=3))
    self_paused = repo.update(replace(self_paused, status=TaskStatus.PAUSED, paused_reason="3 failures in a row"))
    newer = [make(minutes=10 + i, shard=i % 4) for i in range(260)]
    for task in newer:
        repo.create(task)
    repo.create(make(tenant="other", minutes=4))

    def listed(status: TaskFilter) -> list[str]:
        page = repo.list("default", status=status, limit=10, cursor=None)
        return [t.id for t in page.items]

    def settled() -> None:  # the indexes' lag (local/moto_patches/index_lag.py)
        assert listed(TaskFilter.FAILED) == [failed.id]
        assert listed(TaskFilter.PAUSED) == [self_paused.id, paused.id]
        assert listed(TaskFilter.PAUSED_AFTER_FAILURES) == [self_paused.id]

    eventually(settled)
    counts = {status: repo.count("default", status) for status in TaskFilter if status in WATCHED}
    assert counts == {TaskFilter.FAILED: 1, TaskFilter.PAUSED: 2, TaskFilter.PAUSED_AFTER_FAILURES: 1}
    assert repo.count("other", TaskFilter.FAILED) == 0
    with pytest.raises(ValueError, match="not counted"):
        repo.count("default", TaskFilter.SCHEDULED)

    repo.update(replace(repo.get("default", self_paused.id), status=TaskStatus.SCHEDULED, paused_reason=None))
    repo.update(replace(repo.get("default", failed.id), status=TaskStatus.CANCELLED))

    def left() -> None:
        assert listed(TaskFilter.FAILED) == []
        assert listed(TaskFilter.PAUSED) == [paused.id]
        assert repo.count("default", TaskFilter.PAUSED_AFTER_FAILURES) == 0

    eventually(left)


def test_a_status_page_goes_on_from_its_cursor_exactly_once(repo):
    from shared.domain.states import TaskFilter

    made = [repo.create(make(minutes=i, shard=i % 4)) for i in range(1, 8)]
    for task in made:
        repo.update(replace(task, status=TaskStatus.FAILED))
    expected = [t.id for t in sorted(made, key=lambda t: (t.created_at, t.id), reverse=True)]

    def paged() -> None:
        seen, cursor = [], None
        while True:
            page = repo.list("default", status=TaskFilter.FAILED, limit=3, cursor=cursor)
            seen += [t.id for t in page.items]
            cursor = page.next_cursor
            if cursor is None:
                break
        assert seen == expected

    eventually(paged)
