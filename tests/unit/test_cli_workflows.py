"""``sundial workflows`` against a mocked API: a run's nodes as a table in the graph's order, and
``--wait``: polled until the run ends, its exit code from what the run came to."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result

from sundial_cli.commands import workflows
from sundial_cli.commands.common import State
from sundial_cli.main import cli
from sundial_cli.output import EXIT_RUN_FAILED, EXIT_STILL_RUNNING
from sundial_cli.settings import KEY_ENV
from tests.support.cli import rows

pytestmark = pytest.mark.unit

WF = "01K0000000000000000000000W"
RUN = "01K0000000000000000000000R"


def node(status: str, error: str | None = None) -> dict[str, Any]:
    ended = status not in ("pending", "running")
    return {
        "status": status,
        "attempt": 1,
        "run_id": None if status == "pending" else "01K00000000000000000000N01",
        "item_id": None,
        "started_at": None if status == "pending" else "2030-03-01T08:00:00.000Z",
        "ended_at": "2030-03-01T08:00:01.000Z" if ended else None,
        "error": error,
    }


def run(status: str, nodes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "run_id": RUN,
        "workflow_id": WF,
        "version": 1,
        "status": status,
        "nodes": nodes,
        "graph": {"nodes": ["extract", "load", "report"], "edges": [], "joins": {}},
        "created_at": "2030-03-01T08:00:00.000Z",
        "ended_at": None if status == "running" else "2030-03-01T08:00:02.000Z",
    }


RUNNING = run("running", {"report": node("pending"), "extract": node("succeeded"), "load": node("running")})
FAILED = run("failed", {"report": node("skipped"), "extract": node("succeeded"), "load": node("failed", "HTTP 500")})
SUCCEEDED = run("succeeded", {name: node("succeeded") for name in ("report", "extract", "load")})


def sundial(answers: list[dict[str, Any]], *args: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Result, list[str]]:
    """``sundial workflows ARGS`` with the run's reads answered in turn (the last repeats)."""
    seen: list[str] = []
    monkeypatch.setattr(workflows.time, "sleep", lambda seconds: None)

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.method} {request.url.path}")
        if request.url.path.endswith("/run"):
            return httpx.Response(202, json={"run_id": RUN})
        reads = sum(1 for line in seen if line.endswith(f"/runs/{RUN}"))
        return httpx.Response(200, json=answers[min(reads, len(answers)) - 1])

    state = State(transport=httpx.MockTransport(answer))
    result = CliRunner().invoke(
        cli, ["--url", "http://sundial.test", "workflows", *args], obj=state, env={KEY_ENV: "sk"}
    )
    return result, seen


def test_a_run_is_a_table_of_its_nodes_in_the_graphs_order(monkeypatch: pytest.MonkeyPatch) -> None:
    result, _ = sundial([FAILED], "run-status", WF, RUN, monkeypatch=monkeypatch)
    assert result.exit_code == 0, result.output
    assert rows(result.stdout) == [
        ["NODE", "STATUS", "ATTEMPT", "STARTED", "ENDED", "ERROR"],
        ["extract", "succeeded", "1", "2030-03-01T08:00:00.000Z", "2030-03-01T08:00:01.000Z", "-"],
        ["load", "failed", "1", "2030-03-01T08:00:00.000Z", "2030-03-01T08:00:01.000Z", "HTTP 500"],
        ["report", "skipped", "1", "2030-03-01T08:00:00.000Z", "2030-03-01T08:00:01.000Z", "-"],
    ]
    assert result.stderr == f"run {RUN}: failed (version 1, ended 2030-03-01T08:00:02.000Z)\n"


@pytest.mark.parametrize(("final", "code"), [(SUCCEEDED, 0), (FAILED, EXIT_RUN_FAILED)])
def test_run_wait_polls_until_the_run_ends(final: dict[str, Any], code: int, monkeypatch: pytest.MonkeyPatch) -> None:
    result, seen = sundial([RUNNING, RUNNING, final], "run", WF, "--wait", monkeypatch=monkeypatch)
    assert result.exit_code == code, result.output
    assert seen == [f"POST /v1/workflows/{WF}/run"] + [f"GET /v1/workflows/{WF}/runs/{RUN}"] * 3
    assert result.stderr.splitlines()[0] == f"run {RUN} started: waiting for it to end"
    assert [row[1] for row in rows(result.stdout)[1:]] == [
        final["nodes"][name]["status"] for name in final["graph"]["nodes"]
    ]


def test_wait_gives_up_at_its_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    result, seen = sundial([RUNNING], "run-status", WF, RUN, "--wait", "--wait-timeout", "0", monkeypatch=monkeypatch)
    assert result.exit_code == EXIT_STILL_RUNNING, result.output
    assert len(seen) == 1
    assert result.stderr.splitlines()[-1] == "still running after 0 s"


def test_run_without_wait_prints_the_run_id_and_json_is_the_apis(monkeypatch: pytest.MonkeyPatch) -> None:
    result, _ = sundial([], "run", WF, monkeypatch=monkeypatch)
    assert (result.exit_code, rows(result.stdout)) == (0, [["run_id", RUN]])
    waited, _ = sundial([RUNNING, SUCCEEDED], "run", WF, "--wait", "-o", "json", monkeypatch=monkeypatch)
    assert (waited.exit_code, waited.stderr) == (0, "")
    assert '"status": "succeeded"' in waited.stdout
