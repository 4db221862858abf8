"""Alerts and self-pausing through the pipeline on moto, with real HTTP receivers: a dead
letter's alert, ``sundial.task.failing`` once at the threshold, ``pause_after_failures``, a
success setting the count back, and the API's side (validation, PATCH, batch, resume)."""

from __future__ import annotations

import pytest
from standardwebhooks.webhooks import Webhook

from tests.integration.test_pipeline import register, runs

pytestmark = pytest.mark.integration

ONCE = {"max_attempts": 1, "backoff": "fixed", "interval_seconds": 1}
EVERY_SECOND = {"every_seconds": 1}
ALERT_KEYS = {"type", "task_id", "run_id", "reason", "at"}


def alert_to(url: str, **fields) -> dict:
    return {"target": {"http": {"url": url, "timeout_seconds": 2}}, **fields}


def of_type(calls, kind: str) -> list:
    return [c for c in calls if c.body["type"] == kind]


def alerts_of(calls, kind: str) -> list:
    """Each alert of ``kind`` once, by its ``Idempotency-Key``: an alert whose first try the sender
    could not confirm (its answer later than the target's timeout on a loaded machine) is tried
    once more with the same key (shared/services/firing/alerts.py, at most two tries), which the
    receiver sees as a second call of the same alert."""
    tries: dict[str, list] = {}
    for call in of_type(calls, kind):
        tries.setdefault(call.headers["Idempotency-Key"], []).append(call)
    assert all(len(same) <= 2 for same in tries.values()), tries  # never more than the two tries
    return [same[0] for same in tries.values()]


def task_of(api, task_id: str) -> dict:
    answer = api("GET", f"/v1/tasks/{task_id}")
    assert answer.status == 200
    return answer.body


def test_a_dead_lettered_run_alerts_its_target_signed_with_the_run_and_the_reason(api, pipeline, receiver):
    secret = api("POST", "/v1/signing-secrets:rotate", {}).body["secret"]
    url = receiver.script("/down", 500)
    alerts = receiver.script("/alerts", 200)
    task = register(api, url, retry=ONCE, alert=alert_to(alerts))
    assert task["alert"]["target"]["http"]["url"] == alerts
    assert task["consecutive_failures"] == 0
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/alerts")) >= 1, timeout=10)
    pipeline.settle()  # nothing more comes
    (failed,) = receiver.calls_to("/down")
    (call,) = receiver.calls_to("/alerts")
    assert call.at >= failed.at
    assert set(call.body) == ALERT_KEYS
    assert call.body["type"] == "sundial.run.dead_lettered"
    assert call.body["task_id"] == task["id"]
    assert call.body["run_id"] == failed.body["run_id"]
    assert "500" in call.body["reason"]
    assert call.body["at"].endswith("Z")
    assert call.headers["Idempotency-Key"] == f"sundial.run.dead_lettered:{failed.body['run_id']}"
    assert call.headers["Sundial-Alert"] == "sundial.run.dead_lettered"
    assert call.headers["Sundial-Task-Id"] == task["id"]
    Webhook(secret).verify(call.raw, call.headers)  # raises when the signature is wrong
    (run,) = runs(api, task["id"])
    assert run["status"] == "dead_lettered"  # recorded, and fired once
    after = task_of(api, task["id"])
    assert after["status"] == "failed"  # not "completed": its one occurrence failed
    assert after["last_run"]["status"] == "dead_lettered"
    assert after["consecutive_failures"] == 1


def test_three_failed_occurrences_in_a_row_send_one_failing_alert(api, pipeline, receiver):
    url = receiver.script("/failing", 500)
    alerts = receiver.script("/watch", 200)
    task = register(api, url, schedule=EVERY_SECOND, retry=ONCE, alert=alert_to(alerts, after_consecutive_failures=3))
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/failing")) >= 5, timeout=20)
    pipeline.fire(until=lambda: len(of_type(receiver.calls_to("/watch"), "sundial.run.dead_lettered")) >= 5, timeout=3)
    calls = receiver.calls_to("/watch")
    (failing,) = alerts_of(calls, "sundial.task.failing")  # at the third, not again at the fourth or fifth
    third = receiver.calls_to("/failing")[2]
    assert set(failing.body) == ALERT_KEYS
    assert failing.body["task_id"] == task["id"]
    assert failing.body["run_id"] == third.body["run_id"]
    assert failing.body["reason"].startswith("3 occurrences in a row failed")
    assert failing.headers["Idempotency-Key"] == f"sundial.task.failing:{third.body['run_id']}"
    dead = alerts_of(calls, "sundial.run.dead_lettered")
    assert len({c.body["run_id"] for c in dead}) == len(dead) >= 5  # one per dead letter
    assert task_of(api, task["id"])["consecutive_failures"] >= 5
    assert task_of(api, task["id"])["status"] == "scheduled"  # alerting does not pause


