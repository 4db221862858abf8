"""The workflow resource through the API: what is refused (naming the member), what a change
makes (a new version, secrets kept, a schedule replaced or removed), and what is not found."""

from __future__ import annotations

import pytest

from tests.support.cli import until

pytestmark = pytest.mark.integration

URL = "https://etl.example.com/step"


def node(node_id: str, **fields) -> dict:
    return {"id": node_id, "target": {"http": {"url": URL}}, **fields}


def edge(parent: str, child: str, on: str = "success") -> dict:
    return {"from": parent, "to": child, "on": on}


def refused(api, body: dict, method: str = "POST", path: str = "/v1/workflows") -> dict[str, str]:
    answer = api(method, path, body)
    assert answer.status == 400, answer.body
    assert answer.body["error"]["code"] == "validation_error"
    return {d["field"]: d["message"] for d in answer.body["error"]["details"]}


@pytest.mark.parametrize(
    ("nodes", "edges", "field", "says"),
    [
        ([node("a"), node("a")], [], "nodes[1].id", "another node"),
        ([node("A")], [], "nodes[0].id", "a-z"),
        ([node("a")], [edge("a", "zz")], "edges[0].to", "'zz' names no node"),
        ([node("a")], [edge("zz", "a")], "edges[0].from", "'zz' names no node"),
        ([node("a")], [edge("a", "a")], "edges[0]", "to itself"),
        ([node("a"), node("b"), node("c")], [edge("a", "b"), edge("b", "c"), edge("c", "b")], "edges", "b -> c -> b"),
        ([node("a"), node("b")], [edge("a", "b"), edge("b", "a")], "edges", "a -> b -> a"),  # no root
        ([], [], "nodes", ""),
        ([node(f"n{i}") for i in range(101)], [], "nodes", "100"),
        ([node("a", join="some")], [], "nodes[0].join", ""),
        ([node("a"), node("b")], [edge("a", "b", "maybe")], "edges[0].on", ""),
        ([{"id": "a"}], [], "target", "exactly one"),
        (
            [{"id": "a", "target": {"workflow": {"id": "01K0000000000000000000000"}}}],
            [],
            "nodes[0].target",
            "a workflow is none of them",
        ),
        ([node("a", payload="x" * 70_000)], [], "nodes[0].payload", ""),
    ],
)
def test_a_bad_workflow_is_refused_naming_the_member(api, nodes, edges, field, says):
    problems = refused(api, {"nodes": nodes, "edges": edges})
    named = [f for f in problems if f == field or f.startswith(field) or f.endswith(field)]
    assert named, problems
    assert says in problems[named[0]], problems


def test_a_node_may_not_target_sundials_own_resources(api, monkeypatch):
    from functions.api import common
    from tests.integration.conftest import use_settings

    use_settings(monkeypatch, own_prefix="sundial-")
    common.reset()
    own = {"lambda": {"function_arn": "arn:aws:lambda:us-east-1:123456789012:function:sundial-trigger"}}
    problems = refused(api, {"nodes": [{"id": "a", "target": own}], "edges": []})
    assert any(f.startswith("nodes[0].target") for f in problems), problems


