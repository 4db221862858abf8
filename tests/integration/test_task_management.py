"""Managing tasks through the API handler, with the firing pipeline on moto and a real HTTP
receiver (docs/management.md): update, run now, batch registration, idempotent
registration, listing, dead letters and their redrive."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import datetime

import pytest

from tests.support.eventually import eventually

pytestmark = pytest.mark.integration


def parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def spec(url: str, **fields):
    return {"schedule": {"after_seconds": 1.5}, "target": {"http": {"url": url, "timeout_seconds": 1}}, **fields}


def register(api, url: str, **fields):
    answer = api("POST", "/v1/tasks", spec(url, **fields))
    assert answer.status == 201, answer.body
    return answer.body


def runs(api, task_id: str) -> list[dict]:
    answer = api("GET", f"/v1/tasks/{task_id}/runs")
    assert answer.status == 200, answer.body
    return answer.body["items"]


FAR_CRON = {"cron": "0 0 1 1 *"}
"""Next fires on New Year's Day: never during a test."""


# --- update -----------------------------------------------------------------------------------


def test_an_update_moves_the_next_fire_and_the_occurrence_staged_before_does_not_fire(api, pipeline, receiver):
    url = receiver.script("/moved", 200)
    task = register(api, url, schedule={"after_seconds": 1.5})  # staged by its writer right away
    moved = api("PATCH", f"/v1/tasks/{task['id']}", {"schedule": {"after_seconds": 2.8}})
    assert moved.status == 200, moved.body
    new_due = parse(moved.body["next_fire_at"])
    assert (new_due - parse(task["next_fire_at"])).total_seconds() >= 1.2
    assert moved.body["schedule"] == {"after_seconds": 2.8}
    assert moved.body["version"] > task["version"]
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/moved")) == 1, timeout=10)
    pipeline.settle()
    (call,) = receiver.calls_to("/moved")  # the old occurrence (1.5 s) never fired
    assert call.at >= new_due.timestamp()
    assert call.body["scheduled_for"] == moved.body["next_fire_at"]
    assert [r["status"] for r in runs(api, task["id"])] == ["succeeded"]


def test_an_update_without_a_schedule_keeps_the_fire_time_and_fires_the_new_payload(api, pipeline, receiver):
    url = receiver.script("/payload", 200)
    other = receiver.script("/other", 200)
    task = register(api, url, payload={"v": 1}, name="before")
    changed = api(
        "PATCH", f"/v1/tasks/{task['id']}", {"payload": {"v": 2}, "name": "after", "target": {"http": {"url": other}}}
    )
    assert changed.status == 200, changed.body
    assert changed.body["next_fire_at"] == task["next_fire_at"]
    assert changed.body["name"] == "after"
    assert changed.body["target"]["http"]["url"] == other
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/other")) == 1, timeout=10)
    pipeline.settle()
    assert receiver.calls_to("/payload") == []
    (call,) = receiver.calls_to("/other")
    assert call.body["payload"] == {"v": 2}


def test_an_update_to_a_recurring_schedule_re_arms_it(api, pipeline, receiver):
    url = receiver.script("/rearm", 200)
    task = register(api, url, schedule=FAR_CRON)
    changed = api("PATCH", f"/v1/tasks/{task['id']}", {"schedule": {"every_seconds": 1}})
    assert changed.status == 200, changed.body
    assert parse(changed.body["next_fire_at"]) < parse(task["next_fire_at"])
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/rearm")) >= 2, timeout=8)
    times = [c.body["scheduled_for"] for c in receiver.calls_to("/rearm")]
    assert len(times) == len(set(times))  # each occurrence once


def test_an_update_while_an_occurrence_is_firing_is_not_undone_by_its_re_arm(api, pipeline, receiver, monkeypatch):
    """The run in flight finishes and is recorded; its re-arm (the next occurrence of the old
    schedule) must not overwrite the schedule the client set meanwhile."""
    from shared.services.firing import call

    url = receiver.script("/inflight", 200)
    task = register(api, url, schedule={"every_seconds": 1})
    real_call = call.Caller._call
    changed = []

    def change_mid_call(self, *args, **kwargs):
        if not changed:
            changed.append(api("PATCH", f"/v1/tasks/{task['id']}", {"schedule": FAR_CRON}).body)
        return real_call(self, *args, **kwargs)

    monkeypatch.setattr(call.Caller, "_call", change_mid_call)
    assert pipeline.fire(until=lambda: [r["status"] for r in runs(api, task["id"])] == ["succeeded"], timeout=10)
    pipeline.settle()
    assert len(receiver.calls_to("/inflight")) == 1  # the old every-second schedule is gone
    after = api("GET", f"/v1/tasks/{task['id']}").body
    assert after["schedule"] == FAR_CRON | {"timezone": "UTC"}
    assert after["next_fire_at"] == changed[0]["next_fire_at"]
    assert after["status"] == "scheduled"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "body"),
        ({"schedule": {"cron": "not a cron"}}, "schedule.cron"),
        ({"retry": {"max_attempts": 0}}, "retry.max_attempts"),
        ({"target": {"http": {"url": "ftp://x"}}}, "target.http.url"),
        (
            {"target": {"http": {"url": "http://a.example"}}, "targets": [{"http": {"url": "http://b.example"}}]},
            "target",
        ),
        ({"status": "paused"}, "status"),
    ],
)
def test_a_bad_update_is_refused_naming_the_field_and_changes_nothing(api, body, field):
    task = register(api, "http://example.com/hook", schedule=FAR_CRON)
    answer = api("PATCH", f"/v1/tasks/{task['id']}", body)
    assert answer.status == 400, answer.body
    assert answer.body["error"]["code"] == "validation_error"
    assert field in [d["field"] for d in answer.body["error"]["details"]]
    assert api("GET", f"/v1/tasks/{task['id']}").body == task


