"""A task's runs as its page shows them: each run's id by the part that tells it from the others
(a task's occurrences share their random part and the start of their time; the whole id in its
title), and the lateness chart's axis labels, long ones included, drawn inside its canvas."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from playwright.sync_api import expect

from local.receiver import Receiver, running_receiver
from tests.browser.console import as_tenant, eventually, http_target, sign_in

pytestmark = pytest.mark.browser

RECORD_CANVAS_BOXES = """
window.drawnBoxes = [];
const fillText = CanvasRenderingContext2D.prototype.fillText;
CanvasRenderingContext2D.prototype.fillText = function (text, x, y, ...rest) {
  const m = this.measureText(String(text));
  const t = this.getTransform();
  // the text's box as drawn (its alignment's own extents from x and y), in canvas pixels
  const left = x - m.actualBoundingBoxLeft, right = x + m.actualBoundingBoxRight;
  const top = y - m.actualBoundingBoxAscent, bottom = y + m.actualBoundingBoxDescent;
  const at = ([px, py]) => [t.a * px + t.c * py + t.e, t.b * px + t.d * py + t.f];
  const corners = [at([left, top]), at([right, bottom])];
  window.drawnBoxes.push({
    text: String(text),
    left: Math.min(corners[0][0], corners[1][0]),
    right: Math.max(corners[0][0], corners[1][0]),
    top: Math.min(corners[0][1], corners[1][1]),
    bottom: Math.max(corners[0][1], corners[1][1]),
    width: this.canvas.width,
    height: this.canvas.height,
  });
  return fillText.call(this, text, x, y, ...rest);
};
"""
"""Runs before the console's scripts (Playwright's init script, outside the page's policy): the
box of every text a canvas draws, with that canvas's size, so a test sees a label cut at its edge."""


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as running:
        yield running


def test_the_runs_table_shows_the_part_of_each_run_id_that_differs_with_the_whole_id_in_its_title(
    page, shoot, sundial, new_tenant, receiver
) -> None:
    tenant = new_tenant("run-ids")
    call = as_tenant(sundial, tenant.key)
    spec = {"name": "beat", "schedule": {"every_seconds": 1}, "target": http_target(receiver.url + "/beat")}
    status, task = call("POST", "/v1/tasks", spec)
    assert status == 201, task
    assert receiver.wait_for("/beat", 3, timeout=20), "the task did not fire three times"
    status, extra = call("POST", f"/v1/tasks/{task['id']}/run")  # a run now: an id of its own
    assert status == 202, extra
    eventually(
        lambda: any(r["run_id"] == extra["run_id"] for r in call("GET", f"/v1/tasks/{task['id']}/runs")[1]["items"])
    )
    call("POST", f"/v1/tasks/{task['id']}/pause")  # no more runs: the table stays as read
    runs = call("GET", f"/v1/tasks/{task['id']}/runs?limit=100")[1]["items"]
    ids = [run["run_id"] for run in runs]
    assert len(ids) >= 4

    sign_in(page, tenant.key, f"#/tasks/{task['id']}")
    cells = page.get_by_test_id("runs").get_by_test_id("run-id")
    expect(cells).to_have_count(len(ids))
    titles = [cell.get_attribute("title") for cell in cells.all()]
    shown = cells.all_inner_texts()
    assert titles == ids  # the whole id on hover, in the API's order
    shoot(page, "task-runs")
    parts = [text.replace("…", "") for text in shown]
    assert all(part in run_id for part, run_id in zip(parts, ids, strict=True)), (shown, ids)
    assert len(set(parts)) == len(parts), shown  # each run told from the others by what is shown
    assert all(len(part) < len(run_id) for part, run_id in zip(parts, ids, strict=True)), shown
    # the shown part is where the ids differ: no two runs share it, and nothing all ids share is
    # all that is shown (the prefix every run of a task begins with)
    common = len(ids[0])
    for run_id in ids[1:]:
        common = min(
            common, next((i for i, (a, b) in enumerate(zip(ids[0], run_id, strict=True)) if a != b), len(run_id))
        )
    assert all(len(part) > 0 and ids[i].find(part) + len(part) > common for i, part in enumerate(parts)), (
        shown,
        common,
    )


def _runs(task_id: str, lateness: list[int]) -> list[dict[str, Any]]:
    """Runs a second apart, newest first, with these latenesses (as the API answers them)."""
    start = datetime(2030, 3, 1, 8, 0, tzinfo=UTC)
    runs = []
    for i, late in enumerate(lateness):
        due = start + timedelta(seconds=i)
        runs.append(
            {
                "run_id": f"01M8K0000{i:02d}ABCDEFGHJKMNPQ",
                "task_id": task_id,
                "scheduled_for": due.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                "fired_at": (due + timedelta(milliseconds=late))
                .isoformat(timespec="milliseconds")
                .replace("+00:00", "Z"),
                "status": "succeeded",
                "attempts": 1,
                "lateness_ms": late,
                "throttled_ms": 0,
                "last_error": None,
            }
        )
    return list(reversed(runs))


@pytest.mark.parametrize("lateness", [[12, 40, 25], [250, 12_345, 800], [1_200_000, 3_500_000, 90_000]])
def test_the_lateness_charts_axis_labels_lie_inside_its_canvas(page, shoot, sundial, new_tenant, lateness) -> None:
    """The runs the page reads are played by the browser's network layer (a run 20 minutes late
    needs a receiver 20 minutes slow): the chart draws what the API would answer."""
    tenant = new_tenant("chart-labels")
    call = as_tenant(sundial, tenant.key)
    status, task = call(
        "POST", "/v1/tasks", {"schedule": {"cron": "0 0 1 1 *"}, "target": http_target("http://127.0.0.1:9/")}
    )
    assert status == 201, task
    answer = {"items": _runs(task["id"], lateness), "next_cursor": None}
    page.route(f"**/v1/tasks/{task['id']}/runs*", lambda route: route.fulfill(json=answer))
    page.add_init_script(RECORD_CANVAS_BOXES)
    sign_in(page, tenant.key, f"#/tasks/{task['id']}")
    expect(page.get_by_test_id("lateness-chart").locator("canvas")).to_have_count(1)

    def labels() -> list[dict[str, Any]]:
        boxes = page.evaluate("window.drawnBoxes")
        assert any(box["text"].endswith(" ms") for box in boxes), boxes
        return boxes

    boxes = eventually(labels, what="the chart's axis labels")
    longest = max(lateness)
    assert any(box["text"].endswith(" ms") and len(box["text"]) >= len(f"{longest} ms") - 2 for box in boxes), boxes
    outside = [
        box
        for box in boxes
        if box["left"] < 0 or box["right"] > box["width"] or box["top"] < 0 or box["bottom"] > box["height"]
    ]
    assert not outside, json.dumps(outside, indent=1)
    shoot(page, f"task-chart-{longest}")
