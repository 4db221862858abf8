"""`make run` end to end: managing tasks over real HTTP (docs/management.md).

The runtime is shared by the whole session: every test names its tasks with a prefix of its
own and lists with ``name_prefix``."""

from __future__ import annotations

import time
import uuid

import pytest

from tests.e2e.test_local_runtime import completed, parse, register, runs, settled, wait
from tests.support.eventually import eventually

pytestmark = pytest.mark.e2e

FAR_CRON = {"cron": "0 0 1 1 *"}


def spec(url: str, **fields):
    return {"schedule": {"after_seconds": 2}, "target": {"http": {"url": url}}, **fields}


def prefix() -> str:
    return f"m-{uuid.uuid4().hex[:8]}-"


def test_an_update_moves_the_fire_and_the_old_staged_occurrence_never_fires(sundial, receiver):
    url = receiver.script("/e2e-moved", 200)
    # due in 6 s: staged by its writer at once, its message claimed a lead (2 s) before that, well
    # after the update below (an occurrence claimed before an update fires as it was claimed: due
    # in 2 s, its claim came before the update on a loaded machine and both fired)
    task = register(sundial, url, schedule={"after_seconds": 6})
    status, moved = sundial.call("PATCH", f"/v1/tasks/{task['id']}", {"schedule": {"after_seconds": 10}})
    assert status == 200, moved
    assert parse(moved["next_fire_at"]) - parse(task["next_fire_at"]) > 3.5
    (call,) = receiver.wait_for("/e2e-moved", 1, timeout=20)
    completed(sundial, task["id"])  # the old occurrence, due first, was dropped before
    assert len(receiver.calls_to("/e2e-moved")) == 1
    assert call.at >= parse(moved["next_fire_at"])
    assert call.body["scheduled_for"] == moved["next_fire_at"]


def test_pause_stops_fires_and_resume_follows_the_misfire_policy(sundial, receiver):
    recurring = register(sundial, receiver.script("/e2e-every", 200), schedule={"every_seconds": 1})
    assert receiver.wait_for("/e2e-every", 2, timeout=10)
    # due in 5 s: its message is claimed a lead (2 s) before that, well after the pause below (a
    # claim made before a pause fires its occurrence: the pause stops what is not claimed yet)
    one_shot = register(sundial, receiver.script("/e2e-paused", 200), schedule={"after_seconds": 5})
    for task in (one_shot, recurring):
        status, paused = sundial.call("POST", f"/v1/tasks/{task['id']}/pause")
        assert status == 200
        assert paused["status"] == "paused"
    before = len(receiver.calls_to("/e2e-every"))
    # the one-shot's time passes while paused: a task due a second after it fires
    later = register(sundial, receiver.script("/e2e-paused-later", 200), schedule={"after_seconds": 6})
    assert receiver.wait_for("/e2e-paused-later", 1, timeout=15)
    settled(sundial, later["id"], "succeeded")
    assert receiver.calls_to("/e2e-paused") == []
    assert len(receiver.calls_to("/e2e-every")) <= before + 1  # at most the one in flight
    stopped = len(receiver.calls_to("/e2e-every"))
    resumed_at = time.time()
    _, resumed = sundial.call("POST", f"/v1/tasks/{one_shot['id']}/resume")
    assert resumed["status"] == "scheduled"  # fire_now (the one-shot default): fires once, now
    sundial.call("POST", f"/v1/tasks/{recurring['id']}/resume")  # skip: from now on
    assert receiver.wait_for("/e2e-paused", 1, timeout=10)
    assert receiver.wait_for("/e2e-every", stopped + 2, timeout=10)
    completed(sundial, one_shot["id"])  # its occurrence dropped while paused, then the one resume made
    assert len(receiver.calls_to("/e2e-paused")) == 1
    later = [parse(c.body["scheduled_for"]) for c in receiver.calls_to("/e2e-every")[stopped:]]
    assert min(later) >= resumed_at - 0.01  # nothing missed while paused fires
    sundial.call("DELETE", f"/v1/tasks/{recurring['id']}")


def test_run_now_fires_once_with_its_own_run_id(sundial, receiver):
    url = receiver.script("/e2e-now", 200)
    task = register(sundial, url, schedule=FAR_CRON)
    status, answer = sundial.call("POST", f"/v1/tasks/{task['id']}/run")
    assert status == 202
    (call,) = receiver.wait_for("/e2e-now", 1, timeout=10)
    settled(sundial, task["id"], "succeeded")
    assert len(receiver.calls_to("/e2e-now")) == 1
    assert call.body["run_id"] == answer["run_id"]
    assert call.body["task_id"] == task["id"]
    assert sundial.call("GET", f"/v1/tasks/{task['id']}")[1]["next_fire_at"] == task["next_fire_at"]