def test_a_cancelled_task_cannot_be_updated_and_an_unknown_one_is_not_found(api):
    task = register(api, "http://example.com/hook", schedule=FAR_CRON)
    assert api("DELETE", f"/v1/tasks/{task['id']}").status == 204
    refused = api("PATCH", f"/v1/tasks/{task['id']}", {"name": "x"})
    assert refused.status == 409
    assert refused.body["error"]["code"] == "invalid_state"
    missing = api("PATCH", "/v1/tasks/01J0000000000000000000000Z", {"name": "x"})
    assert missing.status == 404
    assert missing.body["error"]["code"] == "task_not_found"


def test_concurrent_updates_never_lose_each_other(api):
    """Each PATCH is applied to the task as it is when written (a lost race is read again):
    four clients changing four different things all see their change kept. The clients are four
    API functions (one request at a time each, as a Lambda environment runs them: Powertools'
    resolver keeps the current request in the app), so they race on the table, not in the app."""
    from functions.api.common import tasks
    from shared.api.models.task_patches import TaskPatchIn

    task = register(api, "http://example.com/hook", schedule=FAR_CRON, payload={})
    bodies = [{"name": "n0"}, {"retry": {"max_attempts": 5}}, {"misfire": "fire_now"}, {"payload": {"from": 3}}]
    barrier = threading.Barrier(len(bodies))
    versions: list[int] = []

    def change(body: dict) -> None:
        patch = TaskPatchIn.model_validate(body)
        barrier.wait()
        changed = tasks().update("default", task["id"], patch.to_patch())
        versions.append(changed.version)

    threads = [threading.Thread(target=change, args=(body,)) for body in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(versions) == 4
    assert len(set(versions)) == 4  # four writes, one after another
    final = api("GET", f"/v1/tasks/{task['id']}").body
    assert final["name"] == "n0"
    assert final["retry"]["max_attempts"] == 5
    assert final["misfire"] == "fire_now"
    assert final["payload"] == {"from": 3}
    assert final["version"] >= task["version"] + 4


def test_if_match_refuses_a_change_computed_on_an_old_version(api):
    """A client doing read-modify-write names the version it read: a change made meanwhile by
    someone else is not overwritten."""
    task = register(api, "http://example.com/hook", schedule=FAR_CRON, payload={"n": 1})
    read = api("GET", f"/v1/tasks/{task['id']}")
    assert read.headers["ETag"] == f'"{task["version"]}"'
    assert api("PATCH", f"/v1/tasks/{task['id']}", {"name": "other-client"}).status == 200
    stale = api("PATCH", f"/v1/tasks/{task['id']}", {"payload": {"n": 2}}, {"If-Match": read.headers["ETag"]})
    assert stale.status == 412
    assert stale.body["error"]["code"] == "version_mismatch"
    fresh = api("GET", f"/v1/tasks/{task['id']}")
    assert fresh.body["payload"] == {"n": 1}
    ok = api("PATCH", f"/v1/tasks/{task['id']}", {"payload": {"n": 2}}, {"If-Match": fresh.headers["ETag"]})
    assert ok.status == 200
    assert ok.body["payload"] == {"n": 2}
    assert ok.body["name"] == "other-client"
    bad = api("PATCH", f"/v1/tasks/{task['id']}", {"name": "x"}, {"If-Match": "yesterday"})
    assert bad.status == 400
    assert bad.body["error"]["details"][0]["field"] == "If-Match"


def test_a_lost_race_is_read_again_and_re_applied(aws):
    """The optimistic lock itself: a change computed on a version that moved is written again
    on the new one, keeping what the other writer did."""
    from functions.api.common import tasks
    from shared.domain.patches import TaskPatch
    from shared.domain.schedules import Cron
    from shared.domain.tasks import HttpTarget, TaskSpec

    tasks.cache_clear()
    svc = tasks()
    created = svc.register("t", TaskSpec(Cron("0 0 1 1 *"), (HttpTarget("http://example.com"),)))
    calls = []
    repository = svc.repository

    class Racing:
        """The table as read by the renaming client: another client writes between its first
        read and its write."""

        def __getattr__(self, name):
            return getattr(repository, name)

        def get(self, tenant, task_id):
            task = repository.get(tenant, task_id)
            calls.append(task.version)
            if len(calls) == 1:
                svc.update("t", created.id, TaskPatch(payload={"x": 1}))
            return task

    final = replace(svc, repository=Racing()).update("t", created.id, TaskPatch(name="renamed"))
    assert len(calls) == 2
    assert calls[1] > calls[0]
    assert final.name == "renamed"
    assert final.payload == {"x": 1}
    tasks.cache_clear()


# --- run now ----------------------------------------------------------------------------------


def test_run_now_fires_one_extra_run_with_its_own_id_and_leaves_the_schedule_alone(api, pipeline, receiver):
    url = receiver.script("/now", 200)
    task = register(api, url, schedule=FAR_CRON, payload={"k": "v"})
    first = api("POST", f"/v1/tasks/{task['id']}/run")
    assert first.status == 202, first.body
    second = api("POST", f"/v1/tasks/{task['id']}/run")
    assert first.body["run_id"] != second.body["run_id"]
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/now")) == 2, timeout=10)
    pipeline.settle()
    calls = receiver.calls_to("/now")
    assert sorted(c.body["run_id"] for c in calls) == sorted([first.body["run_id"], second.body["run_id"]])
    for call in calls:
        assert call.body["task_id"] == task["id"]
        assert call.headers["Sundial-Task-Id"] == task["id"]
        assert call.headers["Idempotency-Key"] == call.body["run_id"]
        assert call.body["payload"] == {"k": "v"}
    after = api("GET", f"/v1/tasks/{task['id']}").body
    assert after["next_fire_at"] == task["next_fire_at"]
    assert after["status"] == "scheduled"
    history = runs(api, task["id"])
    assert {r["run_id"] for r in history} == {first.body["run_id"], second.body["run_id"]}
    assert {r["status"] for r in history} == {"succeeded"}
    assert all(r["task_id"] == task["id"] for r in history)

    def one_task() -> None:  # an extra run is not a task of its own
        assert [t["id"] for t in api("GET", "/v1/tasks").body["items"]] == [task["id"]]

    eventually(one_task)


def test_run_now_of_a_finished_one_shot_task_comes_first_in_its_history(api, pipeline, receiver):
    """A failed run fired again by hand: the history stays newest first across pages."""
    url = receiver.script("/again", 400, 200)
    task = register(api, url)
    assert pipeline.fire(until=lambda: [r["status"] for r in runs(api, task["id"])] == ["failed"], timeout=10)
    again = api("POST", f"/v1/tasks/{task['id']}/run")
    assert again.status == 202  # a completed task runs by hand
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/again")) == 2, timeout=10)
    assert pipeline.fire(until=lambda: runs(api, task["id"])[0]["status"] == "succeeded", timeout=5)
    history = runs(api, task["id"])
    assert [r["status"] for r in history] == ["succeeded", "failed"]
    assert history[0]["run_id"] == again.body["run_id"]
    first = api("GET", f"/v1/tasks/{task['id']}/runs?limit=1").body
    second = api("GET", f"/v1/tasks/{task['id']}/runs?limit=1&cursor={first['next_cursor']}").body
    assert [r["run_id"] for r in first["items"] + second["items"]] == [r["run_id"] for r in history]
    assert second["next_cursor"] is None


def test_run_now_is_refused_for_a_paused_or_cancelled_task(api):
    task = register(api, "http://example.com/hook", schedule=FAR_CRON)
    api("POST", f"/v1/tasks/{task['id']}/pause")
    paused = api("POST", f"/v1/tasks/{task['id']}/run")
    assert paused.status == 409
    assert "resume" in paused.body["error"]["message"]
    api("DELETE", f"/v1/tasks/{task['id']}")
    assert api("POST", f"/v1/tasks/{task['id']}/run").status == 409
    assert api("POST", "/v1/tasks/01J0000000000000000000000Z/run").status == 404


def test_run_now_retries_and_its_run_shows_in_the_history(api, pipeline, receiver):
    url = receiver.script("/flaky-now", 500, 200)
    task = register(api, url, schedule=FAR_CRON, retry={"max_attempts": 3, "backoff": "fixed", "interval_seconds": 1})
    run_id = api("POST", f"/v1/tasks/{task['id']}/run").body["run_id"]
    assert pipeline.fire(until=lambda: [r["status"] for r in runs(api, task["id"])] == ["succeeded"], timeout=12)
    (run,) = runs(api, task["id"])
    assert run["run_id"] == run_id
    assert run["attempts"] == 2
    assert [c.body["attempt"] for c in receiver.calls_to("/flaky-now")] == [1, 2]


@pytest.mark.parametrize("stop", ["pause", "cancel"])
def test_a_run_now_not_fired_before_its_task_is_paused_or_cancelled_never_fires(api, pipeline, receiver, stop):
    url = receiver.script("/stopped", 200)
    task = register(api, url, schedule=FAR_CRON)
    run_id = api("POST", f"/v1/tasks/{task['id']}/run").body["run_id"]  # staged at once
    if stop == "pause":
        assert api("POST", f"/v1/tasks/{task['id']}/pause").status == 200
    else:
        assert api("DELETE", f"/v1/tasks/{task['id']}").status == 204
    assert pipeline.fire(until=lambda: runs(api, task["id"])[0]["status"] == "skipped", timeout=10)
    if stop == "pause":
        assert api("POST", f"/v1/tasks/{task['id']}/resume").status == 200  # does not bring it back
    pipeline.settle()
    assert receiver.calls_to("/stopped") == []
    (run,) = runs(api, task["id"])
    assert run["run_id"] == run_id
    assert run["attempts"] == 0
    assert run["last_error"] == f"its task was {'paused' if stop == 'pause' else 'cancelled'} before this run fired"


def test_a_pause_stops_the_retries_of_a_run_now(api, pipeline, receiver):
    url = receiver.script("/paused-retry", 500, 200)
    # a retry 5 s after the failure: the test sees the run retrying and pauses it in that time,
    # however slow a loaded machine makes its polls
    task = register(api, url, schedule=FAR_CRON, retry={"max_attempts": 3, "backoff": "fixed", "interval_seconds": 5})
    api("POST", f"/v1/tasks/{task['id']}/run")
    assert pipeline.fire(until=lambda: [r["status"] for r in runs(api, task["id"])] == ["retrying"], timeout=10)
    api("POST", f"/v1/tasks/{task['id']}/pause")
    assert pipeline.fire(until=lambda: runs(api, task["id"])[0]["status"] == "skipped", timeout=15)
    pipeline.settle()
    assert [c.body["attempt"] for c in receiver.calls_to("/paused-retry")] == [1]
    (run,) = runs(api, task["id"])
    assert run["attempts"] == 1
    assert "paused" in run["last_error"]


def test_a_run_now_of_a_task_resumed_before_its_claim_fires(api, pipeline, receiver):
    url = receiver.script("/resumed", 200)
    task = register(api, url, schedule=FAR_CRON)
    run_id = api("POST", f"/v1/tasks/{task['id']}/run").body["run_id"]
    api("POST", f"/v1/tasks/{task['id']}/pause")
    api("POST", f"/v1/tasks/{task['id']}/resume")
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/resumed")) == 1, timeout=10)
    assert receiver.calls_to("/resumed")[0].body["run_id"] == run_id


# --- batch ------------------------------------------------------------------------------------


def test_a_batch_accepts_the_good_specs_and_rejects_the_bad_ones_each_on_its_own(api, pipeline, receiver):
    url = receiver.script("/batch", 200)
    body = {
        "tasks": [
            spec(url, name="good-0"),
            {**spec(url), "schedule": {"cron": "61 * * * *"}},
            spec(url, name="good-2", schedule=FAR_CRON),
            {"schedule": {"at": "2020-01-01T00:00:00Z"}, "target": {"http": {"url": url}}},
            {"target": {"http": {"url": url}}},
            "not a spec",
        ]
    }
    answer = api("POST", "/v1/tasks:batch", body)
    assert answer.status == 200, answer.body
    items = answer.body["items"]
    assert [i["index"] for i in items] == [0, 1, 2, 3, 4, 5]
    assert [("task" in i) for i in items] == [True, False, True, False, False, False]
    assert items[5]["error"]["code"] == "validation_error"
    assert items[1]["error"]["code"] == "validation_error"
    assert [d["field"] for d in items[1]["error"]["details"]] == ["schedule.cron"]
    assert [d["field"] for d in items[3]["error"]["details"]] == ["schedule.at"]
    assert [d["field"] for d in items[4]["error"]["details"]] == ["schedule"]
    for item in (items[0], items[2]):
        stored = api("GET", f"/v1/tasks/{item['task']['id']}")
        assert stored.status == 200
        assert stored.body == item["task"]
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/batch")) == 1, timeout=10)
    assert receiver.calls_to("/batch")[0].body["task_id"] == items[0]["task"]["id"]


def test_a_batch_of_100_is_written_in_batches_and_over_100_is_refused(api, monkeypatch):
    from pynamodb.connection.base import Connection

    calls = []
    real = Connection.batch_write_item

    def counting(self, *args, **kwargs):
        calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Connection, "batch_write_item", counting)
    many = {"tasks": [spec("http://example.com/hook", name=f"b{i}", schedule=FAR_CRON) for i in range(100)]}
    answer = api("POST", "/v1/tasks:batch", many)
    assert answer.status == 200
    assert all("task" in i for i in answer.body["items"])
    assert len(calls) == 4  # 25 items per BatchWriteItem, not 100 writes
    too_many = api("POST", "/v1/tasks:batch", {"tasks": many["tasks"] + [many["tasks"][0]]})
    assert too_many.status == 400
    assert too_many.body["error"]["details"][0]["field"] == "tasks"


