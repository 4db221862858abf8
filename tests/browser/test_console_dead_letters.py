"""A dead letter in the console: listed, inspected, and redriven from its page (it fires once more)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from local.receiver import Receiver, running_receiver
from tests.browser.console import as_tenant, eventually, http_target, nav, sign_in

pytestmark = pytest.mark.browser


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as running:
        yield running


def test_a_dead_letter_is_inspected_and_redriven(page, shoot, sundial, new_tenant, receiver) -> None:
    tenant = new_tenant("letters")
    call = as_tenant(sundial, tenant.key)
    url = receiver.script("/flaky", 500, 200)  # fails once, then succeeds
    spec = {
        "name": "flaky-hook",
        "schedule": {"after_seconds": 0.1},
        "target": http_target(url, headers={"X-Api-Key": "sk_live_do-not-show"}),
        "retry": {"max_attempts": 1},
    }
    status, task = call("POST", "/v1/tasks", spec)
    assert status == 201
    # the page lists the letters waiting for a redrive: the status index, a moment behind the write
    waiting = "/v1/dead-letters?status=dead_lettered"
    letters = eventually(lambda: call("GET", waiting)[1]["items"], what="the dead letter")
    letter = letters[0]

    sign_in(page, tenant.key)
    nav(page, "Dead letters")
    rows = page.get_by_test_id("dead-letters").locator("tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("flaky-hook")
    page.get_by_role("button", name="Inspect").click()
    inspected = page.get_by_test_id("letter")
    expect(inspected).to_contain_text(letter["reason"])
    expect(inspected).to_contain_text(letter["run_id"])
    expect(inspected).to_contain_text("[redacted]")
    expect(inspected).not_to_contain_text("sk_live_do-not-show")
    shoot(page, "dead-letters")

    page.get_by_label(f"select {letter['id']}").check()
    page.get_by_role("button", name="Redrive selected (1)").click()
    expect(page.get_by_test_id("redriven")).to_have_text("Redriven: 1")
    expect(rows).to_have_count(0)  # the list shows the letters not redriven yet
    assert len(receiver.wait_for("/flaky", 2, timeout=20)) == 2, "the redriven letter did not fire"

    page.get_by_label("Status").select_option("redriven")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("redriven")
    assert call("GET", f"/v1/dead-letters/{letter['id']}")[1]["status"] == "redriven"
    assert task["id"] == letter["task_id"]


def test_redrive_all_fires_every_letter_not_redriven(page, sundial, new_tenant, receiver) -> None:
    tenant = new_tenant("redrive-all")
    call = as_tenant(sundial, tenant.key)
    url = receiver.script("/down", 500)
    for name in ("one", "two"):
        spec = {
            "name": name,
            "schedule": {"after_seconds": 0.1},
            "target": http_target(url),
            "retry": {"max_attempts": 1},
        }
        assert call("POST", "/v1/tasks", spec)[0] == 201
    waiting = "/v1/dead-letters?status=dead_lettered"  # what the page and "all" read: the status index
    eventually(lambda: len(call("GET", waiting)[1]["items"]) == 2, what="two dead letters")

    sign_in(page, tenant.key)
    nav(page, "Dead letters")
    expect(page.get_by_test_id("dead-letters").locator("tbody tr")).to_have_count(2)
    page.get_by_role("button", name="Redrive all").click()
    expect(page.get_by_test_id("redriven")).to_have_text("Redriven: 2")
    assert len(receiver.wait_for("/down", 4, timeout=20)) == 4


def test_redrive_all_follows_next_cursor_until_it_is_null(page, new_tenant) -> None:
    """The API redrives all a step at a time (up to 100 a call): the console calls again with each
    answer's next_cursor and shows the total. The API's steps are played here by the browser's
    network layer (crossing the real step needs over 100 dead letters)."""
    import json

    tenant = new_tenant("redrive-steps")
    steps = {None: (2, "c1"), "c1": (0, "c2"), "c2": (1, None)}
    bodies: list[dict] = []

    def step(route) -> None:
        body = json.loads(route.request.post_data or "{}")
        bodies.append(body)
        redriven, after = steps[body.get("cursor")]
        runs = [{"id": f"L{i}", "task_id": "T", "run_id": f"R{i}"} for i in range(redriven)]
        route.fulfill(json={"redriven": redriven, "runs": runs, "next_cursor": after})

    page.route("**/v1/dead-letters/redrive", step)
    sign_in(page, tenant.key)
    nav(page, "Dead letters")
    page.get_by_role("button", name="Redrive all").click()
    expect(page.get_by_test_id("redriven")).to_have_text("Redriven: 3")
    assert bodies == [{"all": True}, {"all": True, "cursor": "c1"}, {"all": True, "cursor": "c2"}]


def test_a_workflow_nodes_dead_letter_links_to_its_workflow_run(page, sundial, new_tenant, receiver) -> None:
    """A node's letter has the workflow's id as its task_id, which names no task: the list, the
    letter inspected and the home link it to the workflow run's page, with the node open."""
    tenant = new_tenant("node-letters")
    call = as_tenant(sundial, tenant.key)
    url = receiver.script("/node", 500)
    spec = {"name": "nightly", "nodes": [{"id": "extract", "target": http_target(url), "retry": {"max_attempts": 1}}]}
    status, workflow = call("POST", "/v1/workflows", spec)
    assert status == 201, workflow
    status, started = call("POST", f"/v1/workflows/{workflow['id']}/run")
    assert status == 202, started
    letter = eventually(lambda: call("GET", "/v1/dead-letters")[1]["items"], what="the node's dead letter")[0]
    assert letter["workflow"] == {"id": workflow["id"], "run_id": started["run_id"], "node": "extract", "attempt": 1}
    run_page = f"#/workflows/{workflow['id']}/runs/{started['run_id']}/nodes/extract"

    def lands_on_the_run() -> None:
        expect(page.get_by_role("heading", name=f"Run {started['run_id']}")).to_be_visible()
        expect(page.get_by_test_id("node-run")).to_contain_text("extract")
        expect(page.get_by_test_id("node-run-status")).to_have_text("dead_lettered")

    sign_in(page, tenant.key)
    nav(page, "Dead letters")
    named = f"node extract of workflow {workflow['id']}"
    row = page.get_by_test_id("dead-letters").locator("tbody tr").first
    link = row.get_by_role("link", name=named)
    expect(link).to_have_attribute("href", run_page)
    page.get_by_role("button", name="Inspect").click()
    expect(page.get_by_test_id("letter-workflow").get_by_role("link")).to_have_attribute("href", run_page)
    link.click()
    lands_on_the_run()

    nav(page, "Home")
    page.get_by_test_id("dead-letters-waiting").get_by_role("link", name=named).click()
    lands_on_the_run()
