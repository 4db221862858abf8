"""``sundial workflows`` against ``make run``, as tables and as JSON, each test on a tenant of its
own: a diamond run to its end with ``--wait``, a failed run retried, a retrying run cancelled
and retried, and a graph with a cycle refused naming ``edges``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sundial_cli.output import EXIT_RUN_FAILED, EXIT_STILL_RUNNING
from tests.e2e.conftest import ADMIN_KEY
from tests.support.cli import Sundial, new_tenant, rows
from tests.support.eventually import eventually

pytestmark = pytest.mark.e2e

ONCE = {"max_attempts": 1, "backoff": "fixed", "interval_seconds": 1}
NODE_HEADER = ["NODE", "STATUS", "ATTEMPT", "STARTED", "ENDED", "ERROR"]
WAIT = ("--wait", "--wait-timeout", "60")


@pytest.fixture
def cli(sundial) -> Sundial:
    _, key = new_tenant(Sundial(sundial.base, ADMIN_KEY), "cli-wf")
    return Sundial(sundial.base, key)


def node(node_id: str, url: str, retry: dict | None = None) -> dict:
    return {"id": node_id, "target": {"http": {"url": url}}, "retry": retry or ONCE}


def diamond(urls: dict[str, str], **fields) -> dict:
    """a -> b, a -> c, b -> d, c -> d."""
    edges = [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")]
    return {
        "nodes": [node(name, url) for name, url in urls.items()],
        "edges": [{"from": parent, "to": child} for parent, child in edges],
        **fields,
    }


def started(result) -> str:
    """The run id ``run --wait`` says it started (on stderr, before it waits)."""
    word, run_id, *rest = result.stderr.splitlines()[0].split(" ", 2)
    assert (word, rest) == ("run", ["started: waiting for it to end"]), result.stderr
    return run_id


def by_node(table: str) -> dict[str, list[str]]:
    lines = rows(table)
    assert lines[0] == NODE_HEADER
    return {line[0]: line for line in lines[1:]}


def test_a_diamond_is_created_run_to_its_end_and_read(cli, receiver, tmp_path: Path):
    urls = {name: receiver.script(f"/wf-{name}", 200) for name in "abcd"}
    spec = tmp_path / "nightly.json"
    spec.write_text(json.dumps(diamond(urls, name="nightly")))
    workflow = cli.json("workflows", "create", "--file", str(spec))
    assert (workflow["name"], workflow["version"], workflow["schedule"]) == ("nightly", 1, None)
    assert [edge["from"] for edge in workflow["edges"]] == ["a", "a", "b", "c"]
    workflow_id = workflow["id"]

    ran = cli.ok("workflows", "run", workflow_id, *WAIT)
    nodes = by_node(ran.stdout)
    assert list(nodes) == ["a", "b", "c", "d"]
    assert {line[1] for line in nodes.values()} == {"succeeded"}
    assert {line[2] for line in nodes.values()} == {"1"}
    assert all(line[5] == "-" for line in nodes.values())
    assert ": succeeded (version 1, ended " in ran.stderr
    for name in "abcd":
        assert len(receiver.calls_to(f"/wf-{name}")) == 1, name

    run_id = started(ran)

    def run_listed() -> None:  # lists are eventually consistent
        (run,) = cli.json("workflows", "runs", workflow_id)["items"]
        assert run["run_id"] == run_id
        assert rows(cli.table("workflows", "runs", workflow_id))[1][:4] == [run_id, "succeeded", "1", "succeeded 4"]

    eventually(run_listed)
    read = cli.json("workflows", "run-status", workflow_id, run_id)
    assert (read["status"], read["graph"]["nodes"]) == ("succeeded", ["a", "b", "c", "d"])
    assert by_node(cli.table("workflows", "run-status", workflow_id, run_id)) == nodes
    (call,) = receiver.calls_to("/wf-d")
    assert {parent["node"] for parent in call.body["workflow"]["parents"]} == {"b", "c"}
    node_run = cli.json("workflows", "node-run", workflow_id, run_id, "d")
    assert (node_run["run_id"], node_run["status"]) == (call.body["run_id"], "succeeded")
    cli.fails(3, "workflows", "node-run", workflow_id, run_id, "nope")

    again = cli.json("workflows", "run", workflow_id)  # no --wait: the run id alone
    assert list(again) == ["run_id"]
    assert cli.ok("workflows", "run-status", workflow_id, again["run_id"], *WAIT).stdout.count("succeeded") == 4

    def listed() -> None:
        table = rows(cli.table("workflows", "list"))
        assert table[0] == ["ID", "NAME", "VERSION", "NODES", "EDGES", "SCHEDULE", "UPDATED_AT"]
        assert table[1][:6] == [workflow_id, "nightly", "1", "4", "4", "-"]

    eventually(listed)
    changed = cli.json("workflows", "update", workflow_id, "--name", "hourly", "--every", "3600")
    assert (changed["name"], changed["version"], changed["schedule"]) == ("hourly", 2, {"every_seconds": 3600.0})
    assert changed["schedule_task_id"]
    record = dict(line.split(None, 1) for line in cli.table("workflows", "get", workflow_id).splitlines())
    assert (record["name"], record["version"]) == ("hourly", "2")
    cli.fails(2, "workflows", "update", workflow_id)

    deleted = cli.run("workflows", "delete", workflow_id)
    assert (deleted.exit_code, deleted.stdout) == (0, "")
    cli.fails(3, "workflows", "get", workflow_id)


def test_a_failed_run_exits_non_zero_and_its_retry_runs_what_failed(cli, receiver):
    urls = {name: receiver.script(f"/wf-fail-{name}", 200) for name in "acd"}
    urls["b"] = receiver.script("/wf-fail-b", 500, 200)  # fails once, then succeeds
    workflow_id = cli.json("workflows", "create", "--file", "-", stdin=json.dumps(diamond(dict(sorted(urls.items())))))[
        "id"
    ]
    failed = cli.run("workflows", "run", workflow_id, *WAIT)
    assert failed.exit_code == EXIT_RUN_FAILED, (failed.stdout, failed.stderr)
    nodes = by_node(failed.stdout)
    assert {name: line[1] for name, line in nodes.items()} == {
        "a": "succeeded",
        "b": "failed",
        "c": "succeeded",
        "d": "skipped",
    }
    assert "500" in nodes["b"][5]
    assert ": failed (version 1, ended " in failed.stderr
    run_id = started(failed)

    retried = cli.ok("workflows", "retry", workflow_id, run_id, *WAIT)
    nodes = by_node(retried.stdout)
    assert {name: line[1:3] for name, line in nodes.items()} == {
        "a": ["succeeded", "1"],
        "b": ["succeeded", "2"],
        "c": ["succeeded", "1"],
        "d": ["succeeded", "1"],
    }
    assert [len(receiver.calls_to(f"/wf-fail-{name}")) for name in "abcd"] == [1, 2, 1, 1]
    again = cli.fails(1, "workflows", "retry", workflow_id, run_id)
    assert again.stderr.startswith("error: invalid_state:")


def test_a_retrying_run_is_cancelled_then_retried(cli, receiver):
    hold = {"max_attempts": 2, "backoff": "fixed", "interval_seconds": 3600}  # its second attempt: never
    spec = {
        "nodes": [node("hold", receiver.script("/wf-hold", 500, 200), hold), node("after", receiver.url + "/wf-after")],
        "edges": [{"from": "hold", "to": "after"}],
    }
    workflow_id = cli.json("workflows", "create", "--file", "-", stdin=json.dumps(spec))["id"]
    run_id = cli.json("workflows", "run", workflow_id)["run_id"]
    assert len(receiver.wait_for("/wf-hold", 1, timeout=20)) == 1

    still = cli.run("workflows", "run-status", workflow_id, run_id, "--wait", "--wait-timeout", "0")
    assert still.exit_code == EXIT_STILL_RUNNING, (still.stdout, still.stderr)
    assert by_node(still.stdout)["after"][1] == "pending"
    assert "still running after 0 s" in still.stderr

    cancelled = cli.ok("workflows", "cancel", workflow_id, run_id)
    assert {name: line[1] for name, line in by_node(cancelled.stdout).items()} == {
        "hold": "cancelled",
        "after": "cancelled",
    }
    assert cli.json("workflows", "cancel", workflow_id, run_id)["status"] == "cancelled"  # twice is harmless

    retried = cli.ok("workflows", "retry", workflow_id, run_id, *WAIT)
    assert {name: line[1:3] for name, line in by_node(retried.stdout).items()} == {
        "hold": ["succeeded", "2"],
        "after": ["succeeded", "1"],  # cancelled before it started: its first attempt is still to make
    }
    assert len(receiver.calls_to("/wf-after")) == 1
    ended = cli.fails(1, "workflows", "cancel", workflow_id, run_id)
    assert ended.stderr.startswith("error: invalid_state:")


def test_a_graph_with_a_cycle_is_refused_naming_edges(cli, tmp_path: Path):
    url = "http://127.0.0.1:9/"
    spec = {"nodes": [node("a", url), node("b", url)], "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "a"}]}
    cycle = tmp_path / "cycle.json"
    cycle.write_text(json.dumps(spec))
    refused = cli.fails(1, "workflows", "create", "--file", str(cycle))
    assert refused.stdout == ""
    assert refused.stderr.startswith("error: validation_error:")
    details = dict(line.strip().split(": ", 1) for line in refused.stderr.splitlines()[1:])
    assert "edges" in details, refused.stderr
    assert "a -> b -> a" in details["edges"] or "b -> a -> b" in details["edges"]
    cli.fails(2, "workflows", "create", "--file", str(tmp_path / "absent.json"))
    cli.fails(3, "workflows", "run", "01K0000000000000000000000A")
