"""Workflows through the API and the pipeline on moto, with a real HTTP receiver
(docs/workflows.md): each node of a run fires once or is skipped, with its parents' outcomes in
its body; failure paths, joins, cancel, retry, a crash between a node's end and its children's
start, duplicate deliveries, schedules, and tenants kept apart."""

from __future__ import annotations

import itertools
import json
import threading

import pytest
from hypothesis import HealthCheck, given, settings

from shared.domain.workflows import NodeStatus
from tests.integration.conftest import ADMIN_KEY
from tests.support.cli import until
from tests.unit.test_workflows import reference
from tests.unit.test_workflows import runs as random_runs

pytestmark = pytest.mark.integration

ONCE = {"max_attempts": 1, "backoff": "fixed", "interval_seconds": 1}
EXAMPLES = itertools.count()


def node(node_id: str, url: str, **fields) -> dict:
    return {"id": node_id, "target": {"http": {"url": url}}, "retry": ONCE, **fields}


def edge(parent: str, child: str, on: str = "success") -> dict:
    return {"from": parent, "to": child, "on": on}


def create(api, nodes: list[dict], edges: list[dict], **fields) -> dict:
    answer = api("POST", "/v1/workflows", {"nodes": nodes, "edges": edges, **fields})
    assert answer.status == 201, answer.body
    return answer.body


def start(api, workflow_id: str) -> str:
    answer = api("POST", f"/v1/workflows/{workflow_id}/run")
    assert answer.status == 202, answer.body
    return answer.body["run_id"]


def run_of(api, workflow_id: str, run_id: str) -> dict:
    answer = api("GET", f"/v1/workflows/{workflow_id}/runs/{run_id}")
    assert answer.status == 200, answer.body
    return answer.body


def statuses(run: dict) -> dict[str, str]:
    return {name: n["status"] for name, n in run["nodes"].items()}


def test_a_diamond_runs_each_node_once_with_its_parents_outcomes(api, pipeline, receiver):
    receiver.bodies["/b"] = json.dumps({"rows": 7}).encode()
    urls = {name: receiver.script(f"/{name}", 200) for name in "abcd"}
    workflow = create(
        api,
        [node(name, url) for name, url in urls.items()],
        [edge("a", "b"), edge("a", "c"), edge("b", "d"), edge("c", "d")],
        name="nightly",
    )
    run_id = start(api, workflow["id"])
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/d")) >= 1, timeout=20)
    pipeline.settle()
    for name in "abcd":
        assert len(receiver.calls_to(f"/{name}")) == 1, name
    (d,) = receiver.calls_to("/d")
    body = d.body["workflow"]
    assert body["id"] == workflow["id"]
    assert body["run_id"] == run_id
    assert body["node"] == "d"
    parents = {p["node"]: p for p in body["parents"]}
    assert set(parents) == {"b", "c"}
    assert parents["b"]["status"] == "succeeded"
    assert parents["b"]["response"] == {"rows": 7}
    assert parents["b"]["run_id"] == receiver.calls_to("/b")[0].body["run_id"]
    assert receiver.calls_to("/a")[0].body["workflow"]["parents"] == []
    run = run_of(api, workflow["id"], run_id)
    assert run["status"] == "succeeded"
    assert statuses(run) == dict.fromkeys("abcd", "succeeded")
    assert run["nodes"]["d"]["run_id"] == d.body["run_id"]
    node_run = api("GET", f"/v1/workflows/{workflow['id']}/runs/{run_id}/nodes/d")
    assert node_run.status == 200, node_run.body
    assert node_run.body["run_id"] == d.body["run_id"]
    assert node_run.body["status"] == "succeeded"
    assert node_run.body["attempts"] == 1
    # the runs are listed through an index, which DynamoDB updates eventually (the local runtime too)
    listed = until(lambda: api("GET", f"/v1/workflows/{workflow['id']}/runs").body["items"])
    assert [r["run_id"] for r in listed] == [run_id]