def test_a_batch_the_store_writes_only_in_part_answers_each_task_as_it_is(api, monkeypatch):
    """Throttling: unwritten items are sent again; those still unwritten, and a whole call that
    fails, answer their index with an error; every task answered as registered exists."""
    from pynamodb.connection.base import Connection
    from pynamodb.exceptions import PutError

    real = Connection.batch_write_item
    seen: set[str] = set()

    def throttled(self, table_name, put_items=None, **kwargs):
        names = [item["name"]["S"] for item in put_items]
        if "b30" in names:
            raise PutError("ProvisionedThroughputExceededException")
        left = [i for i, n in zip(put_items, names, strict=True) if n == "b3" or (n == "b7" and n not in seen)]
        seen.update(names)
        written = [i for i in put_items if i not in left]
        answer = real(self, table_name, put_items=written, **kwargs) if written else {}
        return {**answer, "UnprocessedItems": {table_name: [{"PutRequest": {"Item": i}} for i in left]}}

    monkeypatch.setattr(Connection, "batch_write_item", throttled)
    many = {"tasks": [spec("http://example.com/hook", name=f"b{i}", schedule=FAR_CRON) for i in range(100)]}
    answer = api("POST", "/v1/tasks:batch", many)
    assert answer.status == 200, answer.body
    items = answer.body["items"]
    refused = {i["index"] for i in items if "error" in i}
    assert refused == {3, *range(25, 50)}  # b7 went through on its second send
    assert {items[i]["error"]["code"] for i in refused} == {"storage_unavailable"}
    monkeypatch.undo()

    def the_written_ones() -> None:
        listed = api("GET", "/v1/tasks?limit=100").body
        assert sorted(t["id"] for t in listed["items"]) == sorted(i["task"]["id"] for i in items if "task" in i)
        assert len(listed["items"]) == 74

    eventually(the_written_ones)


