"""The command line's client against a mocked API: answers read into the API's models (members
a newer server adds are tolerated), errors printed with their fields, exit codes by status,
stage paths kept."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result
from pydantic import ValidationError

from shared.api.responses import BatchOut, TaskOut
from sundial_cli.client import ApiError, Client, tolerant
from sundial_cli.commands.common import State
from sundial_cli.main import cli
from sundial_cli.output import exit_code
from sundial_cli.settings import KEY_ENV, OUTPUT_ENV

pytestmark = pytest.mark.unit

TASK: dict[str, Any] = {
    "id": "01J0000000000000000000000A",
    "name": "close-order-123",
    "status": "scheduled",
    "schedule": {"after_seconds": 10.0},
    "target": {"http": {"url": "http://127.0.0.1:9000/hook", "method": "POST", "headers": {}, "timeout_seconds": 10.0}},
    "payload": {"order_id": 123},
    "retry": {"max_attempts": 3, "backoff": "exponential", "interval_seconds": 2.0},
    "misfire": "fire_now",
    "priority": "normal",
    "next_fire_at": "2030-03-01T08:00:00.000Z",
    "created_at": "2030-03-01T07:59:50.000Z",
    "updated_at": "2030-03-01T07:59:50.000Z",
    "version": 1,
    "consecutive_failures": 0,
}


def newer(task: dict[str, Any]) -> dict[str, Any]:
    """The task as a newer server might answer it: members this client does not know, at the
    top, inside a union member (the target's http) and inside a nested model (retry)."""
    return {
        **task,
        "owner": "team-a",
        "target": {"http": {**task["target"]["http"], "tls": {"pinned": True}}},
        "retry": {**task["retry"], "jitter": 0.1},
    }


def test_members_a_newer_server_adds_are_dropped() -> None:
    answer = newer(TASK)
    with pytest.raises(ValidationError):
        TaskOut.model_validate(answer)
    task = tolerant(TaskOut, answer)
    assert task.id == TASK["id"]
    assert task.retry.max_attempts == 3
    assert answer["owner"] == "team-a"  # the data itself is left as it came


def test_members_added_inside_list_items_are_dropped() -> None:
    batch = {
        "items": [{"index": 0, "task": newer(TASK)}, {"index": 1, "error": {"code": "x", "message": "y", "hint": "z"}}]
    }
    parsed = tolerant(BatchOut, batch)
    assert [item.index for item in parsed.items] == [0, 1]


def test_other_errors_are_not_tolerated() -> None:
    with pytest.raises(ValidationError):
        tolerant(TaskOut, {**newer(TASK), "status": "exploded"})
    with pytest.raises(ValidationError):
        tolerant(TaskOut, {key: value for key, value in TASK.items() if key != "id"})


@pytest.mark.parametrize(
    ("status", "code"),
    [(400, 1), (409, 1), (412, 1), (404, 3), (401, 4), (403, 4), (429, 6), (500, 5), (503, 5), (0, 5)],
)
def test_exit_codes(status: int, code: int) -> None:
    assert exit_code(ApiError(status, "x", "y")) == code


def run(handler: Callable[[httpx.Request], httpx.Response], *args: str, url: str = "http://sundial.test") -> Result:
    state = State(transport=httpx.MockTransport(handler))
    return CliRunner().invoke(cli, ["--url", url, *args], obj=state, env={KEY_ENV: "sk_env"})


def test_a_validation_error_names_each_field_on_stderr() -> None:
    body = {
        "error": {
            "code": "validation_error",
            "message": "the request is not valid: schedule.cron: bad; target: is required",
            "details": [{"field": "schedule.cron", "message": "bad"}, {"field": "target", "message": "is required"}],
        }
    }
    result = run(lambda request: httpx.Response(400, json=body), "tasks", "create", "--cron", "61 * * * *")
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0].startswith("error: validation_error: the request is not valid")
    assert lines[1:] == ["  schedule.cron: bad", "  target: is required"]


def test_rate_limited_prints_retry_after() -> None:
    body = {"error": {"code": "rate_limited", "message": "slow down"}}
    result = run(lambda request: httpx.Response(429, json=body, headers={"Retry-After": "3"}), "tasks", "list")
    assert result.exit_code == 6
    assert "error: rate_limited: slow down" in result.stderr
    assert "retry after: 3 s" in result.stderr


def test_an_answer_not_in_the_error_format_keeps_its_status_and_text() -> None:
    result = run(lambda request: httpx.Response(502, text="Bad Gateway from a proxy"), "jobs", "list")
    assert result.exit_code == 5
    assert "error: http_502: Bad Gateway from a proxy" in result.stderr
    unauthorized = run(lambda request: httpx.Response(401, json={"message": "Unauthorized"}), "jobs", "list")
    assert unauthorized.exit_code == 4


def test_an_answer_that_is_not_the_documented_model_is_exit_5() -> None:
    result = run(lambda request: httpx.Response(200, json={"items": "not a list"}), "tasks", "list")
    assert result.exit_code == 5
    assert result.stderr.startswith("error: unexpected_answer: the answer is not a TaskPage")
    proxy = run(lambda request: httpx.Response(200, text="<html>login</html>"), "tasks", "list")
    assert (proxy.exit_code, proxy.stderr.startswith("error: unexpected_answer: the answer is not JSON")) == (5, True)


def test_unreachable_is_exit_5() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("Connection refused", request=request)

    result = run(refuse, "limits", "list")
    assert result.exit_code == 5
    assert result.stderr.startswith("error: unreachable: could not reach http://sundial.test")