def test_b_and_c_ending_at_once_on_two_triggers_start_d_once(api, pipeline, receiver, monkeypatch):
    """Both ends are written before either moves the run on. Each write answers the run as it
    left it (ALL_NEW), so the later one reads both ended and starts D, the earlier one reads the
    other running and starts nothing; neither can read both running, so D is never lost. (A
    repeat of the earlier end reads both ended too: its start of D finds D's item, as the crash
    test below shows.)"""
    from shared.store.workflows import DynamoWorkflowRuns

    urls = {name: receiver.script(f"/{name}", 200) for name in "abcd"}
    workflow = create(
        api,
        [node(name, url) for name, url in urls.items()],
        [edge("a", "b"), edge("a", "c"), edge("b", "d"), edge("c", "d")],
    )
    both_written = threading.Barrier(2, timeout=10)
    seen: dict[str, dict[str, str]] = {}
    real = DynamoWorkflowRuns.node_ended

    def at_once(self, run_id, node_id, status, **kw):
        run = real(self, run_id, node_id, status, **kw)
        if node_id in ("b", "c"):
            both_written.wait()  # the other trigger's write lands before this one reads on
            seen[node_id] = {n: s.value for n, s in run.statuses.items()}
        return run

    monkeypatch.setattr(DynamoWorkflowRuns, "node_ended", at_once)
    run_id = start(api, workflow["id"])
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/d")) >= 1, timeout=20)
    pipeline.settle()
    assert sorted([seen["b"]["c"], seen["c"]["b"]]) == ["running", "succeeded"]
    assert len(receiver.calls_to("/d")) == 1
    assert run_of(api, workflow["id"], run_id)["status"] == "succeeded"


def test_failure_paths_skips_any_and_always(api, pipeline, receiver):
    """A fails for good: its on-failure child runs with A's error, its on-success child is skipped
    and so is that one's child; a join any of a skipped and a run parent runs; always runs."""
    receiver.bodies["/a"] = b"disk full"
    urls = {
        "a": receiver.script("/a", 503),
        "ok": receiver.script("/ok", 200),
        "after_ok": receiver.script("/after_ok", 200),
        "cleanup": receiver.script("/cleanup", 200),
        "either": receiver.script("/either", 200),
        "audit": receiver.script("/audit", 200),
    }
    nodes = [node(name, url) for name, url in urls.items()]
    nodes[4]["join"] = "any"
    workflow = create(
        api,
        nodes,
        [
            edge("a", "ok"),
            edge("ok", "after_ok"),
            edge("a", "cleanup", "failure"),
            edge("after_ok", "either"),
            edge("cleanup", "either"),
            edge("a", "audit", "always"),
        ],
    )
    run_id = start(api, workflow["id"])
    assert pipeline.fire(until=lambda: run_of(api, workflow["id"], run_id)["status"] != "running", timeout=20)
    pipeline.settle()
    run = run_of(api, workflow["id"], run_id)
    assert statuses(run) == {
        "a": "failed",
        "ok": "skipped",
        "after_ok": "skipped",
        "cleanup": "succeeded",
        "either": "succeeded",
        "audit": "succeeded",
    }
    assert run["status"] == "failed"
    assert "503" in run["nodes"]["a"]["error"]
    for skipped in ("ok", "after_ok"):
        assert receiver.calls_to(f"/{skipped}") == []
        assert run["nodes"][skipped]["run_id"] is None
    for ran in ("a", "cleanup", "either", "audit"):
        assert len(receiver.calls_to(f"/{ran}")) == 1, ran
    (parent,) = receiver.calls_to("/cleanup")[0].body["workflow"]["parents"]
    assert parent["node"] == "a"
    assert parent["status"] == "failed"
    assert parent["response"] == "disk full"
    assert "503" in parent["error"]
    (dead,) = [d for d in api("GET", "/v1/dead-letters").body["items"] if d["task_id"] == workflow["id"]]
    assert dead["run_id"] == run["nodes"]["a"]["run_id"]
    # the letter names the workflow run and the node, where the run's page (and the node's) is found
    assert dead["workflow"] == {"id": workflow["id"], "run_id": run_id, "node": "a", "attempt": 1}
    assert api("GET", f"/v1/dead-letters/{dead['id']}").body["workflow"] == dead["workflow"]
    node_run = api("GET", f"/v1/workflows/{workflow['id']}/runs/{run_id}/nodes/a")
    assert node_run.status == 200, node_run.body
    assert node_run.body["run_id"] == dead["run_id"]