def test_a_batch_accepts_the_good_specs_and_rejects_the_bad(sundial, receiver):
    url = receiver.script("/e2e-batch", 200)
    name = prefix()
    body = {"tasks": [spec(url, name=name + "0"), {**spec(url), "schedule": {"cron": "x"}}, spec(url, name=name + "2")]}
    status, answer = sundial.call("POST", "/v1/tasks:batch", body)
    assert status == 200, answer
    items = answer["items"]
    assert ["task" in i for i in items] == [True, False, True]
    assert items[1]["error"]["details"][0]["field"] == "schedule.cron"
    assert len(receiver.wait_for("/e2e-batch", 2, timeout=10)) == 2

    def both_listed() -> None:
        listed = sundial.call("GET", f"/v1/tasks?name_prefix={name}")[1]["items"]
        assert {t["id"] for t in listed} == {items[0]["task"]["id"], items[2]["task"]["id"]}

    eventually(both_listed)


def test_the_same_idempotency_key_twice_creates_one_task(sundial, receiver):
    url = receiver.script("/e2e-idem", 200)
    name = prefix()
    key = {"Idempotency-Key": uuid.uuid4().hex}
    first = sundial.exchange("POST", "/v1/tasks", spec(url, name=name), key)
    again = sundial.exchange("POST", "/v1/tasks", spec(url, name=name), key)
    assert first[0] == again[0] == 201
    assert again[1] == first[1]
    assert again[2].get("Idempotent-Replayed") == "true"
    receiver.wait_for("/e2e-idem", 1, timeout=10)
    settled(sundial, first[1]["id"], "succeeded")
    assert len(receiver.calls_to("/e2e-idem")) == 1

    def one_listed() -> None:  # 2 s after the writes (its fire): longer than the index lags, so a second would show
        assert [t["id"] for t in sundial.call("GET", f"/v1/tasks?name_prefix={name}")[1]["items"]] == [first[1]["id"]]

    eventually(one_listed)


def test_paging_returns_every_task_exactly_once(sundial):
    name = prefix()
    batch = {"tasks": [spec("http://127.0.0.1:9/x", name=f"{name}{i:02d}", schedule=FAR_CRON) for i in range(12)]}
    created = [i["task"]["id"] for i in sundial.call("POST", "/v1/tasks:batch", batch)[1]["items"]]

    def every_one_once() -> None:
        seen: list[str] = []
        cursor = None
        while True:
            query = f"/v1/tasks?name_prefix={name}&limit=5" + (f"&cursor={cursor}" if cursor else "")
            page = sundial.call("GET", query)[1]
            seen += [t["id"] for t in page["items"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert sorted(seen) == sorted(created)
        assert len(seen) == len(set(seen)) == 12

    eventually(every_one_once)


def test_a_dead_letter_redriven_after_the_receiver_recovers_fires_once_and_succeeds(sundial, receiver):
    url = receiver.script("/e2e-dead", 503, 503, 200)
    task = register(sundial, url, retry={"max_attempts": 2, "backoff": "fixed", "interval_seconds": 1})
    assert wait(lambda: [r["status"] for r in runs(sundial, task["id"])] == ["dead_lettered"], 20)

    def waiting() -> list[dict]:  # read through the status index, which a write reaches a moment later
        letters = sundial.call("GET", "/v1/dead-letters?status=dead_lettered&limit=100")[1]["items"]
        return [d for d in letters if d["task_id"] == task["id"]]

    assert wait(lambda: bool(waiting()), 10)
    (letter,) = waiting()
    status, answer = sundial.call("POST", "/v1/dead-letters/redrive", {"ids": [letter["id"]]})
    assert status == 200
    assert answer["redriven"] == 1
    calls = receiver.wait_for("/e2e-dead", 3, timeout=10)
    assert wait(lambda: {r["status"] for r in runs(sundial, task["id"])} == {"dead_lettered", "succeeded"}, 10)
    assert len(receiver.calls_to("/e2e-dead")) == 3
    assert calls[2].body["run_id"] == answer["runs"][0]["run_id"]
    assert sundial.call("GET", f"/v1/dead-letters/{letter['id']}")[1]["status"] == "redriven"


def test_preview_and_next_fire_at_agree_for_a_calendar_rule(sundial):
    rule = {
        "repeat": {
            "level": "workday",
            "interval": 2,
            "calendar": "CN",
            "time": "09:00",
            "timezone": "Asia/Shanghai",
            "start": "2026-09-28T00:00:00+08:00",
        }
    }
    status, answer = sundial.call("POST", "/v1/schedules:preview", {"schedule": rule, "count": 4})
    assert status == 200, answer
    assert parse(answer["times"][0]) > time.time()  # without "after": from now on, as if registered now
    task = register(sundial, "http://127.0.0.1:9/none", schedule=rule, name=prefix())
    assert task["next_fire_at"] == answer["times"][0]
    # Workdays from Mon 28 Sep 2026: 28, 29, 30 Sep, (1-7 Oct: National Day), 8, 9, Sat 10 Oct
    # (a working day), 12, 13, 14: every second one
    past = sundial.call(
        "POST", "/v1/schedules:preview", {"schedule": rule, "count": 5, "after": "2026-09-28T00:00:00Z"}
    )
    assert past[1]["times"] == [
        "2026-09-28T01:00:00.000Z",
        "2026-09-30T01:00:00.000Z",
        "2026-10-09T01:00:00.000Z",
        "2026-10-12T01:00:00.000Z",
        "2026-10-14T01:00:00.000Z",
    ]
    sundial.call("DELETE", f"/v1/tasks/{task['id']}")
