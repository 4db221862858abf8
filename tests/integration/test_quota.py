"""A tenant's ``max_tasks`` quota (docs/tenancy.md, section 2 step 5): tasks that can still fire
are counted from their registration, a registration over the quota is ``429 quota_exceeded``
with nothing stored, and every way a task stops being able to fire gives its place back once."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.domain.claims import Success
from shared.domain.errors import ConcurrentUpdate, QuotaExceeded
from shared.domain.firing import staged_for
from shared.domain.registration import new_task
from shared.domain.schedules import At, Cron
from shared.domain.states import RunStatus, TaskStatus
from shared.domain.tasks import HttpTarget, Run, TaskSpec
from shared.domain.times import from_ms, to_ms, truncate_ms
from shared.store.dynamo import DynamoTaskRepository
from shared.store.models import TaskItem
from shared.store.pipeline import DynamoPipelineStore
from shared.store.tenant_items import TenantItem
from tests.integration.conftest import use_settings
from tests.support.eventually import eventually, until

pytestmark = pytest.mark.integration

FAR_CRON = {"cron": "0 0 1 1 *"}
"""Next fires on New Year's Day: never during a test."""


def spec(url: str = "http://example.com/hook", **fields: Any) -> dict[str, Any]:
    return {"schedule": FAR_CRON, "target": {"http": {"url": url, "timeout_seconds": 1}}, **fields}


def live(tenant: str = "default") -> int:
    return DynamoTaskRepository(list_shards=1).live_tasks(tenant)


def listed(api: Any) -> list[str]:
    answer = api("GET", "/v1/tasks?limit=100")
    assert answer.status == 200, answer.body
    return [t["id"] for t in answer.body["items"]]


def lists(api: Any, ids: list[str]) -> None:
    """The task list shows exactly ``ids`` once it has caught up (it comes from an eventually
    consistent index), and the table, read strongly consistently, holds those tasks and no other:
    an empty place in a lagging list is no proof that nothing was stored."""

    def shown() -> None:
        assert sorted(listed(api)) == sorted(ids)

    eventually(shown)
    stored = [item.sk for item in TaskItem.scan(consistent_read=True) if not item.parent_id]
    assert len(stored) == len(ids), stored