def test_pause_after_failures_pauses_the_task_with_its_reason_and_nothing_fires_after(api, pipeline, receiver):
    url = receiver.script("/broken", 500)
    task = register(api, url, schedule=EVERY_SECOND, retry=ONCE, pause_after_failures=2)
    assert task["pause_after_failures"] == 2
    assert "paused_reason" not in task
    assert pipeline.fire(until=lambda: task_of(api, task["id"])["status"] == "paused", timeout=15)
    paused = task_of(api, task["id"])
    assert paused["consecutive_failures"] == 2
    assert "2 failed occurrences in a row" in paused["paused_reason"]
    # two calls, or one when a loaded machine's second call timed out before the receiver took it
    # (its 1 s timeout: a failure all the same)
    called = len(receiver.calls_to("/broken"))
    assert called in (1, 2)
    pipeline.settle()
    assert len(receiver.calls_to("/broken")) == called  # nothing fires while paused
    assert [r["status"] for r in runs(api, task["id"])] == ["dead_lettered", "dead_lettered"]
    # A resume clears the reason and the count; the task fires again.
    receiver.script("/broken", 200)
    resumed = api("POST", f"/v1/tasks/{task['id']}/resume")
    assert resumed.status == 200, resumed.body
    assert resumed.body["status"] == "scheduled"
    assert "paused_reason" not in resumed.body
    assert resumed.body["consecutive_failures"] == 0
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/broken")) > called, timeout=10)


def test_a_success_sets_the_count_back_so_the_failing_alert_comes_again(api, pipeline, receiver):
    url = receiver.script("/mixed", 500, 500, 200, 500, 500, 200)
    alerts = receiver.script("/on-call", 200)
    task = register(
        api,
        url,
        schedule=EVERY_SECOND,
        retry=ONCE,
        alert=alert_to(alerts, after_consecutive_failures=2),
        pause_after_failures=3,
    )
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/mixed")) >= 5, timeout=20)
    pipeline.fire(until=lambda: len(of_type(receiver.calls_to("/on-call"), "sundial.task.failing")) >= 2, timeout=3)
    failing = of_type(receiver.calls_to("/on-call"), "sundial.task.failing")
    calls = receiver.calls_to("/mixed")
    assert [c.body["run_id"] for c in failing] == [calls[1].body["run_id"], calls[4].body["run_id"]]
    after = task_of(api, task["id"])
    assert after["status"] == "scheduled"  # never 3 in a row: the success in between set the count back
    assert after["consecutive_failures"] in (0, 2)  # 0 once the sixth occurrence (a success) ended


def test_a_run_now_that_dead_letters_alerts_as_its_task(api, pipeline, receiver):
    url = receiver.script("/now", 400)
    alerts = receiver.script("/now-alerts", 200)
    task = register(
        api, url, schedule={"cron": "0 0 1 1 *"}, retry=ONCE, alert=alert_to(alerts, after_consecutive_failures=1)
    )
    started = api("POST", f"/v1/tasks/{task['id']}/run")
    assert started.status == 202, started.body
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/now-alerts")) >= 1, timeout=10)
    pipeline.settle()
    (call,) = receiver.calls_to("/now-alerts")  # its dead letter; an extra run is not in the count
    assert call.body["type"] == "sundial.run.dead_lettered"
    assert call.body["task_id"] == task["id"]
    assert call.body["run_id"] == started.body["run_id"]
    assert task_of(api, task["id"])["consecutive_failures"] == 0


def test_an_alert_receiver_that_fails_is_tried_twice_and_changes_nothing_recorded(api, pipeline, receiver):
    url = receiver.script("/gone", 500)
    alerts = receiver.script("/alerts-down", 503)
    task = register(api, url, retry=ONCE, alert=alert_to(alerts))
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/alerts-down")) >= 2, timeout=10)
    pipeline.settle()
    first, second = receiver.calls_to("/alerts-down")
    assert first.body == second.body
    assert first.headers["Idempotency-Key"] == second.headers["Idempotency-Key"]
    assert len(receiver.calls_to("/gone")) == 1
    (run,) = runs(api, task["id"])
    assert run["status"] == "dead_lettered"


# --- the API ----------------------------------------------------------------------------------