# --- idempotent registration -----------------------------------------------------------------


def test_the_same_idempotency_key_twice_creates_one_task(api, pipeline, receiver):
    url = receiver.script("/once", 200)
    body = spec(url, name="idem")
    first = api("POST", "/v1/tasks", body, {"Idempotency-Key": "order-123"})
    again = api("POST", "/v1/tasks", body, {"Idempotency-Key": "order-123"})
    assert first.status == again.status == 201
    assert again.body == first.body
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert "Idempotent-Replayed" not in first.headers

    def one_task() -> None:
        assert [t["id"] for t in api("GET", "/v1/tasks").body["items"]] == [first.body["id"]]

    eventually(one_task)
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/once")) == 1, timeout=10)
    pipeline.settle()
    assert len(receiver.calls_to("/once")) == 1


def test_an_idempotency_key_reused_for_another_body_is_refused(api):
    body = spec("http://example.com/hook", schedule=FAR_CRON)
    assert api("POST", "/v1/tasks", body, {"Idempotency-Key": "k1"}).status == 201
    other = api("POST", "/v1/tasks", {**body, "name": "other"}, {"Idempotency-Key": "k1"})
    assert other.status == 422
    assert other.body["error"]["code"] == "idempotency_key_reused"
    fresh = api("POST", "/v1/tasks", {**body, "name": "other"}, {"Idempotency-Key": "k2"})
    assert fresh.status == 201

    def two_tasks() -> None:
        assert len(api("GET", "/v1/tasks").body["items"]) == 2

    eventually(two_tasks)


