"""``sundial overview`` prints the counts the console's home shows (GET /v1/overview), each with
the command that lists them, and says on stderr how many checks need attention; ``-o json`` is
the API's answer. ``sundial workflow-runs list`` lists every workflow's failed runs."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.support.cli import rows
from tests.unit.test_cli_client import run

pytestmark = pytest.mark.unit

CALM = {"tasks": {"failed": 0, "paused": 2, "paused_after_failures": 0}, "dead_letters": {"waiting": 0},
        "jobs": {"running": 1, "failed": 0}, "workflow_runs": {"failed": 0}}  # fmt: skip


def answering(body: Any) -> Any:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=body)

    answer.seen = seen  # type: ignore[attr-defined]
    return answer


def test_the_overview_is_a_table_of_counts_and_the_commands_that_list_them() -> None:
    trouble = {**CALM, "tasks": {"failed": 3, "paused": 2, "paused_after_failures": 1},
               "workflow_runs": {"failed": 1}}  # fmt: skip
    answer = answering(trouble)
    result = run(answer, "overview")
    assert result.exit_code == 0, result.output
    assert [r.url.path for r in answer.seen] == ["/v1/overview"]
    assert rows(result.stdout) == [
        ["COUNT OF", "COUNT", "LISTED BY"],
        ["failed tasks", "3", "sundial tasks list --status failed"],
        ["paused after failures", "1", "sundial tasks list --status paused_after_failures"],
        ["dead letters waiting", "0", "sundial dead-letters list --status dead_lettered"],
        ["failed jobs", "0", "sundial jobs list --status failed"],
        ["failed workflow runs", "1", "sundial workflow-runs list --status failed"],
        ["paused tasks", "2", "sundial tasks list --status paused"],
        ["running jobs", "1", "sundial jobs list --status running"],
    ]
    assert result.stderr == "3 of 5 checks need attention\n"
    calm = run(answering(CALM), "overview")
    assert calm.stderr.startswith("nothing is wrong: no failed task")


def test_the_overview_as_json_is_the_apis_answer() -> None:
    result = run(answering(CALM), "-o", "json", "overview")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == CALM
    assert result.stderr == ""


def test_an_overview_the_api_cannot_read_exits_non_zero() -> None:
    unavailable = {"error": {"code": "storage_unavailable", "message": "try again"}}
    result = run(lambda request: httpx.Response(503, json=unavailable), "overview")
    assert result.exit_code == 5
    assert result.stdout == ""


def test_workflow_runs_list_names_each_runs_workflow() -> None:
    node = {"status": "failed", "attempt": 1, "run_id": None, "item_id": None, "started_at": None, "ended_at": None,
            "error": "HTTP 500"}  # fmt: skip
    item = {"run_id": "01J0000000000000000000000R", "workflow_id": "01J0000000000000000000000W", "version": 1,
            "status": "failed", "nodes": {"load": node}, "graph": {"nodes": ["load"], "edges": [], "joins": {}},
            "created_at": "2030-03-01T08:00:00.000Z", "ended_at": "2030-03-01T08:00:01.000Z"}  # fmt: skip
    answer = answering({"items": [item], "next_cursor": None})
    result = run(answer, "workflow-runs", "list")
    assert result.exit_code == 0, result.output
    assert dict(answer.seen[0].url.params) == {"status": "failed", "limit": "50"}
    table = rows(result.stdout)
    assert table[0][:3] == ["RUN_ID", "WORKFLOW_ID", "STATUS"]
    assert table[1][:3] == [item["run_id"], item["workflow_id"], "failed"]