def test_a_crash_between_a_nodes_end_and_its_childrens_start_fires_the_node_again_and_each_child_once(
    api, pipeline, receiver, monkeypatch
):
    from shared.store.workflows import DynamoWorkflowRuns

    urls = {name: receiver.script(f"/{name}", 200) for name in "abc"}
    workflow = create(api, [node(n, u) for n, u in urls.items()], [edge("a", "b"), edge("a", "c")])
    crashes: list[str] = []
    real = DynamoWorkflowRuns.nodes_started

    def crash_once(self, run_id, starts, **kw):
        if not crashes:
            crashes.extend(start.item_id for start in starts)  # b and c created: then the trigger dies
            raise RuntimeError("the trigger died between the children's creation and their mark")
        return real(self, run_id, starts, **kw)

    monkeypatch.setattr(DynamoWorkflowRuns, "nodes_started", crash_once)
    run_id = start(api, workflow["id"])
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/a")) >= 2, timeout=30)
    pipeline.settle(timeout=30)
    assert crashes
    first, again = receiver.calls_to("/a")
    assert first.body["run_id"] == again.body["run_id"]  # the same node run, fired again
    assert len(receiver.calls_to("/b")) == 1
    assert len(receiver.calls_to("/c")) == 1
    run = run_of(api, workflow["id"], run_id)
    assert statuses(run) == dict.fromkeys("abc", "succeeded")
    assert [run["nodes"][n]["item_id"] for n in "bc"] == crashes


def test_every_message_delivered_twice_fires_each_node_once(api, pipeline, receiver, monkeypatch):
    from shared.adapters.queues import SqsStager

    real_stage, real_send = SqsStager.stage, SqsStager.send

    def stage_twice(self, occurrences, now_ms):
        real_stage(self, occurrences, now_ms)
        real_stage(self, occurrences, now_ms)

    def send_twice(self, messages):
        real_send(self, messages)
        real_send(self, messages)

    monkeypatch.setattr(SqsStager, "stage", stage_twice)
    monkeypatch.setattr(SqsStager, "send", send_twice)
    urls = {name: receiver.script(f"/{name}", 200) for name in "abcd"}
    workflow = create(
        api,
        [node(name, url) for name, url in urls.items()],
        [edge("a", "b"), edge("a", "c"), edge("b", "d"), edge("c", "d")],
    )
    run_id = start(api, workflow["id"])
    assert pipeline.fire(until=lambda: run_of(api, workflow["id"], run_id)["status"] != "running", timeout=20)
    pipeline.settle()
    for name in "abcd":
        assert len(receiver.calls_to(f"/{name}")) == 1, name
    assert run_of(api, workflow["id"], run_id)["status"] == "succeeded"


def test_cancel_stops_the_run_and_retry_runs_the_failed_nodes_and_what_they_skipped(api, pipeline, receiver):
    flaky = receiver.script("/flaky", 500, 200)  # fails its only attempt, then answers 200
    urls = {"a": receiver.script("/a", 200), "b": flaky, "c": receiver.script("/c", 200)}
    workflow = create(api, [node(n, u) for n, u in urls.items()], [edge("a", "b"), edge("b", "c")])
    run_id = start(api, workflow["id"])
    assert pipeline.fire(until=lambda: run_of(api, workflow["id"], run_id)["status"] != "running", timeout=20)
    run = run_of(api, workflow["id"], run_id)
    assert statuses(run) == {"a": "succeeded", "b": "failed", "c": "skipped"}
    first_b = run["nodes"]["b"]["run_id"]

    retried = api("POST", f"/v1/workflows/{workflow['id']}/runs/{run_id}/retry")
    assert retried.status == 200, retried.body
    assert retried.body["status"] == "running"
    assert retried.body["nodes"]["b"]["attempt"] == 2
    assert pipeline.fire(until=lambda: run_of(api, workflow["id"], run_id)["status"] != "running", timeout=20)
    pipeline.settle()
    run = run_of(api, workflow["id"], run_id)
    assert statuses(run) == dict.fromkeys("abc", "succeeded")
    assert run["nodes"]["b"]["run_id"] != first_b  # a new node run: a new Idempotency-Key
    assert len(receiver.calls_to("/a")) == 1  # what succeeded does not run again
    assert len(receiver.calls_to("/flaky")) == 2
    assert len(receiver.calls_to("/c")) == 1
    again = api("POST", f"/v1/workflows/{workflow['id']}/runs/{run_id}/retry")
    assert again.status == 409

    # cancel: a run whose first node is held by its receiver's slow answer starts nothing after it
    slow = create(api, [node("x", receiver.script("/x", 200)), node("y", urls["c"])], [edge("x", "y")])
    slow_run = start(api, slow["id"])
    cancelled = api("POST", f"/v1/workflows/{slow['id']}/runs/{slow_run}/cancel")
    assert cancelled.status == 200, cancelled.body
    assert cancelled.body["status"] == "cancelled"
    assert statuses(cancelled.body) == {"x": "cancelled", "y": "cancelled"}
    pipeline.settle()
    assert receiver.calls_to("/x") == []  # its item was cancelled before it was claimed
    assert len(receiver.calls_to("/c")) == 1
    assert api("POST", f"/v1/workflows/{slow['id']}/runs/{slow_run}/cancel").status == 200  # harmless twice


