"""Isolation lives in the storage layer: every read, list, change, run history, dead letter,
redrive, job and idempotency record is scoped by the tenant the service is given, so another
tenant's ids are not found and its items never listed. (Which tenant a caller is comes from its
API key once authentication lands, docs/tenancy.md; these tests drive the services with two.)"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from shared.adapters.executions import SfnStarter
from shared.domain.errors import DeadLetterNotFound, JobNotFound, TaskNotFound
from shared.domain.ids import new_run_id
from shared.domain.retry import RetryPolicy
from shared.domain.schedules import After
from shared.domain.tasks import DeadLetter, HttpTarget, TaskSpec
from shared.settings.environment import from_env
from shared.store.dead_letters import DynamoDeadLetters
from tests.integration.conftest import use_settings
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration

A, B = "acme", "globex"
TARGET = HttpTarget("https://example.com/hook")
BUCKET = "sundial-jobs-isolation"


@pytest.fixture
def services(api: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    from functions.api import common

    boto3.client("s3").create_bucket(Bucket=BUCKET)
    use_settings(monkeypatch, jobs_bucket=BUCKET)
    monkeypatch.setattr(SfnStarter, "start", lambda self, job_id: None)
    common.reset()
    return common


def _letter(tenant: str, task_id: str) -> DeadLetter:
    now = datetime.now(UTC)
    run_id = new_run_id(int(now.timestamp() * 1000))
    return DeadLetter(
        id=run_id,  # a dead letter is its failed run's
        tenant=tenant,
        task_id=task_id,
        run_id=run_id,
        scheduled_for=now - timedelta(minutes=1),
        failed_at=now,
        attempts=3,
        reason="503 from the receiver",
        targets=(TARGET,),
        multicast=False,
        payload=None,
        retry=RetryPolicy(),
    )


def test_a_tenant_never_sees_or_touches_anothers_tasks(services):
    tasks = services.tasks()
    ours = tasks.register(A, TaskSpec(schedule=After(600), targets=(TARGET,), name="a-task"))
    theirs = tasks.register(B, TaskSpec(schedule=After(600), targets=(TARGET,), name="b-task"))
    assert tasks.get(A, ours.id).id == ours.id
    for action in (
        lambda: tasks.get(B, ours.id),
        lambda: tasks.runs(B, ours.id, limit=10, cursor=None),
        lambda: tasks.pause(B, ours.id),
        lambda: tasks.resume(B, ours.id),
        lambda: tasks.cancel(B, ours.id),
        lambda: tasks.run_now(B, ours.id),
    ):
        with pytest.raises(TaskNotFound):
            action()

    def each_lists_its_own() -> None:
        assert [task.id for task in tasks.list(A, status=None, limit=50, cursor=None, name_prefix=None).items] == [
            ours.id
        ]
        assert [task.id for task in tasks.list(B, status=None, limit=50, cursor=None, name_prefix=None).items] == [
            theirs.id
        ]

    eventually(each_lists_its_own)
    assert tasks.get(A, ours.id).status.value == "scheduled"  # nothing B did reached it


def test_dead_letters_and_redrive_all_are_the_tenants_own(services):
    tasks = services.tasks()
    ours = tasks.register(A, TaskSpec(schedule=After(600), targets=(TARGET,)))
    theirs = tasks.register(B, TaskSpec(schedule=After(600), targets=(TARGET,)))
    store = DynamoDeadLetters(retention_ms=86_400_000, list_shards=from_env().list_shards)
    mine, other = _letter(A, ours.id), _letter(B, theirs.id)
    store.record(mine)
    store.record(other)
    assert [letter.id for letter in tasks.dead_letters(B, limit=50, cursor=None, status=None).items] == [other.id]
    with pytest.raises(DeadLetterNotFound):
        tasks.dead_letter(B, mine.id)
    with pytest.raises(DeadLetterNotFound):
        tasks.redrive(B, [mine.id])

    def b_redrives_its_own() -> None:  # "all" reads the status index, which a write reaches a moment later
        redriven = tasks.redrive(B, None)  # "all": the caller's letters only
        assert [letter.id for letter, _ in redriven.runs] == [other.id]

    eventually(b_redrives_its_own)
    assert tasks.dead_letter(A, mine.id).redriven_run_id is None


def test_jobs_are_the_tenants_own(services):
    from shared.domain.jobs import JobRequest
    from shared.domain.sharding import Sharding

    jobs = services.jobs()
    request = JobRequest(
        processor=TARGET,
        processor_dict={"http": {"url": TARGET.url}},
        data=[[1, 2]],
        sharding=Sharding(),
        notify_every_percent=None,
    )
    ours = jobs.start(A, request)
    with pytest.raises(JobNotFound):
        jobs.get(B, ours.id)

    def a_lists_it() -> None:
        assert [job.id for job in jobs.list(A, 50, None).items] == [ours.id]

    eventually(a_lists_it)  # first: while the list lags, B's empty one would prove nothing
    assert jobs.list(B, 50, None).items == []


def test_an_idempotency_key_is_the_tenants_own(services):
    replay = services.replay()
    calls: list[str] = []

    def work(tenant: str) -> Any:
        def run() -> tuple[int, Any]:
            calls.append(tenant)
            return 201, {"tenant": tenant}

        return run

    first = replay(tenant=A, route="POST /v1/tasks", key="order-1", body={"x": 1}, work=work(A))
    second = replay(tenant=B, route="POST /v1/tasks", key="order-1", body={"x": 1}, work=work(B))
    again = replay(tenant=A, route="POST /v1/tasks", key="order-1", body={"x": 1}, work=work(A))
    assert calls == [A, B]  # the same key ran once per tenant
    assert first[1] == again[1] == {"tenant": A}
    assert second[1] == {"tenant": B}
