"""Workflows in the console: the list, a workflow's definition and runs, and a run drawn as its
graph (a box per node coloured by its status, an edge per edge styled by its ``on``), a node's run
opened from its box, the run cancelled from its page and retried until it succeeds."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.console import as_tenant, eventually, nav, sign_in
from tests.support.processor import Answer, running_processor

pytestmark = pytest.mark.browser


def _spec(url: str, name: str = "nightly") -> dict[str, Any]:
    """extract, then load; report after load; page only if extract fails (so skipped)."""
    target = {"http": {"url": url, "timeout_seconds": 30}}
    return {
        "name": name,
        "nodes": [
            {"id": "extract", "target": target},
            {"id": "load", "target": target, "retry": {"max_attempts": 1}},
            {"id": "report", "target": target},
            {"id": "page", "target": target, "join": "any"},
        ],
        "edges": [
            {"from": "extract", "to": "load"},
            {"from": "load", "to": "report"},
            {"from": "extract", "to": "page", "on": "failure"},
            {"from": "load", "to": "page", "on": "always"},
        ],
    }


def test_a_run_is_drawn_as_its_graph_then_cancelled_and_retried(page, shoot, sundial, new_tenant) -> None:
    tenant = new_tenant("workflows")
    call = as_tenant(sundial, tenant.key)
    release, calls = threading.Event(), []

    def process(body: dict[str, Any]) -> Answer:
        calls.append(body["workflow"]["node"])
        if body["workflow"]["node"] == "load":  # load waits until the test has looked and cancelled
            release.wait(timeout=25)
        return 200, {"ok": True}

    with running_processor(process) as (url, _):
        status, workflow = call("POST", "/v1/workflows", _spec(url))
        assert status == 201, workflow
        wid = workflow["id"]
        status, started = call("POST", f"/v1/workflows/{wid}/run")
        assert status == 202, started
        runs = f"/v1/workflows/{wid}/runs/{started['run_id']}"
        try:
            eventually(lambda: "load" in calls, what="load's call")
            eventually(lambda: call("GET", runs)[1]["nodes"]["load"]["status"] == "running", what="load running")

            sign_in(page, tenant.key)
            nav(page, "Workflows")
            row = page.get_by_test_id("workflows").locator("tbody tr")
            expect(row).to_have_count(1)
            expect(row.get_by_test_id("node-count")).to_have_text("4")
            expect(row).to_contain_text(wid)
            shoot(page, "workflows")
            row.get_by_role("link", name="nightly").click()

            # the workflow: its definition and its one run
            expect(page.get_by_test_id("workflow-name")).to_have_text("nightly")
            expect(page.get_by_test_id("workflow-nodes").locator("tbody tr")).to_have_count(4)
            expect(page.get_by_test_id("workflow-edges").locator("tbody tr")).to_have_count(4)
            expect(page.get_by_test_id("graph-node")).to_have_count(4)
            run_row = page.get_by_test_id("workflow-runs").locator("tbody tr")
            expect(run_row).to_have_count(1)
            expect(run_row.locator(".status-running")).to_have_text("running")
            shoot(page, "workflow")
            run_row.get_by_role("link", name=started["run_id"]).click()

            # the run: one box per node coloured by its status, one line per edge styled by its on
            expect(page.get_by_test_id("run-status")).to_have_text("running")
            graph = page.get_by_test_id("graph")
            expect(graph.get_by_test_id("graph-node")).to_have_count(4)
            expect(graph.locator('[data-node="extract"]')).to_have_class("node node-succeeded")
            expect(graph.locator('[data-node="load"]')).to_have_class("node node-running")
            expect(graph.locator('[data-node="report"]')).to_have_class("node node-pending")
            expect(graph.get_by_test_id("graph-edge")).to_have_count(4)
            expect(graph.locator(".edge-failure")).to_have_count(1)
            expect(graph.locator(".edge-always")).to_have_count(1)
            expect(graph.locator(".edge-failure")).to_have_attribute("data-to", "page")
            # the boxes are laid out in columns: extract, then load, then report (and page)
            x = {n: graph.locator(f'[data-node="{n}"] rect').get_attribute("x") for n in ("extract", "load", "report")}
            assert float(x["extract"]) < float(x["load"]) < float(x["report"])
            expect(graph.get_by_role("link")).to_have_count(2)  # extract and load have runs; report none yet
            shoot(page, "workflow-run", docs=True)

            # a node links to its run
            graph.get_by_role("link", name="extract: succeeded").click()
            expect(page).to_have_url(f"{sundial.base}/console/#/workflows/{wid}/runs/{started['run_id']}/nodes/extract")
            panel = page.get_by_test_id("node-run")
            expect(panel.get_by_test_id("node-run-status")).to_have_text("succeeded")
            expect(panel.get_by_test_id("node-attempts")).to_have_text("1")
            expect(panel.get_by_test_id("node-lateness")).to_contain_text(" ms")

            # Cancel, asked first
            page.get_by_role("button", name="Cancel run").click()
            page.get_by_role("button", name="Keep it as it is").click()  # nothing sent
            assert call("GET", runs)[1]["status"] == "running"
            page.get_by_role("button", name="Cancel run").click()
            page.get_by_role("button", name="Yes, cancel it").click()
            expect(page.get_by_test_id("outcome")).to_have_text("Cancelled.")
            expect(page.get_by_test_id("run-status")).to_have_text("cancelled")
            for node in ("load", "report", "page"):
                expect(graph.locator(f'[data-node="{node}"]')).to_have_class("node node-cancelled")
            expect(page.get_by_role("button", name="Cancel run")).to_have_count(0)
            assert call("GET", runs)[1]["status"] == "cancelled"
        finally:
            release.set()

        # Retry: the cancelled nodes run again; the page refreshes itself until the run succeeds
        page.get_by_role("button", name="Retry run").click()
        page.get_by_role("button", name="Yes, retry it").click()
        expect(page.get_by_test_id("run-status")).to_have_text("succeeded", timeout=20_000)
        expect(graph.locator('[data-node="report"]')).to_have_class("node node-succeeded")
        expect(graph.locator('[data-node="load"] .node-status')).to_have_text("succeeded · attempt 2")
        expect(graph.locator('[data-node="page"]')).to_have_class("node node-succeeded")
        shoot(page, "workflow-run-retried")


def test_a_workflow_is_run_now_from_its_page_and_the_list_pages(page, sundial, new_tenant) -> None:
    tenant = new_tenant("wfrunnow")
    call = as_tenant(sundial, tenant.key)
    with running_processor(lambda body: (200, {})) as (url, _):
        one = {"nodes": [{"id": "only", "target": {"http": {"url": url}}}], "edges": []}
        for i in range(21):
            status, made = call("POST", "/v1/workflows", {**one, "name": f"wf-{i:02}"})
            assert status == 201, made
        sign_in(page, tenant.key, "#/workflows")
        rows = page.get_by_test_id("workflows").locator("tbody tr")
        expect(rows).to_have_count(20)
        expect(rows.first).to_contain_text("wf-20")  # newest first
        page.get_by_role("button", name="Next").click()
        expect(rows).to_have_count(1)
        expect(rows.first).to_contain_text("wf-00")
        rows.first.get_by_role("link", name="wf-00").click()

        expect(page.get_by_test_id("workflow-runs")).to_have_count(0)
        page.get_by_role("button", name="Run now").click()
        outcome = page.get_by_test_id("outcome")
        expect(outcome).to_contain_text("Run started")
        run_id = outcome.get_by_role("link").inner_text()
        # the runs refresh every 3 s until this one has succeeded
        run_row = page.get_by_test_id("workflow-runs").locator("tbody tr")
        expect(run_row).to_have_count(1)
        expect(run_row.locator(".status-succeeded")).to_have_text("succeeded", timeout=20_000)
        outcome.get_by_role("link").click()
        expect(page.get_by_test_id("run-status")).to_have_text("succeeded")
        expect(page.get_by_test_id("graph-edge")).to_have_count(0)
        expect(page.get_by_test_id("graph").get_by_role("link", name="only: succeeded")).to_have_count(1)
        assert run_id in page.get_by_role("heading", level=1).inner_text()


def test_a_failed_run_shows_the_failed_node_its_error_and_what_was_skipped(page, shoot, sundial, new_tenant) -> None:
    tenant = new_tenant("wffailed")
    call = as_tenant(sundial, tenant.key)
    with running_processor(lambda body: (500, {}) if body["workflow"]["node"] == "load" else (200, {})) as (url, _):
        target = {"http": {"url": url}}
        spec = {
            "name": "<b>fails</b>",  # shown as text, never as markup
            "nodes": [
                {"id": "load", "target": target, "retry": {"max_attempts": 1}},
                {"id": "report", "target": target},
                {"id": "alert", "target": target},
            ],
            "edges": [{"from": "load", "to": "report"}, {"from": "load", "to": "alert", "on": "failure"}],
        }
        status, workflow = call("POST", "/v1/workflows", spec)
        assert status == 201, workflow
        status, started = call("POST", f"/v1/workflows/{workflow['id']}/run")
        path = f"/v1/workflows/{workflow['id']}/runs/{started['run_id']}"
        eventually(lambda: call("GET", path)[1]["status"] == "failed", what="the run failing")

        sign_in(page, tenant.key, f"#/workflows/{workflow['id']}/runs/{started['run_id']}/nodes/load")
        expect(page.get_by_test_id("run-status")).to_have_text("failed")
        graph = page.get_by_test_id("graph")
        expect(graph.locator('[data-node="load"]')).to_have_class("node node-failed")
        expect(graph.locator('[data-node="report"]')).to_have_class("node node-skipped")
        expect(graph.locator('[data-node="alert"]')).to_have_class("node node-succeeded")
        expect(graph.get_by_role("link")).to_have_count(2)  # the skipped node has no run
        panel = page.get_by_test_id("node-run")
        expect(panel.get_by_test_id("node-error")).to_have_text("HTTP 500")
        expect(panel.get_by_test_id("node-run-status")).to_have_text("dead_lettered")
        expect(page.get_by_role("button", name="Retry run")).to_have_count(1)
        expect(page.get_by_role("button", name="Cancel run")).to_have_count(0)
        shoot(page, "workflow-run-failed")

        page.get_by_role("link", name="The workflow").click()
        expect(page.get_by_test_id("workflow-name")).to_have_text("<b>fails</b>")
        expect(page.get_by_test_id("workflow-name").locator("b")).to_have_count(0)
        expect(page.get_by_test_id("workflow-runs").locator(".status-failed")).to_have_text("failed")


def test_the_layout_puts_each_node_in_the_column_of_its_longest_path_in_a_stable_order(page) -> None:
    """graph.js's layout, called in the page: a node after a long and a short path sits after the
    long one; nodes of a column keep the workflow's order, whatever the order of the edges."""
    page.goto("/console/")
    edges = [
        {"from": "a", "to": "c"},
        {"from": "b", "to": "c"},
        {"from": "a", "to": "d"},
        {"from": "c", "to": "d"},
        {"from": "a", "to": "z"},
    ]
    layout = page.evaluate(
        "async ([nodes, edges]) => (await import('./graph.js')).layout(nodes, edges)",
        [["z", "a", "b", "c", "d"], edges],
    )
    at = layout["at"]
    column = {node: at[node]["x"] for node in at}
    assert column["a"] == column["b"] < column["c"] == column["z"] < column["d"]
    assert at["a"]["y"] < at["b"]["y"]  # the roots in the workflow's order
    assert at["z"]["y"] < at["c"]["y"]  # z is listed before c
    assert layout["width"] > column["d"]
    assert layout["height"] > at["b"]["y"]
