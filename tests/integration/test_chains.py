"""Chains through the pipeline on moto, with a real HTTP receiver: ``on_success`` and
``on_failure`` each start their tasks once per parent occurrence, with ``parent`` in the child's
body and on its run; a redriven dead letter's success starts on_success; a crash after the hop
started and before the parent was recorded fires the parent again but not the child; a loop
stops after 10 hops; a cancelled or paused child is skipped with its reason; and the API refuses
lists that name no task of the tenant's."""

from __future__ import annotations

import json

import pytest

from tests.integration.test_pipeline import register, runs

pytestmark = pytest.mark.integration

ONCE = {"max_attempts": 1, "backoff": "fixed", "interval_seconds": 1}
YEARLY = {"cron": "0 0 1 1 *"}
"""A child's own schedule, far from the test: it runs here only because it is chained."""


def child(api, url: str, **fields) -> dict:
    return register(api, url, schedule=YEARLY, **fields)


def quiet(pipeline) -> None:
    """Fire until nothing is left to fire (``Pipeline.settle``): a duplicate would have come."""
    pipeline.settle()


def test_a_success_runs_on_success_once_with_the_parent_and_its_answer(api, pipeline, receiver):
    receiver.bodies["/export"] = json.dumps({"file": "s3://exports/7.csv", "rows": 7}).encode()
    upload = child(api, receiver.script("/upload", 200))
    cleanup = child(api, receiver.script("/cleanup", 200))
    parent = register(
        api, receiver.script("/export", 200), on_success=[upload["id"]], on_failure=[cleanup["id"]], retry=ONCE
    )
    assert parent["on_success"] == [upload["id"]]
    assert parent["on_failure"] == [cleanup["id"]]
    assert "on_success" not in upload  # absent when none

    assert pipeline.fire(until=lambda: len(receiver.calls_to("/upload")) >= 1, timeout=15)
    quiet(pipeline)
    (export,) = receiver.calls_to("/export")
    (call,) = receiver.calls_to("/upload")
    assert receiver.calls_to("/cleanup") == []
    assert "parent" not in export.body  # only chained runs carry one
    assert call.body["task_id"] == upload["id"]
    assert call.body["parent"] == {
        "task_id": parent["id"],
        "run_id": export.body["run_id"],
        "status": "succeeded",
        "response": {"file": "s3://exports/7.csv", "rows": 7},
    }
    assert call.headers["Idempotency-Key"] == call.body["run_id"] != export.body["run_id"]
    assert call.at >= export.answered
    (run,) = runs(api, upload["id"])
    assert run["run_id"] == call.body["run_id"]
    assert run["status"] == "succeeded"
    assert run["parent"] == {"task_id": parent["id"], "run_id": export.body["run_id"], "status": "succeeded"}
    assert "parent" not in runs(api, parent["id"])[0]


def test_a_dead_lettered_parent_runs_on_failure_once_with_its_error(api, pipeline, receiver):
    receiver.bodies["/down"] = b"the database is on fire"
    upload = child(api, receiver.script("/upload", 200))
    cleanup = child(api, receiver.script("/cleanup", 200))
    retry = {"max_attempts": 2, "backoff": "fixed", "interval_seconds": 1}
    parent = register(
        api, receiver.script("/down", 503), on_success=[upload["id"]], on_failure=[cleanup["id"]], retry=retry
    )
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/cleanup")) >= 1, timeout=15)
    quiet(pipeline)
    assert len(receiver.calls_to("/down")) == 2
    (call,) = receiver.calls_to("/cleanup")
    assert receiver.calls_to("/upload") == []
    parent_body = call.body["parent"]
    assert parent_body["task_id"] == parent["id"]
    assert parent_body["run_id"] == receiver.calls_to("/down")[0].body["run_id"]
    assert parent_body["status"] == "dead_lettered"
    assert parent_body["response"] == "the database is on fire"  # not JSON: as text
    assert "503" in parent_body["error"]
    assert runs(api, cleanup["id"])[0]["parent"]["status"] == "dead_lettered"


