"""A list command reads on past a page that came back short, or empty, with a cursor (a filtered
list reads a bounded number of items a request: such a page is not the end), asking each time
for what is still missing, until it has a page or the list's end, at most 10 requests; then it
says there is more and how to get it. Against a fake API (``httpx.MockTransport``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.unit.test_cli_client import TASK, run

pytestmark = pytest.mark.unit

MOST_REQUESTS = 10
"""The most requests one page of a list makes."""
PAGE_SIZE = 50
"""A page's size without --limit (the API's default)."""

A, B = "01J0000000000000000000000A", "01J0000000000000000000000B"


class FakeList:
    """A list route: ``pages[n]`` is the items of the page at cursor ``c<n>`` (the first: no
    cursor), each answered with the next one's cursor; past the last, empty pages with a cursor
    for ever when ``endless``, else the list ends."""

    def __init__(self, pages: list[list[dict[str, Any]]], endless: bool = False, fail_at: int | None = None) -> None:
        self.pages, self.endless, self.fail_at = pages, endless, fail_at
        self.asked: list[dict[str, str]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        params = dict(request.url.params)
        self.asked.append(params)
        n = int(params["cursor"][1:]) if "cursor" in params else 0
        if n == self.fail_at:
            return httpx.Response(500, json={"error": {"code": "internal_error", "message": "boom"}})
        items = self.pages[n] if n < len(self.pages) else []
        last = n + 1 >= len(self.pages) and not self.endless
        return httpx.Response(200, json={"items": items, "next_cursor": None if last else f"c{n + 1}"})


def task(task_id: str) -> dict[str, Any]:
    return {**TASK, "id": task_id, "status": "failed"}


def test_failed_tasks_far_down_the_list_are_shown_however_many_empty_pages_come_first() -> None:
    fake = FakeList([[], [], [task(A)], [task(B)]])
    result = run(fake, "tasks", "list", "--status", "failed")
    assert result.exit_code == 0, result.output
    listed = [line.split()[0] for line in result.stdout.splitlines()[1:]]
    assert listed == [A, B]
    assert result.stderr == ""  # the end: no "more"
    assert [ask.get("cursor") for ask in fake.asked] == [None, "c1", "c2", "c3"]
    assert {ask["status"] for ask in fake.asked} == {"failed"}
    limits = [int(ask["limit"]) for ask in fake.asked]
    assert limits == [PAGE_SIZE, PAGE_SIZE, PAGE_SIZE, PAGE_SIZE - 1]  # what is still missing


def test_json_is_one_page_with_the_cursor_to_go_on_from() -> None:
    fake = FakeList([[], [task(A)], [task(B)]], endless=True)
    result = run(fake, "-o", "json", "tasks", "list", "--status", "failed", "--limit", "2")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert ([item["id"] for item in data["items"]], data["next_cursor"]) == ([A, B], "c3")
    assert [int(ask["limit"]) for ask in fake.asked] == [2, 2, 1]


def test_a_full_page_is_one_request_and_says_how_to_get_more() -> None:
    fake = FakeList([[task(A), task(B)], [task(A)]])
    result = run(fake, "tasks", "list", "--limit", "2")
    assert result.exit_code == 0, result.output
    assert len(fake.asked) == 1
    assert "more: 2 shown, the list goes on: --cursor c1 (or --all for every page)" in result.stderr
    resumed = run(fake, "tasks", "list", "--limit", "2", "--cursor", "c1")
    assert resumed.stdout.splitlines()[1].split()[0] == A
    assert resumed.stderr == ""


@pytest.mark.parametrize(
    "command",
    [
        ("tasks", "list", "--status", "paused_after_failures"),
        ("tasks", "runs", A),
        ("dead-letters", "list", "--status", "dead_lettered"),
        ("jobs", "list", "--status", "failed"),
        ("workflows", "list"),
        ("workflows", "runs", A),
        ("workflow-runs", "list", "--status", "failed"),
        ("tenants", "list"),
    ],
)
def test_every_list_stops_after_ten_requests_and_never_calls_that_nothing(command: tuple[str, ...]) -> None:
    fake = FakeList([], endless=True)
    result = run(fake, *command)
    assert result.exit_code == 0, result.output
    assert len(fake.asked) == MOST_REQUESTS
    assert result.stderr.strip() == (
        f"more: none found in the {MOST_REQUESTS} pages read, but the list goes on: "
        f"--cursor c{MOST_REQUESTS} (or --all for every page)"
    )
    as_json = run(fake, "-o", "json", *command)
    assert json.loads(as_json.stdout) == {"items": [], "next_cursor": f"c{MOST_REQUESTS}"}
    everything = FakeList([[], [], []])
    assert run(everything, *command, "--all").exit_code == 0
    assert len(everything.asked) == 3


@pytest.mark.parametrize("status", ["failed", "paused", "paused_after_failures", "scheduled"])
def test_the_status_filter_takes_the_apis_values(status: str) -> None:
    fake = FakeList([[]])
    assert run(fake, "tasks", "list", "--status", status).exit_code == 0
    assert fake.asked[0]["status"] == status


def test_an_error_on_a_later_page_exits_non_zero_and_prints_no_table() -> None:
    fake: Callable[[httpx.Request], httpx.Response] = FakeList([[], [task(A)]], endless=True, fail_at=2)
    result = run(fake, "tasks", "list", "--status", "failed")
    assert result.exit_code == 5
    assert result.stdout == ""
    assert result.stderr.startswith("error: internal_error: boom")