def test_a_refused_request_stores_nothing_and_its_retry_runs_again(api):
    bad = {**spec("http://example.com/hook"), "schedule": {"cron": "nope"}}
    assert api("POST", "/v1/tasks", bad, {"Idempotency-Key": "k"}).status == 400
    good = api("POST", "/v1/tasks", bad | {"schedule": FAR_CRON}, {"Idempotency-Key": "k"})
    assert good.status == 201  # another body, but the first attempt left no answer behind


def test_a_store_failing_after_the_work_returns_the_works_own_answer(api, monkeypatch):
    """The task exists: a 503 would make the client retry what succeeded."""
    from aws_lambda_powertools.utilities.idempotency.persistence.dynamodb import DynamoDBPersistenceLayer

    def fail(self, record):
        raise RuntimeError("throttled")

    monkeypatch.setattr(DynamoDBPersistenceLayer, "_update_record", fail)
    monkeypatch.setattr(DynamoDBPersistenceLayer, "_delete_record", fail)
    created = api("POST", "/v1/tasks", spec("http://example.com/hook"), {"Idempotency-Key": "kept"})
    assert created.status == 201, created.body
    assert api("GET", f"/v1/tasks/{created.body['id']}").status == 200
    bad = {**spec("http://example.com/hook"), "schedule": {"cron": "nope"}}
    refused = api("POST", "/v1/tasks", bad, {"Idempotency-Key": "refused"})
    assert refused.status == 400  # the work's own error, not the store's
    assert refused.body["error"]["details"][0]["field"] == "schedule.cron"


def test_a_store_failing_before_the_work_runs_nothing(api, monkeypatch):
    from aws_lambda_powertools.utilities.idempotency.persistence.dynamodb import DynamoDBPersistenceLayer

    def fail(self, record):
        raise RuntimeError("throttled")

    monkeypatch.setattr(DynamoDBPersistenceLayer, "_put_record", fail)
    answer = api("POST", "/v1/tasks", spec("http://example.com/hook"), {"Idempotency-Key": "never"})
    assert answer.status == 503
    assert answer.body["error"]["code"] == "storage_unavailable"
    # An empty list proves nothing while the index lags: a task registered after it is listed
    # alone once the list shows it (the index shows writes in their order).
    monkeypatch.undo()
    later = api("POST", "/v1/tasks", spec("http://example.com/hook")).body["id"]

    def only_the_later_one() -> None:
        assert [t["id"] for t in api("GET", "/v1/tasks").body["items"]] == [later]

    eventually(only_the_later_one)