def test_a_final_failure_runs_on_failure_too(api, pipeline, receiver):
    cleanup = child(api, receiver.script("/cleanup", 200))
    register(api, receiver.script("/gone", 404), on_failure=[cleanup["id"]], retry=ONCE)
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/cleanup")) >= 1, timeout=15)
    quiet(pipeline)
    (call,) = receiver.calls_to("/cleanup")
    assert call.body["parent"]["status"] == "failed"


def test_a_redriven_dead_letter_that_succeeds_starts_on_success_once(api, pipeline, receiver):
    upload = child(api, receiver.script("/upload", 200))
    page = child(api, receiver.script("/page", 200))
    parent = register(
        api, receiver.script("/flaky", 500, 200), on_success=[upload["id"]], on_failure=[page["id"]], retry=ONCE
    )
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/page")) >= 1, timeout=15)
    (letter,) = api("GET", "/v1/dead-letters").body["items"]
    assert letter["task_id"] == parent["id"]
    redriven = api("POST", "/v1/dead-letters/redrive", {"ids": [letter["id"]]})
    assert redriven.status == 200, redriven.body
    new_run = redriven.body["runs"][0]["run_id"]
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/upload")) >= 1, timeout=15)
    quiet(pipeline)
    (call,) = receiver.calls_to("/upload")
    assert call.body["parent"]["run_id"] == new_run
    assert call.body["parent"]["status"] == "succeeded"
    assert len(receiver.calls_to("/page")) == 1  # the first failure's, once
    assert receiver.calls_to("/page")[0].body["parent"]["run_id"] == letter["run_id"]


def test_a_crash_after_the_hop_started_fires_the_parent_again_but_never_the_child(api, pipeline, receiver, monkeypatch):
    from shared.store.pipeline import DynamoPipelineStore

    upload = child(api, receiver.script("/upload", 200))
    register(api, receiver.script("/export", 200), on_success=[upload["id"]])
    crashes: list[int] = []
    real = DynamoPipelineStore.log_successes

    def crash_once(self, log_id, successes, now_ms):
        if successes and not crashes:
            crashes.append(now_ms)
            raise RuntimeError("the trigger died before recording the parent's success")
        return real(self, log_id, successes, now_ms)

    monkeypatch.setattr(DynamoPipelineStore, "log_successes", crash_once)
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/export")) >= 2, timeout=20)
    quiet(pipeline)
    assert crashes
    exports = receiver.calls_to("/export")
    assert len(exports) == 2  # the parent fired again: its success was never recorded
    assert exports[0].body["run_id"] == exports[1].body["run_id"]
    (call,) = receiver.calls_to("/upload")  # the child once
    assert call.body["parent"]["run_id"] == exports[0].body["run_id"]
    assert len(runs(api, upload["id"])) == 1


def test_every_child_of_a_list_runs_and_a_recurring_parent_chains_each_occurrence(api, pipeline, receiver):
    first = child(api, receiver.script("/first", 200))
    second = child(api, receiver.script("/second", 200))
    parent = register(
        api, receiver.script("/tick", 200), schedule={"every_seconds": 1}, on_success=[first["id"], second["id"]]
    )
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/second")) >= 3, timeout=15)
    assert api("DELETE", f"/v1/tasks/{parent['id']}").status == 204
    quiet(pipeline)
    ticks = {c.body["run_id"] for c in receiver.calls_to("/tick")}
    for path in ("/first", "/second"):
        parents = [c.body["parent"]["run_id"] for c in receiver.calls_to(path)]
        assert len(parents) == len(set(parents)) == len(ticks)  # one per occurrence, none twice
        assert set(parents) == ticks


