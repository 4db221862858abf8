"""The priority lane on moto (docs/receivers.md, section 3): a ``"priority": "high"`` task's
occurrences are staged on the high-priority delay queue by whoever stages them (the API writing
the task, the scanners from a task's item or from a later occurrence's pointer, the trigger
retrying or re-arming it) and fired from there by the high-priority trigger; normal ones never
go there."""

from __future__ import annotations

import pytest

from shared.topology import HIGH_PRIORITY_QUEUE
from tests.integration.conftest import DELAY_QUEUES
from tests.integration.test_pipeline import parse, register
from tests.support.eventually import until

pytestmark = pytest.mark.integration

NORMAL_QUEUES = tuple(f"delay-{i}" for i in range(DELAY_QUEUES))


def depth(pipeline, queue: str) -> int:
    names = [
        "ApproximateNumberOfMessagesDelayed",
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
    ]
    attributes = pipeline.sqs.get_queue_attributes(QueueUrl=pipeline.urls[queue], AttributeNames=names)["Attributes"]
    return sum(int(attributes[name]) for name in names)


def staged(pipeline) -> dict[str, int]:
    """Messages waiting on each lane: the high-priority queue and the normal ones together."""
    return {"high": depth(pipeline, HIGH_PRIORITY_QUEUE), "normal": sum(depth(pipeline, q) for q in NORMAL_QUEUES)}


def wait_until(condition, timeout: float) -> bool:
    return bool(until(condition, timeout))


# --- the API -------------------------------------------------------------------------------------


def test_priority_defaults_to_normal_is_returned_and_patch_changes_it(api):
    normal = register(api, "http://127.0.0.1:9/hook", schedule={"after_seconds": 600})
    high = register(api, "http://127.0.0.1:9/hook", schedule={"after_seconds": 600}, priority="high")
    assert normal["priority"] == "normal"
    assert high["priority"] == "high"
    assert api("GET", f"/v1/tasks/{high['id']}").body["priority"] == "high"
    patched = api("PATCH", f"/v1/tasks/{normal['id']}", {"priority": "high"})
    assert patched.status == 200, patched.body
    assert patched.body["priority"] == "high"
    renamed = api("PATCH", f"/v1/tasks/{normal['id']}", {"name": "renamed"})
    assert renamed.body["priority"] == "high"  # a patch that does not give it leaves it
    assert api("PATCH", f"/v1/tasks/{high['id']}", {"priority": "normal"}).body["priority"] == "normal"


def test_any_other_priority_is_a_400_naming_the_field(api):
    for bad in ("urgent", "HIGH", 1, None):
        answer = api(
            "POST",
            "/v1/tasks",
            {"schedule": {"after_seconds": 60}, "target": {"sqs": {"queue_url": "q"}}, "priority": bad},
        )
        assert answer.status == 400, (bad, answer.body)
        assert answer.body["error"]["code"] == "validation_error"
        assert any(detail["field"] == "priority" for detail in answer.body["error"]["details"]), answer.body
    task = register(api, "http://127.0.0.1:9/hook", schedule={"after_seconds": 600})
    answer = api("PATCH", f"/v1/tasks/{task['id']}", {"priority": "low"})
    assert answer.status == 400
    assert any(detail["field"] == "priority" for detail in answer.body["error"]["details"])


def test_batch_create_takes_priority_per_task(api):
    target = {"http": {"url": "http://127.0.0.1:9/hook"}}
    specs = [
        {"schedule": {"after_seconds": 600}, "target": target, "priority": "high"},
        {"schedule": {"after_seconds": 600}, "target": target},
        {"schedule": {"after_seconds": 600}, "target": target, "priority": "soon"},
    ]
    answer = api("POST", "/v1/tasks:batch", {"tasks": specs})
    assert answer.status == 200, answer.body
    first, second, third = answer.body["items"]
    assert first["task"]["priority"] == "high"
    assert second["task"]["priority"] == "normal"
    assert any(detail["field"] == "priority" for detail in third["error"]["details"])


# --- the pipeline --------------------------------------------------------------------------------


