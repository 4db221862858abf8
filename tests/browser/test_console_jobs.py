"""A job in the console: its progress while a shard is still at work, then its result."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.console import as_tenant, eventually, nav, sign_in
from tests.support.processor import Answer, running_processor

pytestmark = pytest.mark.browser


def test_a_job_is_shown_with_its_progress_then_its_result(page, shoot, sundial, new_tenant) -> None:
    tenant = new_tenant("jobs")
    call = as_tenant(sundial, tenant.key)
    release = threading.Event()

    def process(body: dict[str, Any]) -> Answer:
        if body["phase"] == "shard":
            if body["level"] == 1:  # the last level's shard waits until the test has looked
                release.wait(timeout=25)
            return 200, {"result": sum(body["items"])}
        if body["phase"] == "post":
            return 200, {"result": {"total": sum(body["results"])}}
        return 200, {}

    with running_processor(process) as (url, _):
        spec = {
            "name": "console-sum",
            "processor": {"http": {"url": url, "timeout_seconds": 30}},
            "data": [[1, 2, 3], [4]],
            "sharding": {"min_items_per_shard": 1, "max_items_per_shard": 1, "max_shards": 10},
        }
        status, job = call("POST", "/v1/jobs", spec)
        assert status == 201
        try:
            eventually(
                lambda: call("GET", f"/v1/jobs/{job['id']}")[1]["progress"]["done_shards"] == 3, what="3 shards done"
            )
            sign_in(page, tenant.key)
            nav(page, "Jobs")
            rows = page.get_by_test_id("jobs").locator("tbody tr")
            expect(rows).to_have_count(1)
            expect(rows.first).to_contain_text("running")
            expect(rows.first.get_by_test_id("progress")).to_have_text("3/4 shards, 75%")
            assert rows.first.get_by_role("progressbar").get_attribute("value") == "75"
            shoot(page, "jobs")
            rows.first.get_by_role("link", name="console-sum").click()
            expect(page.get_by_test_id("job-status")).to_have_text("running")
        finally:
            release.set()
        # the job page refreshes itself until the job is done
        expect(page.get_by_test_id("job-status")).to_have_text("succeeded", timeout=20_000)
        expect(page.get_by_test_id("progress")).to_have_text("4/4 shards, 100%")
        expect(page.get_by_test_id("job-result")).to_contain_text('"total": 10')
        shoot(page, "job")