def test_a_loop_stops_after_ten_hops_and_says_so(api, pipeline, receiver):
    loop = child(api, receiver.script("/loop", 200))
    assert api("PATCH", f"/v1/tasks/{loop['id']}", {"on_success": [loop["id"]]}).status == 200  # itself
    assert api("POST", f"/v1/tasks/{loop['id']}/run").status == 202
    assert pipeline.fire(until=lambda: any(r["status"] == "skipped" for r in runs(api, loop["id"])), timeout=30)
    quiet(pipeline)
    calls = receiver.calls_to("/loop")
    assert len(calls) == 11  # the run now, then 10 hops
    assert "parent" not in calls[0].body
    assert [c.body["parent"]["run_id"] for c in calls[1:]] == [c.body["run_id"] for c in calls[:-1]]
    history = runs(api, loop["id"])
    (stopped,) = [r for r in history if r["status"] == "skipped"]
    assert stopped["last_error"] == "chain stopped after 10 hops"
    assert stopped["parent"]["run_id"] == calls[-1].body["run_id"]
    assert sum(r["status"] == "succeeded" for r in history) == 11


def test_a_cancelled_or_paused_child_is_skipped_with_its_reason(api, pipeline, receiver):
    cancelled = child(api, receiver.script("/cancelled", 200))
    paused = child(api, receiver.script("/paused", 200))
    running = child(api, receiver.script("/running", 200))
    register(
        api,
        receiver.script("/parent", 200),
        schedule={"after_seconds": 2},
        on_success=[cancelled["id"], paused["id"], running["id"]],
    )
    assert api("DELETE", f"/v1/tasks/{cancelled['id']}").status == 204
    assert api("POST", f"/v1/tasks/{paused['id']}/pause").status == 200
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/running")) >= 1, timeout=15)
    quiet(pipeline)
    assert receiver.calls_to("/cancelled") == receiver.calls_to("/paused") == []
    for task, word in ((cancelled, "cancelled"), (paused, "paused")):
        (run,) = runs(api, task["id"])
        assert run["status"] == "skipped"
        assert run["last_error"].startswith(f"its task was {word}")
        assert run["parent"]["status"] == "succeeded"


def test_the_api_refuses_lists_that_name_no_task_of_the_tenants(api, receiver):
    url = receiver.script("/x", 200)
    known = child(api, url)
    gone = child(api, url)
    assert api("DELETE", f"/v1/tasks/{gone['id']}").status == 204
    unknown = "01J00000000000000000000000"

    def refused(body: dict, field: str) -> None:
        answer = api("POST", "/v1/tasks", {"schedule": YEARLY, "target": {"http": {"url": url}}, **body})
        assert answer.status == 400, answer.body
        assert answer.body["error"]["code"] == "validation_error"
        assert [d["field"] for d in answer.body["error"]["details"]] == [field], answer.body

    refused({"on_success": [known["id"], unknown]}, "on_success[1]")
    refused({"on_failure": [gone["id"]]}, "on_failure[0]")
    refused({"on_success": [known["id"], known["id"].lower()]}, "on_success[1]")
    refused({"on_success": ["not-an-id"]}, "on_success[0]")
    refused({"on_success": [known["id"]] * 6}, "on_success")
    refused({"on_failure": "01J00000000000000000000000"}, "on_failure")

    # a batch answers the spec at its index; the others are registered
    batch = api(
        "POST",
        "/v1/tasks:batch",
        {
            "tasks": [
                {"schedule": YEARLY, "target": {"http": {"url": url}}, "on_success": [known["id"]]},
                {"schedule": YEARLY, "target": {"http": {"url": url}}, "on_success": [unknown]},
            ]
        },
    )
    assert batch.status in (200, 207), batch.body
    first, second = batch.body["items"]
    assert first["task"]["on_success"] == [known["id"]], first
    assert second["error"]["details"][0]["field"] == "on_success[0]", second

    # PATCH checks what it adds; a child cancelled since does not block another change
    task = child(api, url, on_success=[known["id"]])
    assert api("DELETE", f"/v1/tasks/{known['id']}").status == 204
    assert api("PATCH", f"/v1/tasks/{task['id']}", {"name": "renamed"}).status == 200
    answer = api("PATCH", f"/v1/tasks/{task['id']}", {"on_failure": [gone["id"]]})
    assert answer.status == 400
    assert answer.body["error"]["details"][0]["field"] == "on_failure[0]"
    cleared = api("PATCH", f"/v1/tasks/{task['id']}", {"on_success": None})
    assert cleared.status == 200
    assert "on_success" not in cleared.body