def test_a_workflow_is_read_changed_and_deleted(api):
    headers = {"X-Api-Token": "s3cret"}
    created = api(
        "POST",
        "/v1/workflows",
        {
            "name": "etl",
            "nodes": [
                {"id": "a", "target": {"http": {"url": URL, "headers": headers}}},
                node("b", join="any", retry={"max_attempts": 5}),
            ],
            "edges": [edge("a", "b", "always")],
        },
    )
    assert created.status == 201, created.body
    workflow = created.body
    assert workflow["version"] == 1
    assert workflow["schedule"] is None
    assert workflow["schedule_task_id"] is None
    assert workflow["nodes"][0]["target"]["http"]["headers"] == {"X-Api-Token": "[redacted]"}
    assert workflow["nodes"][1]["join"] == "any"
    assert workflow["nodes"][1]["retry"]["max_attempts"] == 5
    assert workflow["edges"] == [{"from": "a", "to": "b", "on": "always"}]
    assert api("GET", f"/v1/workflows/{workflow['id']}").body == workflow
    assert api("GET", f"/v1/workflows/{workflow['id'].lower()}").status == 200  # ids are case-insensitive

    # a new graph: the secret sent back as [redacted] keeps the stored value; a new node cannot
    shown = workflow["nodes"]
    changed = api(
        "PATCH",
        f"/v1/workflows/{workflow['id']}",
        {"nodes": [*shown, node("c")], "edges": [edge("a", "b", "always"), edge("b", "c")]},
    )
    assert changed.status == 200, changed.body
    assert changed.body["version"] == 2
    assert changed.body["name"] == "etl"
    assert [n["id"] for n in changed.body["nodes"]] == ["a", "b", "c"]
    from shared.store.workflows import DynamoWorkflows

    stored = DynamoWorkflows().get("default", workflow["id"])
    assert stored.nodes[0].targets[0].headers == headers  # type: ignore[union-attr]
    secret_elsewhere = {"id": "z", "target": {"http": {"url": URL, "headers": {"X-Api-Token": "[redacted]"}}}}
    problems = refused(api, {"nodes": [secret_elsewhere], "edges": []}, "PATCH", f"/v1/workflows/{workflow['id']}")
    assert any("nodes[0].target" in f for f in problems), problems
    assert refused(api, {"nodes": shown}, "PATCH", f"/v1/workflows/{workflow['id']}") == {
        "edges": "nodes and edges are changed together"
    }

    # a schedule added, then removed: its task is replaced, then cancelled
    scheduled = api("PATCH", f"/v1/workflows/{workflow['id']}", {"schedule": {"cron": "0 3 * * *"}}).body
    task_id = scheduled["schedule_task_id"]
    assert scheduled["version"] == 3
    assert api("GET", f"/v1/tasks/{task_id}").body["target"] == {"workflow": {"id": workflow["id"]}}
    renamed = api("PATCH", f"/v1/workflows/{workflow['id']}", {"name": "etl-2"}).body
    assert renamed["schedule_task_id"] == task_id  # a change that does not touch the schedule keeps its task
    unscheduled = api("PATCH", f"/v1/workflows/{workflow['id']}", {"schedule": None}).body
    assert unscheduled["schedule"] is None
    assert unscheduled["schedule_task_id"] is None
    assert api("GET", f"/v1/tasks/{task_id}").body["status"] == "cancelled"

    listed = until(lambda: api("GET", "/v1/workflows").body["items"])  # an index: updated eventually
    assert [w["id"] for w in listed] == [workflow["id"]]
    assert api("DELETE", f"/v1/workflows/{workflow['id']}").status == 204
    assert api("GET", f"/v1/workflows/{workflow['id']}").body["error"]["code"] == "workflow_not_found"
    assert api("DELETE", f"/v1/workflows/{workflow['id']}").status == 404


def test_what_does_not_exist_is_not_found(api):
    missing = "01K00000000000000000000000"
    for method, path in [
        ("GET", f"/v1/workflows/{missing}"),
        ("PATCH", f"/v1/workflows/{missing}"),
        ("POST", f"/v1/workflows/{missing}/run"),
        ("GET", f"/v1/workflows/{missing}/runs"),
        ("GET", "/v1/workflows/not-an-id"),
    ]:
        answer = api(method, path, {} if method == "PATCH" else None)
        assert answer.status == 404, (method, path, answer.body)
    workflow = api("POST", "/v1/workflows", {"nodes": [node("a")], "edges": []}).body
    for method, path in [
        ("GET", f"/v1/workflows/{workflow['id']}/runs/{missing}"),
        ("POST", f"/v1/workflows/{workflow['id']}/runs/{missing}/cancel"),
        ("POST", f"/v1/workflows/{workflow['id']}/runs/{missing}/retry"),
        ("GET", f"/v1/workflows/{workflow['id']}/runs/{missing}/nodes/a"),
    ]:
        answer = api(method, path)
        assert answer.status == 404, (method, path, answer.body)
        assert answer.body["error"]["code"] == "workflow_run_not_found"