BASE = {"schedule": {"every_seconds": 60}, "target": {"http": {"url": "http://127.0.0.1:9/x"}}}


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"alert": {"target": {"http": {"url": "ftp://example.com/x"}}}}, "alert.target.http.url"),
        ({"alert": {"target": {"http": {"url": "http://169.254.169.254/latest"}}}}, "alert.target.http.url"),
        ({"alert": {"target": {"http": {"url": "https://u:p@example.com/x"}}}}, "alert.target.http.url"),
        ({"alert": {"target": {"sqs": {"queue_url": "not a queue"}}}}, "alert.target.sqs.queue_url"),
        ({"alert": {"target": {"job": {"processor": {"http": {"url": "http://a/p"}}}}}}, "alert.target"),
        ({"alert": {}}, "alert.target"),
        ({"alert": {"target": {"http": {"url": "http://a/x"}}, "after_consecutive_failures": "3"}}, ""),
        ({"alert": {"target": {"http": {"url": "http://a/x"}}, "after_consecutive_failures": True}}, ""),
        ({"alert": {"target": {"http": {"url": "http://a/x"}}, "after_consecutive_failures": 0}}, ""),
        ({"alert": {"target": {"http": {"url": "http://a/x"}}, "after_consecutive_failures": 1001}}, ""),
        ({"alert": {"target": {"http": {"url": "http://a/x"}}, "after_consecutive_failures": 2.5}}, ""),
        ({"pause_after_failures": "3"}, "pause_after_failures"),
        ({"pause_after_failures": True}, "pause_after_failures"),
        ({"pause_after_failures": 0}, "pause_after_failures"),
        ({"pause_after_failures": 1001}, "pause_after_failures"),
    ],
)
def test_a_bad_alert_or_threshold_is_refused_naming_the_field(api, fields, field):
    field = field or "alert.after_consecutive_failures"
    answer = api("POST", "/v1/tasks", BASE | fields)
    assert answer.status == 400, answer.body
    assert answer.body["error"]["code"] == "validation_error"
    assert [d["field"] for d in answer.body["error"]["details"]] == [field]
    patched = api("POST", "/v1/tasks", BASE)
    answer = api("PATCH", f"/v1/tasks/{patched.body['id']}", fields)
    assert answer.status == 400, answer.body
    assert [d["field"] for d in answer.body["error"]["details"]] == [field]


def test_thresholds_are_integers_from_1_to_1000(api):
    alert = {"target": {"http": {"url": "http://a/x"}}, "after_consecutive_failures": 1000.0}
    answer = api("POST", "/v1/tasks", BASE | {"alert": alert, "pause_after_failures": 1})
    assert answer.status == 201, answer.body
    assert answer.body["alert"]["after_consecutive_failures"] == 1000
    assert answer.body["pause_after_failures"] == 1


def test_a_patch_sets_and_clears_the_alert_and_the_threshold_and_keeps_secret_headers(api):
    created = api("POST", "/v1/tasks", BASE).body
    assert "alert" not in created
    assert "pause_after_failures" not in created
    alert = {"target": {"http": {"url": "http://a/x", "headers": {"Authorization": "Bearer s3cret"}}}}
    answer = api("PATCH", f"/v1/tasks/{created['id']}", {"alert": alert, "pause_after_failures": 5})
    assert answer.status == 200, answer.body
    assert answer.body["alert"]["target"]["http"]["headers"] == {"Authorization": "[redacted]"}
    assert answer.body["pause_after_failures"] == 5
    # what was read, sent back: the secret is kept, not replaced by "[redacted]"
    again = api("PATCH", f"/v1/tasks/{created['id']}", {"alert": answer.body["alert"]})
    assert again.status == 200, again.body
    from shared.store.items import to_task
    from shared.store.keys import task_key
    from shared.store.models import TaskItem

    stored = to_task(TaskItem.get(*task_key(created["id"]))).alert
    assert stored is not None
    assert vars(stored.target)["headers"] == {"Authorization": "Bearer s3cret"}
    cleared = api("PATCH", f"/v1/tasks/{created['id']}", {"alert": None, "pause_after_failures": None})
    assert cleared.status == 200, cleared.body
    assert "alert" not in cleared.body
    assert "pause_after_failures" not in cleared.body


def test_a_batch_takes_alerts_and_answers_a_bad_one_at_its_index(api):
    good = BASE | {"alert": {"target": {"sns": {"topic_arn": "arn:aws:sns:us-east-1:123456789012:ops"}}}}
    bad = BASE | {"pause_after_failures": "2"}
    answer = api("POST", "/v1/tasks:batch", {"tasks": [good, bad]})
    assert answer.status == 200, answer.body
    first, second = answer.body["items"]
    assert first["task"]["alert"] == {"target": {"sns": {"topic_arn": "arn:aws:sns:us-east-1:123456789012:ops"}}}
    assert [d["field"] for d in second["error"]["details"]] == ["pause_after_failures"]


def test_the_openapi_document_shows_the_new_members(api):
    schemas = api("GET", "/v1/openapi.json").body["components"]["schemas"]
    for model in ("TaskIn", "TaskPatchIn", "TaskOut"):
        assert {"alert", "pause_after_failures"} <= set(schemas[model]["properties"]), model
    assert {"paused_reason", "consecutive_failures"} <= set(schemas["TaskOut"]["properties"])
    kinds = schemas["AlertIn"]["properties"]["target"]["oneOf"]
    assert [k["$ref"].rsplit("/", 1)[1] for k in kinds] == [
        "HttpTarget",
        "LambdaTarget",
        "SqsTarget",
        "SnsTarget",
        "EventBridgeTarget",
    ]
