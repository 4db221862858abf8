"""A task's runs as its page shows them: each run's id by the part that tells it from the others
(a task's occurrences share their random part and the start of their time; the whole id in its
title)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from local.receiver import Receiver, running_receiver
from tests.browser.console import as_tenant, eventually, http_target, sign_in

pytestmark = pytest.mark.browser


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