def test_idempotency_keys_cover_batches_and_run_now_and_are_checked(api):
    batch = {"tasks": [spec("http://example.com/hook", schedule=FAR_CRON)]}
    first = api("POST", "/v1/tasks:batch", batch, {"Idempotency-Key": "b"})
    again = api("POST", "/v1/tasks:batch", batch, {"Idempotency-Key": "b"})
    assert again.body == first.body
    task_id = first.body["items"][0]["task"]["id"]
    run = api("POST", f"/v1/tasks/{task_id}/run", None, {"Idempotency-Key": "r"})
    assert api("POST", f"/v1/tasks/{task_id}/run", None, {"Idempotency-Key": "r"}).body == run.body
    too_long = api("POST", "/v1/tasks", batch["tasks"][0], {"Idempotency-Key": "x" * 256})
    assert too_long.status == 400
    assert too_long.body["error"]["details"][0]["field"] == "Idempotency-Key"


# --- listing ----------------------------------------------------------------------------------


def test_paging_returns_every_task_exactly_once_newest_first(api):
    created = []
    for i in range(23):
        answer = api(
            "POST", "/v1/tasks", spec("http://example.com/hook", name=f"{'a' if i % 3 else 'b'}-{i}", schedule=FAR_CRON)
        )
        created.append(answer.body["id"])

    def every_one_once() -> None:
        seen: list[str] = []
        cursor = None
        pages = 0
        while True:
            query = f"?limit=5&cursor={cursor}" if cursor else "?limit=5"
            page = api("GET", f"/v1/tasks{query}").body
            seen += [t["id"] for t in page["items"]]
            pages += 1
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert pages == 5
        assert seen == list(reversed(created))

    eventually(every_one_once)


def test_listing_filters_by_name_prefix_and_status_across_pages(api):
    ids = {}
    for i in range(12):
        name = f"{'orders' if i % 2 else 'billing'}-{i}"
        ids[name] = api("POST", "/v1/tasks", spec("http://example.com/hook", name=name, schedule=FAR_CRON)).body["id"]
    api("POST", f"/v1/tasks/{ids['orders-3']}/pause")
    api("POST", f"/v1/tasks/{ids['billing-4']}/pause")

    def filtered() -> None:
        orders, cursor = [], None
        while True:
            page = api("GET", "/v1/tasks?name_prefix=orders&limit=2" + (f"&cursor={cursor}" if cursor else "")).body
            orders += [t["name"] for t in page["items"]]
            cursor = page["next_cursor"]
            if not cursor:
                break
        assert orders == [f"orders-{i}" for i in (11, 9, 7, 5, 3, 1)]
        paused = api("GET", "/v1/tasks?status=paused&name_prefix=orders").body["items"]
        assert [t["name"] for t in paused] == ["orders-3"]

    eventually(filtered)
    assert api("GET", "/v1/tasks?name_prefix=").status == 400


# --- dead letters -----------------------------------------------------------------------------


def test_a_dead_letter_redriven_after_its_receiver_recovers_fires_once_and_succeeds(api, pipeline, receiver):
    url = receiver.script("/recovering", 503, 503, 200)
    task = register(api, url, payload={"p": 1}, retry={"max_attempts": 2, "backoff": "fixed", "interval_seconds": 1})
    assert pipeline.fire(until=lambda: [r["status"] for r in runs(api, task["id"])] == ["dead_lettered"], timeout=12)
    listed = api("GET", "/v1/dead-letters").body
    (letter,) = listed["items"]
    assert listed["next_cursor"] is None
    assert letter["task_id"] == task["id"]
    assert letter["status"] == "dead_lettered"
    assert letter["attempts"] == 2
    assert "retries exhausted" in letter["reason"]
    assert letter["payload"] == {"p": 1}
    assert api("GET", f"/v1/dead-letters/{letter['id']}").body == letter
    assert api("GET", "/v1/dead-letters/01J0000000000000000000000Z").status == 404
    redriven = api("POST", "/v1/dead-letters/redrive", {"ids": [letter["id"]]})
    assert redriven.status == 200, redriven.body
    assert redriven.body["redriven"] == 1
    new_run = redriven.body["runs"][0]["run_id"]
    assert api("POST", "/v1/dead-letters/redrive", {"ids": [letter["id"]]}).body["redriven"] == 0
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/recovering")) == 3, timeout=10)
    pipeline.settle()
    calls = receiver.calls_to("/recovering")
    assert len(calls) == 3  # two failed attempts, then the redrive once
    assert calls[2].body["run_id"] == new_run
    assert calls[2].body["task_id"] == task["id"]
    assert calls[2].body["payload"] == {"p": 1}
    history = {r["run_id"]: r["status"] for r in runs(api, task["id"])}
    assert history == {letter["run_id"]: "dead_lettered", new_run: "succeeded"}
    shown = api("GET", f"/v1/dead-letters/{letter['id']}").body
    assert shown["status"] == "redriven"
    assert shown["redriven_run_id"] == new_run
    assert api("GET", "/v1/dead-letters?status=dead_lettered").body["items"] == []


