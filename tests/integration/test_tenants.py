"""Tenants and API keys through the API and its authorizer (as the local gateway runs them on
every request): the admin's routes, who may call what, a key's life (issued, used, revoked),
isolation between two tenants' keys, and each tenant's request rate."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from tests.integration.conftest import ADMIN_KEY
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def soon(seconds: int = 3600) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat()


def task_spec(name: str = "t") -> dict[str, Any]:
    return {"name": name, "schedule": {"at": soon()}, "target": {"http": {"url": "https://example.com/hook"}}}


def create(api: Any, tenant: str, **limits: int) -> dict[str, Any]:
    body: dict[str, Any] = {"id": tenant}
    if limits:
        body["limits"] = limits
    answer = api("POST", "/v1/tenants", body, ADMIN)
    assert answer.status == 201, answer.body
    return dict(answer.body)


def table_text() -> str:
    return json.dumps(boto3.resource("dynamodb").Table("sundial-test").scan()["Items"], default=str)


def test_a_tenant_is_created_with_a_key_and_a_signing_secret_shown_once(api):
    created = create(api, "acme")
    assert created["id"] == "acme"
    assert created["limits"] == {"requests_per_second": 100, "burst": 200, "max_tasks": 1_000_000}
    assert created["live_tasks"] == 0
    key, signing = created["key"], created["signing_secret"]
    assert key["secret"].startswith(f"sk_{key['id']}_")
    assert signing["secret"].startswith("whsec_")
    stored = table_text()
    assert key["secret"] not in stored
    assert signing["secret"] not in stored
    assert hashlib.sha256(key["secret"].encode()).hexdigest() in stored
    # never shown again: not by the tenant, not by its keys
    shown = json.dumps(
        [api("GET", "/v1/tenants/acme", headers=ADMIN).body, api("GET", "/v1/tenants/acme/keys", headers=ADMIN).body]
    )
    assert key["secret"] not in shown
    assert signing["secret"] not in shown
    assert api("GET", "/v1/signing-secrets", headers=bearer(key["secret"])).body["items"][0]["id"] == signing["id"]


def test_tenant_ids_and_limits_are_checked_and_a_tenant_is_created_once(api):
    for bad in ("Acme", "", "a" * 65, "acme_1", "acme.io"):
        answer = api("POST", "/v1/tenants", {"id": bad}, ADMIN)
        assert answer.status == 400, bad
        assert answer.body["error"]["details"][0]["field"] == "id"
    answer = api("POST", "/v1/tenants", {"id": "acme", "limits": {"burst": 0}}, ADMIN)
    assert answer.status == 400
    assert answer.body["error"]["details"][0]["field"] == "limits.burst"
    create(api, "acme", max_tasks=10)
    again = api("POST", "/v1/tenants", {"id": "acme"}, ADMIN)
    assert again.status == 409
    assert again.body["error"]["code"] == "tenant_exists"


def test_a_tenants_rate_is_capped_at_what_its_one_rate_item_holds(api):
    """Every request of a tenant writes its one rate item, and one DynamoDB partition key takes
    1,000 writes a second: a rate or a burst above 500 is refused, naming the member."""
    create(api, "acme")
    for member in ("requests_per_second", "burst"):
        for method, path, body in [
            ("POST", "/v1/tenants", {"id": "globex", "limits": {member: 501}}),
            ("PATCH", "/v1/tenants/acme", {"limits": {member: 501}}),
        ]:
            answer = api(method, path, body, ADMIN)
            assert answer.status == 400, (method, member)
            assert answer.body["error"]["details"][0]["field"] == f"limits.{member}"
    top = api("PATCH", "/v1/tenants/acme", {"limits": {"requests_per_second": 500, "burst": 500}}, ADMIN)
    assert top.status == 200
    assert top.body["limits"]["requests_per_second"] == 500


def test_a_rate_stored_above_the_cap_reads_as_the_cap_and_the_tenant_is_still_served(api):
    """A tenant written before the cap (10,000 a second were accepted) is not locked out."""
    from shared.store.tenant_items import TenantItem

    secret = create(api, "acme")["key"]["secret"]
    TenantItem("T#acme", "T").update(
        actions=[TenantItem.requests_per_second.set(10_000), TenantItem.burst.set(100_000)]
    )
    assert api("GET", "/v1/tenants/acme", headers=ADMIN).body["limits"]["requests_per_second"] == 500
    assert api("GET", "/v1/tasks", headers=bearer(secret)).status == 200


def test_the_admin_lists_reads_and_changes_tenants(api):
    for tenant in ("globex", "acme", "initech"):
        create(api, tenant)
    first = api("GET", "/v1/tenants?limit=2", headers=ADMIN).body
    assert [t["id"] for t in first["items"]] == ["acme", "globex"]
    rest = api("GET", f"/v1/tenants?limit=2&cursor={first['next_cursor']}", headers=ADMIN).body
    assert [t["id"] for t in rest["items"]] == ["initech"]
    assert rest["next_cursor"] is None
    changed = api("PATCH", "/v1/tenants/acme", {"limits": {"max_tasks": 5}}, ADMIN)
    assert changed.status == 200
    assert changed.body["limits"] == {"requests_per_second": 100, "burst": 200, "max_tasks": 5}
    assert api("GET", "/v1/tenants/acme", headers=ADMIN).body["limits"]["max_tasks"] == 5
    assert api("PATCH", "/v1/tenants/acme", {"limits": {}}, ADMIN).status == 400
    for method, path, body in [
        ("GET", "/v1/tenants/nobody", None),
        ("PATCH", "/v1/tenants/nobody", {"limits": {"burst": 3}}),
        ("POST", "/v1/tenants/nobody/keys", None),
        ("GET", "/v1/tenants/nobody/keys", None),
    ]:
        answer = api(method, path, body, ADMIN)
        assert answer.status == 404, (method, path)
        assert answer.body["error"]["code"] == "tenant_not_found"


def test_no_key_a_bad_key_and_the_wrong_role_are_refused(api):
    tenant_key = create(api, "acme")["key"]["secret"]
    for headers in (
        bearer("sk_nope_nope"),
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Authorization": "Bearer"},
        bearer(tenant_key + "x"),
    ):
        answer = api("GET", "/v1/tasks", headers=headers)
        assert answer.status == 401, headers
        assert answer.body["error"]["code"] == "unauthorized"
        assert answer.headers["WWW-Authenticate"] == "Bearer"
    assert api("GET", "/v1/tenants", headers=bearer(tenant_key)).status == 403
    assert api("GET", "/v1/tenants").status == 403  # no key locally: the default tenant, not the admin
    refused = api("POST", "/v1/tasks", task_spec(), ADMIN)
    assert refused.status == 403
    assert refused.body["error"]["code"] == "forbidden"
    # the contract is public
    assert api("GET", "/v1/openapi.json", headers=bearer("sk_nope_nope")).status == 200


def test_a_tenants_key_is_its_tenant_and_nothing_in_the_request_changes_that(api):
    acme = create(api, "acme")["key"]["secret"]
    globex = create(api, "globex")["key"]["secret"]
    task = api("POST", "/v1/tasks", task_spec("acme's"), bearer(acme)).body
    assert api("GET", f"/v1/tasks/{task['id']}", headers=bearer(acme)).status == 200

    def acme_lists_it() -> None:
        assert [t["id"] for t in api("GET", "/v1/tasks", headers=bearer(acme)).body["items"]] == [task["id"]]

    eventually(acme_lists_it)  # first: while the list lags, another tenant's empty list would prove nothing
    for headers in (bearer(globex), {}):  # another tenant, and the local default tenant
        answer = api("GET", f"/v1/tasks/{task['id']}", headers=headers)
        assert answer.status == 404
        assert answer.body["error"]["code"] == "task_not_found"
        assert api("GET", "/v1/tasks", headers=headers).body["items"] == []
        assert api("DELETE", f"/v1/tasks/{task['id']}", headers=headers).status == 404
    # a tenant named in a header, the query or the body is not the caller's tenant
    spoof = {**bearer(globex), "X-Tenant": "acme", "Sundial-Tenant": "acme"}
    assert api("GET", "/v1/tasks?tenant=acme", headers=spoof).body["items"] == []
    assert api("POST", "/v1/tasks", {**task_spec(), "tenant": "acme"}, bearer(globex)).status == 400
    acme_lists_it()


def test_a_revoked_key_stops_working_and_the_tenants_other_keys_do_not(api):
    first = create(api, "acme")["key"]
    second = api("POST", "/v1/tenants/acme/keys", None, ADMIN).body
    assert second["secret"] != first["secret"]
    for key in (first, second):
        assert api("GET", "/v1/tasks", headers=bearer(key["secret"])).status == 200
    assert api("DELETE", f"/v1/tenants/acme/keys/{first['id']}", headers=ADMIN).status == 204
    answer = api("GET", "/v1/tasks", headers=bearer(first["secret"]))
    assert answer.status == 401  # the local gateway caches nothing: at once (AWS: within 60 s)
    assert api("GET", "/v1/tasks", headers=bearer(second["secret"])).status == 200
    assert api("DELETE", f"/v1/tenants/acme/keys/{first['id']}", headers=ADMIN).status == 204  # twice: harmless
    listed = {k["id"]: k for k in api("GET", "/v1/tenants/acme/keys", headers=ADMIN).body["items"]}
    assert listed[first["id"]]["revoked_at"] is not None
    assert listed[second["id"]]["revoked_at"] is None
    assert all("secret" not in k for k in listed.values())
    gone = api("DELETE", "/v1/tenants/acme/keys/nope", headers=ADMIN)
    assert gone.status == 404
    assert gone.body["error"]["code"] == "key_not_found"


def test_a_tenant_over_its_rate_is_told_when_to_come_back_while_another_is_served(api):
    slow = create(api, "slow", requests_per_second=1, burst=3)["key"]["secret"]
    other = create(api, "other", requests_per_second=1, burst=3)["key"]["secret"]
    answers = [api("GET", "/v1/tasks", headers=bearer(slow)) for _ in range(6)]
    statuses = [a.status for a in answers]
    assert statuses[:3] == [200, 200, 200]  # the burst
    refused = [a for a in answers if a.status == 429]
    assert refused, statuses
    assert all(a.body["error"]["code"] == "rate_limited" for a in refused)
    assert all(1 <= int(a.headers["Retry-After"]) <= 1 for a in refused)
    assert api("GET", "/v1/tasks", headers=bearer(other)).status == 200
    # the admin's routes are not the tenant's rate
    assert api("GET", "/v1/tenants/slow", headers=ADMIN).status == 200
