"""The console under an API Gateway stage (``/prod/console/`` on AWS) calls the API under the
same stage (``/prod/v1/...``): it finds the API next to itself, with nothing configured."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from tests.browser.console import as_tenant, eventually, http_target

pytestmark = pytest.mark.browser


def test_the_console_under_a_stage_calls_the_api_under_it(page, sundial, new_tenant) -> None:
    tenant = new_tenant("stage")
    spec = {"name": "staged", "schedule": {"after_seconds": 3600}, "target": http_target("http://127.0.0.1:9/s")}
    call = as_tenant(sundial, tenant.key)
    assert call("POST", "/v1/tasks", spec)[0] == 201
    eventually(lambda: call("GET", "/v1/tasks")[1]["items"], what="the task listed")  # an eventually consistent list
    staged: list[str] = []

    def strip_stage(route: Any) -> None:  # what API Gateway's stage does in front of the function
        staged.append(urlsplit(route.request.url).path)
        route.fulfill(response=route.fetch(url=route.request.url.replace("/prod/", "/", 1)))

    page.route("**/prod/**", strip_stage)
    page.goto("/prod/console/#/tasks")
    page.get_by_label("API key").fill(tenant.key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_test_id("tasks")).to_contain_text("staged")
    assert "/prod/console/app.js" in staged
    assert any(path.startswith("/prod/v1/tasks") for path in staged), staged
