"""`make run` end to end, over HTTP only: a chain A → B (on success) and A → C (on failure).
A recurring A whose receiver answers 200 then 500 in turn fires B once per successful
occurrence and C once per dead-lettered one, each with ``parent`` in its (signed) body and on
its run; another tenant's task cannot be chained."""

from __future__ import annotations

import pytest

from tests.e2e.test_tenants import Tenant, create, verifies, wait

pytestmark = pytest.mark.e2e

YEARLY = {"cron": "0 0 1 1 *"}
ONCE = {"max_attempts": 1, "backoff": "fixed", "interval_seconds": 1}


def test_a_chain_runs_b_once_per_success_and_c_once_per_dead_letter(sundial, receiver):
    tenant = Tenant(sundial, create(sundial, "chains"))
    receiver.bodies["/a"] = b'{"exported": true}'
    b = tenant.register(receiver.script("/b", 200), schedule=YEARLY)
    c = tenant.register(receiver.script("/c", 200), schedule=YEARLY)
    a = tenant.register(
        receiver.script("/a", 200, 500, 200, 500, 200, 500),
        schedule={"every_seconds": 1},
        retry=ONCE,
        on_success=[b["id"]],
        on_failure=[c["id"]],
    )
    assert wait(lambda: len(receiver.calls_to("/a")) >= 6, timeout=30)
    tenant.ok("POST", f"/v1/tasks/{a['id']}/pause")
    assert wait(lambda: len(receiver.calls_to("/b")) + len(receiver.calls_to("/c")) >= 6, timeout=15)
    wait(lambda: False, timeout=2)  # any duplicate would arrive now

    runs = {r["run_id"]: r for r in tenant.ok("GET", f"/v1/tasks/{a['id']}/runs?limit=100")["items"]}
    succeeded = {i for i, r in runs.items() if r["status"] == "succeeded"}
    dead = {i for i, r in runs.items() if r["status"] == "dead_lettered"}
    assert len(succeeded) >= 3
    assert len(dead) >= 3
    b_calls, c_calls = receiver.calls_to("/b"), receiver.calls_to("/c")
    assert sorted(call.body["parent"]["run_id"] for call in b_calls) == sorted(succeeded)  # once each
    assert sorted(call.body["parent"]["run_id"] for call in c_calls) == sorted(dead)
    for call in b_calls:
        assert call.body["parent"]["status"] == "succeeded"
        assert call.body["parent"]["task_id"] == a["id"]
        assert call.body["parent"]["response"] == {"exported": True}
        assert verifies(tenant.signing_secret, call)
    for call in c_calls:
        assert call.body["parent"]["status"] == "dead_lettered"
        assert "500" in call.body["parent"]["error"]
        assert verifies(tenant.signing_secret, call)
    b_runs = tenant.ok("GET", f"/v1/tasks/{b['id']}/runs?limit=100")["items"]
    assert sorted(r["parent"]["run_id"] for r in b_runs) == sorted(succeeded)
    assert {r["run_id"] for r in b_runs} == {call.body["run_id"] for call in b_calls}


def test_another_tenants_task_cannot_be_chained(sundial, receiver):
    mine = Tenant(sundial, create(sundial, "chain-owner"))
    theirs = Tenant(sundial, create(sundial, "chain-other"))
    their_task = theirs.register(receiver.script("/theirs", 200), schedule=YEARLY)
    status, answer = mine.call(
        "POST",
        "/v1/tasks",
        {"schedule": YEARLY, "target": {"http": {"url": receiver.url + "/mine"}}, "on_failure": [their_task["id"]]},
    )
    assert status == 400, answer
    assert answer["error"]["details"][0]["field"] == "on_failure[0]"
    assert "names no task of yours" in answer["error"]["details"][0]["message"]


# The largest ULID: its time is in year 10889, after the last instant a task can be due (found by
# the OpenAPI fuzzer: naming its bucket was a 500).
BEYOND_9999 = "7" + "Z" * 25


def test_an_id_past_year_9999_names_no_task(sundial, receiver):
    mine = Tenant(sundial, create(sundial, "chain-far"))
    status, answer = mine.call(
        "POST",
        "/v1/tasks",
        {"schedule": YEARLY, "target": {"http": {"url": receiver.url + "/far"}}, "on_success": [BEYOND_9999]},
    )
    assert status == 400, answer
    assert answer["error"]["details"][0]["field"] == "on_success[0]"
    assert "names no task of yours" in answer["error"]["details"][0]["message"]
    for method, path in (("GET", ""), ("DELETE", ""), ("GET", "/runs"), ("POST", "/pause")):
        status, answer = mine.call(method, f"/v1/tasks/{BEYOND_9999}{path}")
        assert status == 404, (method, path, answer)