def test_a_redrive_fires_what_the_dead_letter_recorded_even_when_its_task_is_paused(api, pipeline, receiver):
    """A redrive is an operator's explicit act on a dead letter: unlike a run now, a pause of
    its task does not stop it (the letter would be marked redriven and never fire)."""
    url = receiver.script("/paused-redrive", 503, 200)
    task = register(api, url, schedule=FAR_CRON, retry={"max_attempts": 1})
    api("POST", f"/v1/tasks/{task['id']}/run")
    waiting = "/v1/dead-letters?status=dead_lettered"  # what "all" reads: the status index, a moment behind
    assert pipeline.fire(until=lambda: api("GET", waiting).body["items"] != [], timeout=10)
    api("POST", f"/v1/tasks/{task['id']}/pause")
    redriven = api("POST", "/v1/dead-letters/redrive", {"all": True}).body
    assert redriven["redriven"] == 1
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/paused-redrive")) == 2, timeout=10)
    assert receiver.calls_to("/paused-redrive")[1].body["run_id"] == redriven["runs"][0]["run_id"]


def test_an_occurrence_the_trigger_keeps_failing_on_is_given_up_as_a_dead_letter_and_redriven(
    api, pipeline, receiver, monkeypatch
):
    """A bug (or an outage) that fails the trigger on every delivery: on the last one the
    occurrence is dead-lettered in the table and in the DLQ (not left "firing" for ever), and
    fires once when redriven after the fix."""
    import json

    from functions.trigger import handler as trigger_handler
    from shared.services.firing import call

    for i in range(2):
        policy = {"deadLetterTargetArn": pipeline.arns["dead-letters"], "maxReceiveCount": "3"}
        pipeline.sqs.set_queue_attributes(
            QueueUrl=pipeline.urls[f"delay-{i}"],
            Attributes={"VisibilityTimeout": "4", "RedrivePolicy": json.dumps(policy)},  # > the 2 s lease
        )
    monkeypatch.setattr(trigger_handler.trigger(), "max_receives", 2)
    real_call = call.Caller._call
    broken = [True]

    def buggy(self, *args, **kwargs):
        if broken[0]:
            raise RuntimeError("a bug in delivery")
        return real_call(self, *args, **kwargs)

    monkeypatch.setattr(call.Caller, "_call", buggy)
    url = receiver.script("/buggy", 200)
    task = register(api, url)
    assert pipeline.fire(until=lambda: bool(api("GET", "/v1/dead-letters").body["items"]), timeout=15)
    (letter,) = api("GET", "/v1/dead-letters").body["items"]
    assert letter["task_id"] == task["id"]
    assert "failed on it 2 times" in letter["reason"]
    assert "a bug in delivery" in letter["reason"]
    assert [r["status"] for r in runs(api, task["id"])] == ["dead_lettered"]
    failed = api("GET", f"/v1/tasks/{task['id']}").body
    assert (failed["status"], failed["last_run"]["status"]) == ("failed", "dead_lettered")
    (queued,) = pipeline.dead_letters()
    assert queued["run_id"] == letter["run_id"]
    assert receiver.calls_to("/buggy") == []
    broken[0] = False  # the fix is deployed
    assert api("POST", "/v1/dead-letters/redrive", {"ids": [letter["id"]]}).body["redriven"] == 1
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/buggy")) == 1, timeout=10)
    pipeline.settle()
    assert len(receiver.calls_to("/buggy")) == 1
    # the redrive succeeded: the task's latest occurrence is it, and the task is completed
    healed = api("GET", f"/v1/tasks/{task['id']}").body
    assert (healed["status"], healed["last_run"]["status"]) == ("completed", "succeeded")
    assert healed["last_run"]["run_id"] != failed["last_run"]["run_id"]