def test_a_high_task_is_staged_by_its_writer_on_the_high_lane_and_fires_from_there(api, pipeline, receiver):
    url = receiver.script("/high", 200)
    high = register(api, url, priority="high", schedule={"after_seconds": 1.8})
    assert staged(pipeline) == {"high": 1, "normal": 0}
    normal = register(api, receiver.script("/normal", 200), schedule={"after_seconds": 1.8})
    assert staged(pipeline) == {"high": 1, "normal": 1}
    assert pipeline.fire(until=lambda: receiver.calls_to("/high") and receiver.calls_to("/normal"), timeout=10)
    (call,) = receiver.calls_to("/high")
    assert call.body["task_id"] == high["id"]
    assert call.at >= parse(high["next_fire_at"]).timestamp()
    assert receiver.calls_to("/normal")[0].body["task_id"] == normal["id"]
    assert wait_until(lambda: api("GET", f"/v1/tasks/{high['id']}").body["status"] == "completed", 3)


def test_the_scanners_stage_a_high_task_on_the_high_lane_from_its_item_and_from_its_pointer(api, pipeline, receiver):
    """A recurring task: its first occurrence is in its item's bucket, the next ones in pointers
    written when it is re-armed; each is staged by a scan, and each on the high lane."""
    url = receiver.script("/recurring", 200, 200, 200)
    task = register(api, url, priority="high", schedule={"every_seconds": 4})  # beyond the writer's 3 s
    assert staged(pipeline) == {"high": 0, "normal": 0}
    first = parse(task["next_fire_at"]).timestamp()
    pipeline.tick(at=first - 1.5)  # a tick 1.5 s before it: the item's occurrence is inside its window
    assert staged(pipeline) == {"high": 1, "normal": 0}
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/recurring")) == 1, timeout=5)
    # re-armed for first + 4 s: beyond the trigger's own staging window, so only a pointer
    assert wait_until(lambda: staged(pipeline) == {"high": 0, "normal": 0}, 2)
    pipeline.tick(at=first + 4 - 1.5)
    assert staged(pipeline) == {"high": 1, "normal": 0}
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/recurring")) == 2, timeout=5)
    second = receiver.calls_to("/recurring")[1]
    assert second.at >= first + 4
    api("DELETE", f"/v1/tasks/{task['id']}")


def test_a_retry_of_a_high_occurrence_stays_on_the_high_lane(api, pipeline, receiver):
    url = receiver.script("/flaky", 500, 200)
    task = register(api, url, priority="high", retry={"max_attempts": 2, "backoff": "fixed", "interval_seconds": 5})
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/flaky")) == 1, timeout=10)
    # the retry, 5 s ahead: delayed 3 s (the lead is 2 s), so the first fire's polling, which goes
    # on until it sees the call, cannot take it (at 2 s ahead it was visible at once, and a loaded
    # machine's poll sometimes fired it before this look)
    assert wait_until(lambda: staged(pipeline) == {"high": 1, "normal": 0}, 3)
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/flaky")) == 2, timeout=15)
    assert [c.body["attempt"] for c in receiver.calls_to("/flaky")] == [1, 2]
    assert wait_until(lambda: api("GET", f"/v1/tasks/{task['id']}").body["status"] == "completed", 3)


def test_a_run_now_of_a_high_task_takes_the_high_lane(api, pipeline, receiver):
    url = receiver.script("/now", 200)
    task = register(api, url, priority="high", schedule={"after_seconds": 600})
    answer = api("POST", f"/v1/tasks/{task['id']}/run")
    assert answer.status in (200, 202), answer.body
    assert staged(pipeline) == {"high": 1, "normal": 0}
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/now")) == 1, timeout=10)


def test_a_normal_task_made_high_is_staged_on_the_high_lane_when_rescheduled(api, pipeline, receiver):
    url = receiver.script("/moved", 200)
    task = register(api, url, schedule={"after_seconds": 600})
    answer = api("PATCH", f"/v1/tasks/{task['id']}", {"priority": "high", "schedule": {"after_seconds": 1.5}})
    assert answer.status == 200, answer.body
    assert staged(pipeline) == {"high": 1, "normal": 0}
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/moved")) == 1, timeout=10)
