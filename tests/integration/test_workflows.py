"""Workflows through the API and the pipeline on moto, with a real HTTP receiver
(docs/workflows.md): each node of a run fires once or is skipped, with its parents' outcomes in
its body; failure paths, joins, cancel, retry, a crash between a node's end and its children's
start, duplicate deliveries, schedules, and tenants kept apart."""

from __future__ import annotations

import json

import pytest

from tests.support.cli import until

pytestmark = pytest.mark.integration

ONCE = {"max_attempts": 1, "backoff": "fixed", "interval_seconds": 1}


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