@pytest.fixture
def quota(api: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``quota(n)``: the deployment's default ``max_tasks`` is ``n`` (in the functions' environment)."""
    from functions.api import common

    def set_quota(max_tasks: int) -> None:
        use_settings(monkeypatch, tenant_max_tasks=max_tasks)
        common.reset()

    return set_quota


def wait_for(condition: Any, timeout: float = 5) -> bool:
    return bool(until(condition, timeout))


# --- registration -----------------------------------------------------------------------------


def test_registering_past_the_quota_is_429_and_stores_nothing(api, quota):
    quota(3)
    ids = [api("POST", "/v1/tasks", spec(name=f"t{i}")).body["id"] for i in range(3)]
    assert live() == 3
    over = api("POST", "/v1/tasks", spec(name="one too many"))
    assert over.status == 429, over.body
    assert over.body["error"]["code"] == "quota_exceeded"
    assert "max_tasks" in over.body["error"]["message"]
    lists(api, ids)
    assert live() == 3


def test_a_batch_over_the_quota_is_refused_whole_and_one_that_fits_is_stored_whole(api, quota):
    quota(5)
    first = [api("POST", "/v1/tasks", spec(name=f"t{i}")).body["id"] for i in range(2)]
    over = api("POST", "/v1/tasks:batch", {"tasks": [spec(name=f"b{i}") for i in range(4)]})
    assert over.status == 429, over.body
    assert over.body["error"]["code"] == "quota_exceeded"
    lists(api, first)
    assert live() == 2
    fits = api("POST", "/v1/tasks:batch", {"tasks": [spec(name=f"b{i}") for i in range(3)]})
    assert fits.status == 200, fits.body
    assert all("task" in item for item in fits.body["items"])
    lists(api, first + [item["task"]["id"] for item in fits.body["items"]])
    assert live() == 5
    assert api("POST", "/v1/tasks", spec()).status == 429


def test_a_batch_gives_back_the_places_of_the_tasks_it_could_not_write(api, quota, monkeypatch):
    from pynamodb.connection.base import Connection

    quota(10)
    real = Connection.batch_write_item

    def throttled(self, table_name, put_items=None, **kwargs):
        left = [i for i in put_items if i["name"]["S"] in ("b1", "b3")]
        written = [i for i in put_items if i not in left]
        answer = real(self, table_name, put_items=written, **kwargs)
        return {**answer, "UnprocessedItems": {table_name: [{"PutRequest": {"Item": i}} for i in left]}}

    monkeypatch.setattr(Connection, "batch_write_item", throttled)
    answer = api("POST", "/v1/tasks:batch", {"tasks": [spec(name=f"b{i}") for i in range(6)]})
    assert answer.status == 200, answer.body
    assert [("task" in i) for i in answer.body["items"]] == [True, False, True, False, True, True]
    monkeypatch.undo()
    assert live() == 4
    lists(api, [item["task"]["id"] for item in answer.body["items"] if "task" in item])


def test_each_tenant_has_its_own_count_and_its_own_limit(aws, monkeypatch):
    from shared.services.factory import build_task_service
    from shared.settings.environment import from_env

    use_settings(monkeypatch, tenant_max_tasks=2)
    service = build_task_service(from_env())
    TenantItem("T#acme", "T", max_tasks=1, created_ms=0).save()  # as an admin's PATCH leaves it
    task = TaskSpec(Cron("0 0 1 1 *"), (HttpTarget("https://example.com/hook"),))
    service.register("acme", task)
    with pytest.raises(QuotaExceeded):
        service.register("acme", task)
    service.register("globex", task)
    service.register("globex", task)  # the deployment's default: 2
    with pytest.raises(QuotaExceeded):
        service.register_many("globex", [task])
    assert (live("acme"), live("globex")) == (1, 2)
    TenantItem("T#acme", "T").update(actions=[TenantItem.max_tasks.set(3)])  # raised
    service.register_many("acme", [task, task])
    assert live("acme") == 3
    with pytest.raises(QuotaExceeded):
        service.register("acme", task)
    TenantItem("T#acme", "T").update(actions=[TenantItem.max_tasks.set(1)])  # lowered below its count
    with pytest.raises(QuotaExceeded):
        service.register("acme", task)
    assert (live("acme"), live("globex")) == (3, 2)


def test_a_tenants_own_limit_is_kept_through_its_key_and_changed_by_the_admin(api):
    from tests.integration.conftest import ADMIN_KEY

    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}

    def tenant(name: str, **limits: int) -> dict[str, str]:
        created = api("POST", "/v1/tenants", {"id": name, "limits": limits} if limits else {"id": name}, admin)
        assert created.status == 201, created.body
        return {"Authorization": f"Bearer {created.body['key']['secret']}"}

    acme, globex = tenant("acme", max_tasks=2), tenant("globex")
    for name in ("a", "b"):
        assert api("POST", "/v1/tasks", spec(name=name), acme).status == 201
    over = api("POST", "/v1/tasks", spec(name="c"), acme)
    assert (over.status, over.body["error"]["code"]) == (429, "quota_exceeded")
    assert api("POST", "/v1/tasks:batch", {"tasks": [spec()]}, acme).status == 429
    assert api("POST", "/v1/tasks", spec(), globex).status == 201
    assert api("GET", "/v1/tenants/acme", None, admin).body["live_tasks"] == 2
    assert api("PATCH", "/v1/tenants/acme", {"limits": {"max_tasks": 3}}, admin).status == 200
    assert api("POST", "/v1/tasks", spec(name="c"), acme).status == 201
    assert [api("GET", f"/v1/tenants/{t}", None, admin).body["live_tasks"] for t in ("acme", "globex")] == [3, 1]


# --- what gives a place back --------------------------------------------------------------------


def test_cancelling_frees_a_place_once(api, quota):
    quota(2)
    a, _ = (api("POST", "/v1/tasks", spec(name=n)).body for n in ("a", "b"))
    assert api("POST", "/v1/tasks", spec()).status == 429
    assert api("DELETE", f"/v1/tasks/{a['id']}").status == 204
    assert api("DELETE", f"/v1/tasks/{a['id']}").status == 204  # cancelling twice frees nothing more
    assert live() == 1
    assert api("POST", "/v1/tasks", spec(name="c")).status == 201
    assert live() == 2


def test_a_paused_task_still_counts(api, quota):
    quota(1)
    task = api("POST", "/v1/tasks", spec()).body
    assert api("POST", f"/v1/tasks/{task['id']}/pause").status == 200
    assert api("POST", "/v1/tasks", spec()).status == 429
    assert live() == 1


def test_a_one_shot_that_fires_successfully_frees_its_place_once(api, pipeline, receiver, quota):
    quota(1)
    url = receiver.script("/ok", 200)
    task = api("POST", "/v1/tasks", spec(url, schedule={"after_seconds": 1.5})).body
    assert api("POST", "/v1/tasks", spec(url)).status == 429
    assert pipeline.fire(until=lambda: live() == 0, timeout=10)
    assert api("GET", f"/v1/tasks/{task['id']}").body["status"] == "completed"
    pipeline.settle()  # nothing more is freed
    assert live() == 0
    assert api("POST", "/v1/tasks", spec(url)).status == 201
    assert live() == 1


def test_a_success_delivered_twice_frees_its_place_once(api, pipeline, receiver, quota):
    quota(2)
    url = receiver.script("/twice", 200)
    api("POST", "/v1/tasks", spec(url, name="stays"))
    api("POST", "/v1/tasks", spec(url, schedule={"after_seconds": 1.5}))
    queue = next(q for q in ("delay-0", "delay-1") if _depth(pipeline, q))
    message = pipeline.sqs.receive_message(QueueUrl=pipeline.urls[queue], WaitTimeSeconds=3)["Messages"][0]
    for _ in range(2):  # SQS's at-least-once delivery: two copies
        pipeline.sqs.send_message(QueueUrl=pipeline.urls[queue], MessageBody=message["Body"])
    pipeline.sqs.delete_message(QueueUrl=pipeline.urls[queue], ReceiptHandle=message["ReceiptHandle"])
    assert pipeline.fire(until=lambda: live() == 1, timeout=10)
    pipeline.settle()
    assert len(receiver.calls_to("/twice")) == 1
    assert live() == 1


def _depth(pipeline: Any, queue: str) -> int:
    names = ["ApproximateNumberOfMessagesDelayed", "ApproximateNumberOfMessages"]
    attributes = pipeline.sqs.get_queue_attributes(QueueUrl=pipeline.urls[queue], AttributeNames=names)["Attributes"]
    return sum(int(attributes[name]) for name in names)


@pytest.mark.parametrize(("answers", "status"), [((400,), "failed"), ((500,), "dead_lettered")])
def test_a_one_shot_that_fails_for_good_frees_its_place(api, pipeline, receiver, quota, answers, status):
    quota(1)
    url = receiver.script("/bad", *answers)
    retry = {"max_attempts": 1}
    task = api("POST", "/v1/tasks", spec(url, schedule={"after_seconds": 1.5}, retry=retry)).body
    assert pipeline.fire(until=lambda: live() == 0, timeout=10)
    (run,) = api("GET", f"/v1/tasks/{task['id']}/runs").body["items"]
    assert run["status"] == status
    pipeline.settle()
    assert live() == 0


def test_a_recurring_task_that_ends_frees_its_place(api, pipeline, receiver, quota):
    quota(1)
    url = receiver.script("/every", 200)
    end = (datetime.now(UTC) + timedelta(seconds=3.5)).isoformat().replace("+00:00", "Z")
    task = api("POST", "/v1/tasks", spec(url, schedule={"every_seconds": 1, "end": end})).body
    pipeline.tick()
    assert pipeline.fire(until=lambda: live() == 0, timeout=15)
    assert api("GET", f"/v1/tasks/{task['id']}").body["status"] == "completed"
    assert len(receiver.calls_to("/every")) >= 2
    assert live() == 0


def test_run_now_is_not_counted_and_its_run_frees_nothing(api, pipeline, receiver, quota):
    quota(1)
    url = receiver.script("/now", 200)
    task = api("POST", "/v1/tasks", spec(url)).body
    answer = api("POST", f"/v1/tasks/{task['id']}/run")  # at the quota: a run is not a registration
    assert answer.status == 202, answer.body
    assert live() == 1
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/now")) == 1, timeout=10)
    pipeline.settle()  # its success is logged
    assert [r["status"] for r in api("GET", f"/v1/tasks/{task['id']}/runs").body["items"]] == ["succeeded"]
    assert live() == 1
    assert api("POST", "/v1/tasks", spec(url)).status == 429


# --- the store's writes, one at a time ----------------------------------------------------------


def _claimed_one_shot(tenant: str = "t", log_id: str = "batch-1") -> tuple[Any, Any, Any]:
    """A counted one-shot task due now, its run claimed by a trigger batch ``log_id``."""
    repository, store = DynamoTaskRepository(list_shards=1), DynamoPipelineStore(retention_ms=60_000)
    now = truncate_ms(datetime.now(UTC))
    task = repository.create(
        new_task(
            TaskSpec(At(now + timedelta(seconds=1)), (HttpTarget("https://example.com"),)),
            tenant=tenant,
            now=now,
            shard=0,
        )
    )
    staged = staged_for(task.id, to_ms(task.due_at), one_shot=True)
    claimed = store.claim(staged, now_ms=to_ms(now), lease_until_ms=to_ms(now) + 60_000, log_id=log_id)
    assert claimed.counted
    return repository, store, staged


def _success(staged: Any, counted_in: str | None = "t") -> Success:
    return Success(staged.run_id, staged.due_ms, 0, 1, counted_in)


def test_a_replayed_run_log_frees_nothing_twice(aws):
    repository, store, staged = _claimed_one_shot()
    far = TaskSpec(Cron("0 0 1 1 *"), (HttpTarget("https://example.com"),))
    repository.create(new_task(far, tenant="t", now=truncate_ms(datetime.now(UTC)), shard=0))
    assert live("t") == 2
    store.log_successes("batch-1", [_success(staged)], to_ms(datetime.now(UTC)))
    store.log_successes("batch-1", [_success(staged)], to_ms(datetime.now(UTC)))  # answered as failed, sent again
    assert live("t") == 1
    assert repository.get("t", staged.task_id).status is TaskStatus.COMPLETED


def test_a_success_recorded_without_its_run_log_frees_its_place_once(aws):
    """The batch's run log could not be written: each success is recorded on its task instead,
    which frees its place, unless the log was written after all."""
    _, store, staged = _claimed_one_shot(log_id="batch-2")
    run = Run(staged.run_id, staged.task_id, datetime.now(UTC), RunStatus.SUCCEEDED, 1)
    now = to_ms(datetime.now(UTC))
    assert store.finish_one_shot(staged, run, now_ms=now, targets_done=-1, counted_in="t", logged_in="batch-2")
    assert live("t") == 0
    assert not store.finish_one_shot(staged, run, now_ms=now, targets_done=-1, counted_in="t", logged_in="batch-2")
    assert live("t") == 0

    _, store, staged = _claimed_one_shot(log_id="batch-3")
    store.log_successes("batch-3", [_success(staged)], now)  # written after all
    assert live("t") == 0
    assert store.finish_one_shot(staged, run, now_ms=now, targets_done=-1, counted_in="t", logged_in="batch-3")
    assert live("t") == 0


def test_a_one_shot_cancelled_while_its_run_fires_is_freed_by_that_run_once(aws):
    repository, store, staged = _claimed_one_shot()
    task = repository.get("t", staged.task_id)
    repository.update(replace(task, status=TaskStatus.CANCELLED))
    assert live("t") == 1  # the run in flight will say how the task ended
    store.log_successes("batch-1", [_success(staged)], to_ms(datetime.now(UTC)))
    assert live("t") == 0
    assert repository.get("t", staged.task_id).status is TaskStatus.CANCELLED


def _end_unfired(store: Any, staged: Any, why: str, now: int, tenant: str) -> bool:
    """What the trigger records for a run its message took only to end it: skipped, unfired."""
    run = Run(staged.run_id, staged.task_id, from_ms(staged.due_ms), RunStatus.SKIPPED, staged.attempt - 1)
    return store.finish_one_shot(staged, replace(run, last_error=why), now_ms=now, targets_done=0, counted_in=tenant)


def test_a_one_shot_cancelled_while_its_run_fires_is_freed_when_that_run_is_ended_unfired(aws):
    """Cancelled mid-run, the run then retries (its retry finds the task cancelled) or its trigger
    dies (the redelivered message finds the task cancelled): that message takes the run only to
    end it, skipped and unfired, and that end frees the place, once."""
    from shared.domain.claims import Claimed, Refusal

    repository, store, staged = _claimed_one_shot()
    repository.update(replace(repository.get("t", staged.task_id), status=TaskStatus.CANCELLED))
    now = to_ms(datetime.now(UTC))
    assert store.record_retry(staged, error="503", targets_done=0, fired_ms=now, lateness_ms=0)
    retry = staged.next_attempt()
    ending = store.claim(retry, now_ms=now, lease_until_ms=now + 60_000, log_id="b")
    assert isinstance(ending, Claimed)
    assert ending.superseded is not None
    assert store.claim(retry, now_ms=now, lease_until_ms=now + 60_000, log_id="b") is Refusal.STALE  # a copy
    assert live("t") == 1
    assert _end_unfired(store, retry, ending.superseded, now, "t")
    assert live("t") == 0
    assert not _end_unfired(store, retry, ending.superseded, now, "t")  # once
    assert live("t") == 0

    repository, store, staged = _claimed_one_shot(tenant="u")  # its lease runs a minute from now
    repository.update(replace(repository.get("u", staged.task_id), status=TaskStatus.CANCELLED))
    assert store.claim(staged, now_ms=now, lease_until_ms=now + 60_000, log_id="c") is Refusal.STALE
    assert live("u") == 1  # its trigger may still be running it
    later = now + 61_000  # the lease is over: that trigger died
    ending = store.claim(staged, now_ms=later, lease_until_ms=later + 60_000, log_id="c")
    assert isinstance(ending, Claimed)
    assert ending.superseded is not None
    assert _end_unfired(store, replace(staged, attempt=1), ending.superseded, later, "u")
    assert live("u") == 0


def test_a_paused_one_shot_whose_retry_is_dropped_still_counts(aws):
    from shared.domain.claims import Refusal

    repository, store, staged = _claimed_one_shot()
    now = to_ms(datetime.now(UTC))
    assert store.record_retry(staged, error="503", targets_done=0, fired_ms=now, lateness_ms=0)
    repository.update(replace(repository.get("t", staged.task_id), status=TaskStatus.PAUSED))
    assert store.claim(staged.next_attempt(), now_ms=now, lease_until_ms=now + 60_000, log_id="b") is Refusal.STALE
    assert live("t") == 1  # it can fire again once resumed


def _racing(monkeypatch: pytest.MonkeyPatch, operation: str, times: int) -> list[str]:
    """``operation`` loses a race for the counter ``times`` times: DynamoDB cancels a transaction
    while another writes one of its items (TransactionConflict), and refuses a plain write to an
    item a transaction is writing (TransactionConflictException); the SDK retries neither."""
    from botocore.client import BaseClient
    from botocore.exceptions import ClientError

    real = BaseClient._make_api_call
    conflicts: list[str] = []

    def racing(self, called, params):
        if called == operation and len(conflicts) < times:
            conflicts.append(called)
            if called == "TransactWriteItems":
                reasons = [{"Code": "None"}, {"Code": "TransactionConflict", "Message": "in progress"}]
                error = {"Code": "TransactionCanceledException", "Message": "conflict"}
                raise ClientError({"Error": error, "CancellationReasons": reasons}, called)
            raise ClientError({"Error": {"Code": "TransactionConflictException", "Message": "in progress"}}, called)
        return real(self, called, params)

    monkeypatch.setattr(BaseClient, "_make_api_call", racing)
    return conflicts


def test_a_registration_that_lost_a_race_for_the_counter_is_sent_again(aws, monkeypatch):
    repository = DynamoTaskRepository(list_shards=1, default_max_tasks=5)
    task = TaskSpec(Cron("0 0 1 1 *"), (HttpTarget("https://example.com"),))
    now = truncate_ms(datetime.now(UTC))
    conflicts = _racing(monkeypatch, "UpdateItem", 2)  # the counter's update met a transaction on it
    stored = repository.create(new_task(task, tenant="t", now=now, shard=0))
    assert len(conflicts) == 2
    conflicts = _racing(monkeypatch, "UpdateItem", 2)
    batch = repository.create_many([(new_task(task, tenant="t", now=now, shard=0), False) for _ in range(2)])
    assert len(conflicts) == 2
    monkeypatch.undo()
    assert repository.get("t", stored.id) == stored
    assert all(repository.get("t", t.id) == t for t in batch)
    assert live("t") == 3


def test_a_registration_whose_put_fails_gives_its_place_back(aws):
    repository = DynamoTaskRepository(list_shards=1, default_max_tasks=5)
    task = new_task(
        TaskSpec(Cron("0 0 1 1 *"), (HttpTarget("https://example.com"),)),
        tenant="t",
        now=truncate_ms(datetime.now(UTC)),
        shard=0,
    )
    repository.create(task)
    with pytest.raises(ConcurrentUpdate):
        repository.create(task)  # the same id again: counted first, then refused by the put
    assert live("t") == 1