def test_the_readme_example_registers_as_it_says(api):
    """The guide's Workflows example (docs/guide.md), its body as written there."""
    import json
    from pathlib import Path

    guide = (Path(__file__).resolve().parents[2] / "docs" / "guide.md").read_text()
    section = guide.split("## Workflows", 1)[1].split("\n## ", 1)[0]
    body = json.loads(section.split("--json '", 1)[1].split("' | jq", 1)[0])
    created = api("POST", "/v1/workflows", body)
    assert created.status == 201, created.body
    assert {n["id"]: n["join"] for n in created.body["nodes"]}["page"] == "any"
    assert created.body["schedule"]["timezone"] == "Asia/Shanghai"
    assert created.body["schedule_task_id"]


def test_a_task_may_start_only_a_workflow_of_its_tenants(api):
    workflow = api("POST", "/v1/workflows", {"nodes": [node("a")], "edges": []}).body
    missing = "01K00000000000000000000000"
    answer = api("POST", "/v1/tasks", {"schedule": {"cron": "0 3 * * *"}, "target": {"workflow": {"id": missing}}})
    assert answer.status == 400, answer.body
    (detail,) = answer.body["error"]["details"]
    assert detail == {"field": "target.workflow.id", "message": f"{missing} names no workflow of yours"}
    task = api("POST", "/v1/tasks", {"schedule": {"cron": "0 3 * * *"}, "target": {"workflow": {"id": workflow["id"]}}})
    assert task.status == 201, task.body
    assert task.body["target"] == {"workflow": {"id": workflow["id"]}}
    batch = api(
        "POST",
        "/v1/tasks:batch",
        {"tasks": [{"schedule": {"cron": "0 3 * * *"}, "targets": [{"workflow": {"id": missing}}]}]},
    )
    assert batch.body["items"][0]["error"]["details"][0]["field"] == "targets[0].workflow.id"


def test_the_tenants_failed_runs_of_every_workflow_are_listed_until_retried(api):
    """``GET /v1/workflow-runs?status=failed``: the tenant's failed runs, every workflow's, newest
    first, each naming its workflow, a page at a time; a retried run leaves the list; ``status``
    is required and only ``failed`` is taken (docs/status-index.md)."""
    from functions.api import common
    from shared.domain.workflows import NodeStatus
    from tests.support.eventually import eventually

    one, two = (api("POST", "/v1/workflows", {"nodes": [node("a")], "edges": []}).body for _ in range(2))

    def start(workflow: dict) -> str:
        answer = api("POST", f"/v1/workflows/{workflow['id']}/run")
        assert answer.status == 202, answer.body
        return str(answer.body["run_id"])

    def fail(run_id: str) -> None:  # its node's run failed for good: the run ends failed
        common.workflows().runs.node_ended(run_id, "a", NodeStatus.FAILED)

    first, running, last = start(one), start(one), start(two)
    fail(first)
    fail(last)

    def listed() -> None:  # the status index, which a write reaches a moment later
        page = api("GET", "/v1/workflow-runs?status=failed&limit=1")
        assert page.status == 200, page.body
        assert [(r["run_id"], r["workflow_id"], r["status"]) for r in page.body["items"]] == [
            (last, two["id"], "failed")
        ]
        rest = api("GET", f"/v1/workflow-runs?status=failed&limit=1&cursor={page.body['next_cursor']}").body
        assert ([r["run_id"] for r in rest["items"]], rest["next_cursor"]) == ([first], None)

    eventually(listed)
    assert api("GET", f"/v1/workflows/{one['id']}/runs/{running}").body["status"] == "running"
    retried = api("POST", f"/v1/workflows/{one['id']}/runs/{first}/retry")
    assert retried.status == 200, retried.body

    def left() -> None:
        assert [r["run_id"] for r in api("GET", "/v1/workflow-runs?status=failed").body["items"]] == [last]
        assert common.workflows().count_runs("default", NodeStatus.FAILED) == 1

    eventually(left)
    for query in ("", "?status=running", "?status=succeeded", "?status=nope"):
        answer = api("GET", f"/v1/workflow-runs{query}")
        assert answer.status == 400, (query, answer.body)
        assert answer.body["error"]["code"] == "validation_error"
        assert [d["field"] for d in answer.body["error"]["details"]] == ["status"], query
    bad = api("GET", "/v1/workflow-runs?status=failed&cursor=not-a-cursor")
    assert (bad.status, bad.body["error"]["details"][0]["field"]) == (400, "cursor")
