"""`make run` end to end for limits per destination, over HTTP only: a tenant puts, reads, lists
and deletes its limits through the local gateway; another tenant never sees them; a task whose
target names one is registered, answered with the name and fired; a name the tenant has no limit
of is refused."""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from tests.e2e.conftest import ADMIN_KEY

pytestmark = pytest.mark.e2e

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}


def tenant(sundial: Any, name: str) -> dict[str, str]:
    status, created = sundial.call("POST", "/v1/tenants", {"id": f"{name}-{secrets.token_hex(3)}"}, ADMIN)
    assert status == 201, created
    return {"Authorization": f"Bearer {created['key']['secret']}"}


def test_limits_over_http_and_a_target_that_names_one(sundial, receiver) -> None:
    acme, globex = tenant(sundial, "acme"), tenant(sundial, "globex")
    origin = receiver.url.rstrip("/")
    status, limit = sundial.call("PUT", "/v1/limits/receiver", {"origin": origin, "per_second": 1000}, acme)
    assert status == 200, limit
    assert (limit["name"], limit["origin"], limit["burst"], limit["version"]) == ("receiver", origin, 1, 1)
    status, limit = sundial.call("PUT", "/v1/limits/receiver", {"origin": origin, "per_second": 500, "burst": 10}, acme)
    assert (status, limit["version"], limit["burst"]) == (200, 2, 10)
    assert sundial.call("GET", "/v1/limits", headers=acme) == (200, {"items": [limit]})
    assert sundial.call("GET", "/v1/limits/receiver", headers=acme) == (200, limit)
    assert sundial.call("GET", "/v1/limits/receiver", headers=globex)[0] == 404
    assert sundial.call("GET", "/v1/limits", headers=globex) == (200, {"items": []})

    url = receiver.script("/limited", 200)
    spec = {"schedule": {"after_seconds": 1}, "target": {"http": {"url": url, "limit": "receiver"}}}
    status, task = sundial.call("POST", "/v1/tasks", spec, acme)
    assert status == 201, task
    assert task["target"]["http"]["limit"] == "receiver"
    status, refused = sundial.call("POST", "/v1/tasks", spec, globex)  # not globex's limit
    assert status == 400, refused
    assert refused["error"]["details"][0]["field"] == "target.http.limit"
    assert len(receiver.wait_for("/limited", 1, timeout=20)) == 1

    assert sundial.call("DELETE", "/v1/limits/receiver", headers=acme) == (204, None)
    assert sundial.call("GET", "/v1/limits/receiver", headers=acme)[0] == 404