def test_redrive_all_fires_each_dead_letter_once_even_when_asked_twice_at_once(api, pipeline, receiver):
    url = receiver.script("/all", 400, 400, 200)
    tasks = [register(api, url, name=f"t{i}") for i in range(2)]
    waiting = "/v1/dead-letters?status=dead_lettered"  # what "all" reads: the status index, a moment behind
    assert pipeline.fire(until=lambda: len(api("GET", waiting).body["items"]) == 2, timeout=12)
    answers = []
    threads = [
        threading.Thread(target=lambda: answers.append(api("POST", "/v1/dead-letters/redrive", {"all": True})))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(a.body["redriven"] for a in answers) in ([0, 2], [1, 1])
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/all")) == 4, timeout=10)
    pipeline.settle()
    assert len(receiver.calls_to("/all")) == 4
    assert {c.body["task_id"] for c in receiver.calls_to("/all")[2:]} == {t["id"] for t in tasks}


def test_a_redrive_request_must_say_what_to_redrive(api):
    for body in ({}, {"all": False}, {"ids": []}, {"ids": ["x"], "all": True}):
        answer = api("POST", "/v1/dead-letters/redrive", body)
        assert answer.status == 400, body
    assert api("POST", "/v1/dead-letters/redrive", {"ids": ["01J0000000000000000000000Z"]}).status == 404


def test_a_dead_letter_is_redriven_by_one_transaction_only(aws):
    """Two redrives that both read the letter before either wrote: the second transaction is
    refused as a whole (no second run, no second history entry)."""
    from datetime import UTC, timedelta

    from shared.domain.errors import ConcurrentUpdate
    from shared.domain.registration import new_task
    from shared.domain.retry import RetryPolicy
    from shared.domain.schedules import At
    from shared.domain.tasks import DeadLetter, DeadLetterRef, HttpTarget, TaskSpec
    from shared.domain.times import truncate_ms
    from shared.store.dead_letters import DynamoDeadLetters
    from shared.store.dynamo import DynamoTaskRepository
    from shared.store.keys import task_key
    from shared.store.models import RunItem, TaskItem

    now = truncate_ms(datetime.now(UTC))
    targets = (HttpTarget("http://example.com"),)
    letters = DynamoDeadLetters(retention_ms=86_400_000)
    letter = DeadLetter(
        "01KA0000000000000000000000", "t", "01KA0000000000000000000001", "01KA0000000000000000000000",
        now - timedelta(minutes=1), now, 3, "retries exhausted", targets, False, {"a": 1}, RetryPolicy(),
    )  # fmt: skip
    letters.record(letter)
    repository = DynamoTaskRepository(list_shards=2)

    def extra_run() -> object:
        run = new_task(TaskSpec(At(now), targets), tenant="t", now=now, shard=0)
        return replace(run, parent_id=letter.task_id)

    first, second = extra_run(), extra_run()
    repository.create_run(first, staged=False, redrive=DeadLetterRef("t", letter.id))
    with pytest.raises(ConcurrentUpdate):
        repository.create_run(second, staged=False, redrive=DeadLetterRef("t", letter.id))
    assert letters.get("t", letter.id).status == "redriven"
    assert [i.child for i in RunItem.query(f"R#{letter.task_id}")] == [first.id]
    pk, sk = task_key(second.id)
    assert TaskItem.count(pk, TaskItem.sk == sk) == 0


# --- a paused task's next fire -------------------------------------------------------------------


class _Later:
    """The process's clock ``ahead_ms`` past the wall (a pause that has lasted that long)."""

    def __init__(self, ahead_ms: int) -> None:
        from shared.domain.times import WallClock

        self.wall, self.ahead_ms = WallClock(), ahead_ms

    def now_ms(self) -> int:
        return self.wall.now_ms() + self.ahead_ms

    def sleep(self, seconds: float) -> None:
        self.wall.sleep(seconds)


@pytest.fixture
def ten_minutes_later():
    """Run the block with the process's clock ten minutes ahead (the API reads it as its now)."""
    from contextlib import contextmanager

    from shared.domain import times

    @contextmanager
    def later():
        before = times.use_clock(_Later(600_000))
        try:
            yield
        finally:
            times.use_clock(before)

    return later


@pytest.mark.parametrize(
    ("schedule", "misfire"),
    [({"every_seconds": 60}, "skip"), ({"cron": "30 * * * * *"}, "skip"), ({"every_seconds": 60}, "fire_now")],
)
def test_a_paused_tasks_next_fire_is_never_gone_by_but_when_resuming_now_fires_it(
    api, ten_minutes_later, schedule, misfire
) -> None:
    """Paused, the occurrence it was armed for goes by: its next_fire_at is then the time a resume
    at that moment fires it (skip: the schedule's first time from then; fire_now: then, at once),
    and the resume arms that very time."""
    from shared.domain.times import utc_now

    task = register(api, "http://127.0.0.1:9/", schedule=schedule, misfire=misfire)
    paused = api("POST", f"/v1/tasks/{task['id']}/pause").body
    assert paused["status"] == "paused"
    assert paused["next_fire_at"] == task["next_fire_at"]  # still ahead: the occurrence it is armed for

    def listed_paused() -> None:
        assert [t["status"] for t in api("GET", "/v1/tasks").body["items"] if t["id"] == task["id"]] == ["paused"]

    eventually(listed_paused)  # the list's index has the pause
    with ten_minutes_later():
        looked = utc_now()
        shown = api("GET", f"/v1/tasks/{task['id']}").body
        listed = api("GET", "/v1/tasks").body["items"]
        resumed = api("POST", f"/v1/tasks/{task['id']}/resume").body
    assert shown["status"] == "paused"
    next_fire = parse(shown["next_fire_at"])
    assert next_fire >= looked  # never a time gone by
    (in_list,) = [parse(t["next_fire_at"]) for t in listed if t["id"] == task["id"]]
    assert in_list >= looked  # the list answers the same
    if misfire == "skip":
        assert (next_fire - looked).total_seconds() <= 60  # the schedule's first time from then
        assert resumed["next_fire_at"] == shown["next_fire_at"]  # what the resume armed
    else:
        assert (next_fire - looked).total_seconds() < 1  # at once
        assert parse(resumed["next_fire_at"]) < looked  # the missed occurrence, fired at once


def test_a_paused_one_shot_whose_time_went_by_with_misfire_skip_has_no_next_fire(api, ten_minutes_later) -> None:
    """Resuming it would complete it, firing nothing: null, as a task that can no longer fire."""
    task = register(api, "http://127.0.0.1:9/", schedule={"after_seconds": 60}, misfire="skip")
    assert api("POST", f"/v1/tasks/{task['id']}/pause").body["next_fire_at"] == task["next_fire_at"]
    with ten_minutes_later():
        shown = api("GET", f"/v1/tasks/{task['id']}").body
        resumed = api("POST", f"/v1/tasks/{task['id']}/resume").body
    assert shown["status"] == "paused"
    assert shown["next_fire_at"] is None
    assert resumed["status"] == "completed"