def test_the_stage_path_key_and_query_reach_the_api() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"items": [newer(TASK)], "next_cursor": None})

    result = run(
        answer, "-o", "json", "tasks", "list", "--status", "scheduled", "--limit", "5", url="https://x.test/prod/"
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["items"][0]["owner"] == "team-a"  # JSON as it came
    (request,) = seen
    assert request.url.path == "/prod/v1/tasks"
    assert dict(request.url.params) == {"status": "scheduled", "limit": "5"}
    assert request.headers["Authorization"] == "Bearer sk_env"


def test_all_follows_next_cursor() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        cursor = request.url.params.get("cursor")
        page = {None: ("01J0000000000000000000000A", "c1"), "c1": ("01J0000000000000000000000B", None)}[cursor]
        return httpx.Response(200, json={"items": [{**TASK, "id": page[0]}], "next_cursor": page[1]})

    result = run(answer, "-o", "json", "tasks", "list", "--all")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [task["id"] for task in data["items"]] == ["01J0000000000000000000000A", "01J0000000000000000000000B"]
    assert data["next_cursor"] is None
    table = run(answer, "tasks", "list", "--limit", "1")
    assert "01J0000000000000000000000A" in table.stdout
    assert "after 10 s" in table.stdout
    assert "--cursor c1" in table.stderr


def test_redrive_all_calls_again_with_next_cursor_until_it_is_null() -> None:
    """The API redrives all a step at a time; the command goes on to the last step, each with an
    Idempotency-Key of its own (a step's body, its cursor, differs from the others')."""
    seen: list[tuple[dict[str, Any], str | None]] = []
    steps = {
        None: (["01J0000000000000000000000A"], "c1"),
        "c1": ([], "c2"),
        "c2": (["01J0000000000000000000000B"], None),
    }

    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append((body, request.headers.get("Idempotency-Key")))
        ids, after = steps[body.get("cursor")]
        runs = [{"id": i, "task_id": "01J0000000000000000000000T", "run_id": i} for i in ids]
        return httpx.Response(200, json={"redriven": len(runs), "runs": runs, "next_cursor": after})

    result = run(answer, "-o", "json", "dead-letters", "redrive", "--all", "--idempotency-key", "k")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["redriven"] == 2
    assert [r["id"] for r in data["runs"]] == ["01J0000000000000000000000A", "01J0000000000000000000000B"]
    assert data["next_cursor"] is None
    assert seen == [
        ({"all": True}, "k"),
        ({"all": True, "cursor": "c1"}, "k:1"),
        ({"all": True, "cursor": "c2"}, "k:2"),
    ]


def test_ids_are_quoted_into_the_path() -> None:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.raw_path.decode())
        return httpx.Response(404, json={"error": {"code": "task_not_found", "message": "no"}})

    result = run(answer, "tasks", "get", "../tenants")
    assert result.exit_code == 3
    assert seen == ["/v1/tasks/..%2Ftenants"]


def test_client_closes() -> None:
    client = Client("http://sundial.test", transport=httpx.MockTransport(lambda r: httpx.Response(200, json=TASK)))
    assert client.get_task("x").model.name == "close-order-123"
    client.close()


def test_output_is_taken_before_or_after_the_command() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"items": [TASK], "next_cursor": None})

    after = run(answer, "tasks", "list", "-o", "json")
    assert json.loads(after.stdout)["items"][0]["id"] == TASK["id"]
    overridden = run(answer, "-o", "json", "tasks", "list", "--output", "table")
    assert overridden.stdout.splitlines()[0].split() == ["ID", "NAME", "STATUS", "LAST_RUN", "NEXT_FIRE_AT", "SCHEDULE"]
    from_env = CliRunner().invoke(
        cli, ["--url", "http://sundial.test", "tasks", "list"], obj=State(transport=httpx.MockTransport(answer)),
        env={OUTPUT_ENV: "json"},
    )  # fmt: skip
    assert json.loads(from_env.stdout)["next_cursor"] is None


def test_dead_letters_list_names_a_workflow_nodes_run_not_a_task() -> None:
    """A node's letter answers the workflow's id as its task_id: the table shows no task for it but
    the workflow, run and node, as ``sundial workflows node-run`` takes them."""
    common = {
        "status": "dead_lettered",
        "reason": "retries exhausted after 1 attempt(s): HTTP 500",
        "scheduled_for": "2030-03-01T08:00:00.000Z",
        "failed_at": "2030-03-01T08:00:01.000Z",
        "attempts": 1,
        "target": TASK["target"],
        "payload": None,
        "retry": TASK["retry"],
        "redriven_run_id": None,
        "redriven_at": None,
    }
    task_letter = {
        **common,
        "id": "01J00000000000000000000RA",
        "task_id": "01J0000000000000000000000T",
        "run_id": "01J00000000000000000000RA",
        "name": "close-order",
    }
    node_letter = {**common, "id": "01J00000000000000000000RB", "task_id": "01J000000000000000000000WF",
                   "run_id": "01J00000000000000000000RB", "name": None,
                   "workflow": {"id": "01J000000000000000000000WF", "run_id": "01J000000000000000000000WR",
                                "node": "extract", "attempt": 1}}  # fmt: skip

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"items": [task_letter, node_letter], "next_cursor": None})

    result = run(answer, "dead-letters", "list")
    assert result.exit_code == 0, result.output
    header, *rows = result.stdout.splitlines()
    assert header.split()[:4] == ["ID", "TASK_ID", "WORKFLOW", "NODE"]
    assert rows[0].split()[:3] == ["01J00000000000000000000RA", "01J0000000000000000000000T", "-"]
    assert rows[1].split()[:5] == [
        "01J00000000000000000000RB",
        "-",
        "01J000000000000000000000WF",
        "01J000000000000000000000WR",
        "extract",
    ]
