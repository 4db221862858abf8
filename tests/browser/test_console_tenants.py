"""The console and tenants: a tenant's console never shows another's tasks (the list, nor the
task's page opened by its id), and a key that is refused (revoked, or never valid) sends the
browser back to sign-in with the key forgotten."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.console import as_tenant, eventually, http_target, nav, sign_in
from tests.support.eventually import until
from tests.support.runtime import ADMIN_KEY

pytestmark = pytest.mark.browser

KEY_ITEM = "sundial.key"
"""Where the console keeps the key (api.js)."""


def test_one_tenant_never_sees_another_tenants_task(page, shoot, sundial, new_tenant) -> None:
    alice, bob = new_tenant("alice"), new_tenant("bob")
    spec = {"name": "alice-only", "schedule": {"after_seconds": 3600}, "target": http_target("http://127.0.0.1:9/a")}
    status, task = as_tenant(sundial, alice.key)("POST", "/v1/tasks", spec)
    assert status == 201
    # first: while alice's list lags, bob's empty one would prove nothing
    eventually(lambda: as_tenant(sundial, alice.key)("GET", "/v1/tasks")[1]["items"], what="alice's task listed")

    sign_in(page, bob.key)
    tasks = page.get_by_test_id("tasks")
    expect(page.get_by_text("No tasks on this page.")).to_be_visible()
    expect(tasks).not_to_contain_text("alice-only")
    page.goto(f"/console/#/tasks/{task['id']}")
    expect(page.get_by_test_id("error")).to_contain_text("404")
    expect(page.get_by_test_id("task-name")).to_have_count(0)
    expect(page.get_by_text("alice-only")).to_have_count(0)

    # the same page signed in as its tenant shows the task: the check above could fail
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_test_id("signed-out")).to_have_text("Signed out.")
    assert page.evaluate(f"sessionStorage.getItem('{KEY_ITEM}')") is None
    page.get_by_label("API key").fill(alice.key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_test_id("task-name")).to_have_text("alice-only")
    nav(page, "Tasks")
    expect(tasks).to_contain_text("alice-only")


def test_a_revoked_key_sends_the_browser_back_to_sign_in(page, shoot, sundial, new_tenant) -> None:
    tenant = new_tenant("revoked")
    sign_in(page, tenant.key)
    assert page.evaluate(f"sessionStorage.getItem('{KEY_ITEM}')") == tenant.key
    expect(page.get_by_text("No tasks on this page.")).to_be_visible()  # the tasks page does not poll

    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    assert sundial.call("DELETE", f"/v1/tenants/{tenant.id}/keys/{tenant.key_id}", None, admin)[0] == 204
    # once the gateway's kept answer for the key has expired (tests.support.runtime.AUTHORIZER_CACHE_S)
    refused = {"Authorization": f"Bearer {tenant.key}"}
    assert until(lambda: sundial.call("GET", "/v1/tasks?limit=1", headers=refused)[0] == 401, 30)
    nav(page, "Dead letters")  # the console's next call is refused
    expect(page.get_by_test_id("signed-out")).to_contain_text("not accepted")
    expect(page.get_by_label("API key")).to_be_visible()
    assert page.evaluate(f"sessionStorage.getItem('{KEY_ITEM}')") is None
    expect(page.get_by_role("button", name="Sign out")).to_have_count(0)
    shoot(page, "signed-out")


def test_an_unknown_key_is_refused_at_sign_in(page) -> None:
    page.goto("/console/")
    page.get_by_label("API key").fill("sk_not-a-key")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_test_id("signed-out")).to_contain_text("not accepted")
    assert page.evaluate(f"sessionStorage.getItem('{KEY_ITEM}')") is None
