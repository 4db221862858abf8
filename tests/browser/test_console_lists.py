"""Every list the console shows reads on past a page that came back short, or empty, with a
cursor (a filtered list reads a bounded number of items a request: such a page is not the end),
until it has a screenful or the list's end, at most 10 requests; then it says how many it shows
and that there are more, never "nothing" while a cursor is left.

The list routes are answered by the test (Playwright's routing, in the page), page by page, as a
filtered list answers when the items it wants are far down the tenant's list; the rest of the
console talks to the suite's runtime."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from tests.browser.console import as_tenant, http_target, sign_in

pytestmark = pytest.mark.browser

MOST_REQUESTS = 10
"""The most requests a screenful makes (api.js)."""
WHEN = "2030-03-01T08:00:00.000Z"

TASK = {"id": "01J0000000000000000000000A", "name": "far-down", "status": "cancelled",
        "schedule": {"cron": "0 3 * * *"}, "created_at": WHEN, "next_fire_at": None}  # fmt: skip
LETTER = {"id": "01J0000000000000000000000B", "task_id": TASK["id"], "name": "far-down", "status": "redriven",
          "scheduled_for": WHEN, "failed_at": WHEN, "attempts": 3, "reason": "HTTP 500"}  # fmt: skip
JOB = {"id": "01J0000000000000000000000C", "name": "far-down", "status": "succeeded", "created_at": WHEN,
       "progress": {"total_shards": 1, "done_shards": 1, "percent": 100}, "finished_at": WHEN}  # fmt: skip
WORKFLOW = {"id": "01J0000000000000000000000D", "name": "far-down", "version": 1, "schedule": None, "nodes": [],
            "edges": [], "created_at": WHEN}  # fmt: skip
RUN = {"run_id": "01J0000000000000000000000E", "workflow_id": WORKFLOW["id"], "status": "failed", "version": 1,
       "nodes": {"a": {"status": "failed"}}, "created_at": WHEN, "ended_at": WHEN}  # fmt: skip
TASK_RUN = {"run_id": "01J0000000000000000000000F", "scheduled_for": WHEN, "fired_at": WHEN, "status": "failed",
            "attempts": 1, "lateness_ms": 3}  # fmt: skip

LISTS = {
    # page address, the list route it reads, an item of it, what the item's row shows
    "tasks": ("#/tasks?status=cancelled", "/v1/tasks", TASK, "far-down"),
    "dead-letters": ("#/dead-letters?status=redriven", "/v1/dead-letters", LETTER, "far-down"),
    "jobs": ("#/jobs?status=succeeded", "/v1/jobs", JOB, "far-down"),
    "workflows": ("#/workflows", "/v1/workflows", WORKFLOW, "far-down"),
    "workflow-runs": ("#/workflow-runs?status=failed", "/v1/workflow-runs", RUN, RUN["run_id"]),
}


class FakeList:
    """A list route answered page by page: ``pages[n]`` is the items of the n-th page (cursor
    ``c<n>``), each with the next page's cursor; past the last, empty pages with a cursor go on
    for ever (``endless``) or the list ends."""

    def __init__(self, path: str, pages: list[list[dict[str, Any]]], endless: bool = False) -> None:
        self.path, self.pages, self.endless = path, pages, endless
        self.asked: list[tuple[str | None, int]] = []

    def matches(self, url: str) -> bool:
        return urlsplit(url).path == self.path

    def answer(self, route: Any) -> None:
        query = parse_qs(urlsplit(route.request.url).query)
        cursor = query.get("cursor", [None])[0]
        self.asked.append((cursor, int(query["limit"][0])))
        n = int(cursor[1:]) if cursor else 0
        items = self.pages[n] if n < len(self.pages) else []
        last = n + 1 >= len(self.pages) and not self.endless
        body = {"items": items, "next_cursor": None if last else f"c{n + 1}"}
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))


def serve(page: Any, fake: FakeList) -> FakeList:
    page.route(fake.matches, fake.answer)
    return fake


@pytest.fixture
def tenant_key(new_tenant: Callable[[str], Any]) -> str:
    return new_tenant("lists").key


@pytest.mark.parametrize("name", LISTS)
def test_a_list_reads_past_empty_pages_to_what_it_holds(page, tenant_key, name) -> None:
    where, path, item, shown = LISTS[name]
    fake = serve(page, FakeList(path, [[], [], [], [item]]))
    sign_in(page, tenant_key, where)
    expect(page.get_by_role("link", name=shown)).to_be_visible()
    expect(page.get_by_test_id("more")).to_have_text("1 shown, no more.")
    expect(page.get_by_role("button", name="Next")).to_be_disabled()
    assert [cursor for cursor, _ in fake.asked] == [None, "c1", "c2", "c3"]


@pytest.mark.parametrize("name", LISTS)
def test_a_list_stops_after_ten_requests_and_says_there_is_more(page, tenant_key, name) -> None:
    where, path, item, shown = LISTS[name]
    fake = serve(page, FakeList(path, [[], [item]], endless=True))
    sign_in(page, tenant_key, where)
    expect(page.get_by_role("link", name=shown)).to_be_visible()
    expect(page.get_by_test_id("more")).to_have_text("1 shown, more…")
    assert len(fake.asked) == MOST_REQUESTS
    assert [cursor for cursor, _ in fake.asked] == [None] + [f"c{n}" for n in range(1, MOST_REQUESTS)]
    size = fake.asked[0][1]
    assert [limit for _, limit in fake.asked] == [size, size] + [size - 1] * (MOST_REQUESTS - 2)  # what is missing

    page.get_by_role("button", name="Next").click()  # the next screenful goes on from where this one stopped
    expect(page.get_by_test_id("page")).to_have_text("page 2")
    expect(page.get_by_test_id("more")).to_have_text(
        "None found in the part of the list read so far, and the list goes on: more…"
    )
    expect(page.get_by_role("button", name="Next")).to_be_enabled()
    assert fake.asked[MOST_REQUESTS][0] == f"c{MOST_REQUESTS}"


def test_a_tasks_runs_and_a_workflows_runs_read_on_too(page, sundial, tenant_key) -> None:
    call = as_tenant(sundial, tenant_key)
    status, task = call(
        "POST", "/v1/tasks", {"schedule": {"cron": "0 3 * * *"}, "target": http_target("http://127.0.0.1:9/")}
    )
    assert status == 201, task
    one = {"nodes": [{"id": "a", "target": http_target("http://127.0.0.1:9/")}], "edges": []}
    status, workflow = call("POST", "/v1/workflows", one)
    assert status == 201, workflow

    runs = serve(page, FakeList(f"/v1/tasks/{task['id']}/runs", [[], [], [TASK_RUN]], endless=True))
    sign_in(page, tenant_key, f"#/tasks/{task['id']}")
    expect(page.get_by_test_id("runs").locator("tbody tr")).to_have_count(1)
    expect(page.get_by_test_id("more")).to_have_text("1 shown, more…")
    assert len(runs.asked) >= MOST_REQUESTS

    workflow_runs = serve(page, FakeList(f"/v1/workflows/{workflow['id']}/runs", [[], [RUN]]))
    page.goto(f"/console/#/workflows/{workflow['id']}")
    expect(page.get_by_test_id("workflow-runs").locator("tbody tr")).to_have_count(1)
    expect(page.get_by_test_id("more")).to_have_text("1 shown, no more.")
    assert [cursor for cursor, _ in workflow_runs.asked][:2] == [None, "c1"]