def other_tenant(api):
    """A second tenant's caller: ``other(method, path)`` with its key."""
    created = api("POST", "/v1/tenants", {"id": "globex"}, {"Authorization": f"Bearer {ADMIN_KEY}"})
    assert created.status == 201, created.body
    headers = {"Authorization": f"Bearer {created.body['key']['secret']}"}
    return lambda method, path, body=None: api(method, path, body, headers)


def test_a_schedule_starts_runs_as_a_task_and_another_tenant_sees_nothing(api, pipeline, receiver):
    urls = {name: receiver.script(f"/{name}", 200) for name in "ab"}
    workflow = create(api, [node(n, u) for n, u in urls.items()], [edge("a", "b")], schedule={"after_seconds": 1})
    task = api("GET", f"/v1/tasks/{workflow['schedule_task_id']}").body
    assert task["target"] == {"workflow": {"id": workflow["id"]}}
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/b")) >= 1, timeout=20)
    pipeline.settle()
    (occurrence,) = api("GET", f"/v1/tasks/{task['id']}/runs").body["items"]
    run = run_of(api, workflow["id"], occurrence["run_id"])  # the run's id is the occurrence's
    assert run["status"] == "succeeded"

    other = other_tenant(api)
    for method, path in [
        ("GET", f"/v1/workflows/{workflow['id']}"),
        ("POST", f"/v1/workflows/{workflow['id']}/run"),
        ("GET", f"/v1/workflows/{workflow['id']}/runs"),
        ("GET", f"/v1/workflows/{workflow['id']}/runs/{run['run_id']}"),
        ("POST", f"/v1/workflows/{workflow['id']}/runs/{run['run_id']}/cancel"),
        ("DELETE", f"/v1/workflows/{workflow['id']}"),
    ]:
        answer = other(method, path)
        assert answer.status == 404, (method, path, answer.body)
    assert other("GET", "/v1/workflows").body["items"] == []

    assert api("DELETE", f"/v1/workflows/{workflow['id']}").status == 204
    assert api("GET", f"/v1/tasks/{task['id']}").body["status"] in ("cancelled", "completed")
    assert api("GET", f"/v1/workflows/{workflow['id']}").status == 404


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(graph_and_ends=random_runs(max_nodes=6))
def test_random_graphs_through_the_pipeline_run_as_the_reference_says(api, pipeline, receiver, graph_and_ends):
    """Random graphs (random edges, `on`, joins and ends) fired through the trigger: which node
    runs and which is skipped is what the reference executor (tests/unit/test_workflows.py)
    decides; each node that runs is called once."""
    graph, ends = graph_and_ends
    prefix = f"/r{next(EXAMPLES)}"
    nodes = []
    for name in graph.nodes:
        url = receiver.script(f"{prefix}/{name}", 200 if ends[name] is NodeStatus.SUCCEEDED else 404)
        nodes.append(node(name, url, join=graph.join_of(name).value))
    edges = [edge(e.parent, e.child, e.on.value) for e in graph.edges]
    workflow = create(api, nodes, edges)
    run_id = start(api, workflow["id"])
    assert pipeline.fire(until=lambda: run_of(api, workflow["id"], run_id)["status"] != "running", timeout=20)
    pipeline.settle()
    expected = reference(graph, ends)
    assert statuses(run_of(api, workflow["id"], run_id)) == {n: s.value for n, s in expected.items()}
    for name, status in expected.items():
        assert len(receiver.calls_to(f"{prefix}/{name}")) == (0 if status is NodeStatus.SKIPPED else 1), name
