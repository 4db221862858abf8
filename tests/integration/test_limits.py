"""Limits per destination through the API and the store on moto (docs/receivers.md, section 1):
put, read, list and delete; the version every put bumps, written on the state item of each
sub-bucket the limit has or had (its TAT kept); one limit per origin; tenants that never see each
other's limits; bad input answered 400 naming the field; and an HTTP target's ``limit`` field,
refused when it names no limit of the tenant and answered back in the task."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from tests.integration.conftest import ADMIN_KEY
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
TABLE = "sundial-test"


def soon(seconds: int = 3600) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat()


def tenant_key(api: Any, tenant: str) -> dict[str, str]:
    answer = api("POST", "/v1/tenants", {"id": tenant}, ADMIN)
    assert answer.status == 201, answer.body
    return {"Authorization": f"Bearer {answer.body['key']['secret']}"}


def put(api: Any, name: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    return api("PUT", f"/v1/limits/{name}", body, headers)


def item(pk: str, sk: str) -> dict[str, Any] | None:
    found = boto3.resource("dynamodb").Table(TABLE).get_item(Key={"pk": pk, "sk": sk}, ConsistentRead=True)
    return found.get("Item")


def refused(answer: Any) -> str:
    """The field a 400 names (its first detail)."""
    assert answer.status == 400, (answer.status, answer.body)
    assert answer.body["error"]["code"] == "validation_error"
    return str(answer.body["error"]["details"][0]["field"])


def test_a_limit_is_put_read_listed_replaced_and_deleted(api):
    created = put(api, "orders-api", {"origin": "HTTPS://API.Example.com:443/", "per_second": 20, "burst": 5})
    assert created.status == 200, created.body
    limit = created.body
    assert limit["name"] == "orders-api"
    assert limit["origin"] == "https://api.example.com"  # normalised: lower case, the default port left out
    assert (limit["per_second"], limit["burst"], limit["max_in_flight"], limit["version"]) == (20, 5, None, 1)
    assert limit["created_at"] == limit["updated_at"]
    assert set(limit) == {
        "name",
        "origin",
        "per_second",
        "burst",
        "max_in_flight",
        "version",
        "created_at",
        "updated_at",
    }

    assert api("GET", "/v1/limits/orders-api").body == limit
    bare = put(api, "billing", {"per_second": 0.5})
    assert bare.status == 200, bare.body
    assert (bare.body["origin"], bare.body["burst"], bare.body["max_in_flight"]) == (None, 1, None)
    assert bare.body["per_second"] == 0.5
    listed = api("GET", "/v1/limits")
    assert listed.status == 200
    assert [x["name"] for x in listed.body["items"]] == ["billing", "orders-api"]  # by name
    assert set(listed.body) == {"items"}

    replaced = put(api, "orders-api", {"origin": "https://api.example.com", "per_second": 10, "max_in_flight": 3})
    assert replaced.status == 200, replaced.body
    assert replaced.body["version"] == 2
    assert (replaced.body["per_second"], replaced.body["burst"], replaced.body["max_in_flight"]) == (10, 1, 3)
    assert replaced.body["created_at"] == limit["created_at"]
    assert replaced.body["updated_at"] >= limit["updated_at"]
    assert put(api, "orders-api", {"per_second": 10}).body["version"] == 3

    assert api("DELETE", "/v1/limits/orders-api").status == 204
    gone = api("GET", "/v1/limits/orders-api")
    assert gone.status == 404
    assert gone.body["error"]["code"] == "limit_not_found"
    assert api("DELETE", "/v1/limits/orders-api").status == 404
    assert [x["name"] for x in api("GET", "/v1/limits").body["items"]] == ["billing"]
    again = put(api, "orders-api", {"per_second": 1})
    assert again.body["version"] == 1  # a new limit


def test_every_put_writes_its_version_on_each_sub_bucket_it_has_or_had_and_keeps_the_state(api):
    assert put(api, "fast", {"per_second": 1200, "origin": "https://fast.example.com"}).status == 200  # 3 sub-buckets
    states = [item(f"LIMIT#default#fast#{k}", "S") for k in range(4)]
    assert [s["version"] if s else None for s in states] == [1, 1, 1, None]
    # a booking's state (as the trigger writes it) is kept by the next put
    boto3.resource("dynamodb").Table(TABLE).update_item(
        Key={"pk": "LIMIT#default#fast#0", "sk": "S"},
        UpdateExpression="SET tat_ms = :t, hold_until_ms = :h, slots = :s",
        ExpressionAttributeValues={":t": 123456, ":h": 777, ":s": {"run-1": 999}},
    )
    assert put(api, "fast", {"per_second": 100}).status == 200  # down to 1 sub-bucket
    states = [item(f"LIMIT#default#fast#{k}", "S") for k in range(4)]
    assert [s["version"] if s else None for s in states] == [2, 2, 2, None]  # the former ones too
    first = states[0]
    assert first is not None
    assert (first["tat_ms"], first["hold_until_ms"], first["slots"]) == (123456, 777, {"run-1": 999})
    assert put(api, "fast", {"per_second": 600}).status == 200  # 2 sub-buckets
    # from 1 sub-bucket to 2: those two get the version (the third, unused, keeps its own until the
    # limit has 3 again: a put writes them all then)
    assert [(s or {}).get("version") for s in (item(f"LIMIT#default#fast#{k}", "S") for k in range(3))] == [3, 3, 2]

    assert api("DELETE", "/v1/limits/fast").status == 204
    assert all(item(f"LIMIT#default#fast#{k}", "S") is None for k in range(4))
    assert item("T#default", "L#fast") is None


def test_two_limits_never_share_an_origin_and_a_changed_origin_is_freed(api):
    assert put(api, "a", {"origin": "https://api.example.com", "per_second": 1}).status == 200
    taken = put(api, "b", {"origin": "https://API.example.com:443", "per_second": 1})  # the same origin
    assert taken.status == 409
    assert taken.body["error"]["code"] == "origin_taken"
    assert api("GET", "/v1/limits/b").status == 404  # nothing stored
    other_port = put(api, "b", {"origin": "https://api.example.com:8443", "per_second": 1})
    assert other_port.status == 200, other_port.body
    assert put(api, "a", {"origin": "https://api.example.com", "per_second": 2}).status == 200  # its own
    assert item("T#default", "LO#https://api.example.com") == {
        "pk": "T#default",
        "sk": "LO#https://api.example.com",
        "name": "a",
    }
    moved = put(api, "a", {"origin": "http://api.example.com", "per_second": 2})  # another scheme
    assert moved.status == 200, moved.body
    assert item("T#default", "LO#https://api.example.com") is None
    assert put(api, "c", {"origin": "https://api.example.com", "per_second": 1}).status == 200  # freed
    assert put(api, "a", {"per_second": 2}).status == 200  # no origin any more
    assert item("T#default", "LO#http://api.example.com") is None
    assert api("DELETE", "/v1/limits/c").status == 204
    assert item("T#default", "LO#https://api.example.com") is None
    assert [x["name"] for x in api("GET", "/v1/limits").body["items"]] == ["a", "b"]  # no origin entry listed


def test_a_tenant_never_sees_another_tenants_limits(api):
    acme, globex = tenant_key(api, "acme"), tenant_key(api, "globex")
    assert put(api, "shared", {"origin": "https://api.example.com", "per_second": 5}, acme).status == 200
    assert api("GET", "/v1/limits/shared", headers=globex).status == 404
    assert api("DELETE", "/v1/limits/shared", headers=globex).status == 404
    assert api("GET", "/v1/limits", headers=globex).body == {"items": []}
    assert api("GET", "/v1/limits").body == {"items": []}  # the local default tenant
    # the same name and origin are the other tenant's own
    mine = put(api, "shared", {"origin": "https://api.example.com", "per_second": 7}, globex)
    assert mine.status == 200, mine.body
    assert mine.body["version"] == 1
    assert api("GET", "/v1/limits/shared", headers=acme).body["per_second"] == 5
    assert api("GET", "/v1/limits", headers=acme).body["items"][0]["per_second"] == 5
    # a target may not name another tenant's limit
    task = {"schedule": {"at": soon()}, "target": {"http": {"url": "https://x.example.com/", "limit": "shared"}}}
    assert api("POST", "/v1/tasks", task).status == 400
    assert api("POST", "/v1/tasks", task, acme).status == 201


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "per_second"),
        ({"per_second": 0}, "per_second"),
        ({"per_second": -1}, "per_second"),
        ({"per_second": 0.00009}, "per_second"),
        ({"per_second": 5e-324}, "per_second"),
        ({"per_second": 10_001}, "per_second"),
        ({"per_second": "5"}, "per_second"),
        ({"per_second": True}, "per_second"),
        ({"per_second": None}, "per_second"),
        ({"per_second": 1, "burst": 0}, "burst"),
        ({"per_second": 1, "burst": 1.5}, "burst"),
        ({"per_second": 1, "burst": "2"}, "burst"),
        ({"per_second": 1, "burst": True}, "burst"),
        ({"per_second": 1, "burst": 10_001}, "burst"),
        ({"per_second": 1, "max_in_flight": 0}, "max_in_flight"),
        ({"per_second": 1, "max_in_flight": False}, "max_in_flight"),
        ({"per_second": 1, "max_in_flight": 10_001}, "max_in_flight"),
        ({"per_second": 1, "origin": "ftp://api.example.com"}, "origin"),
        ({"per_second": 1, "origin": "https://api.example.com/v1"}, "origin"),
        ({"per_second": 1, "origin": "https://api.example.com?x=1"}, "origin"),
        ({"per_second": 1, "origin": "https://user:pw@api.example.com"}, "origin"),
        ({"per_second": 1, "origin": "https://api.example.com:99999"}, "origin"),
        ({"per_second": 1, "origin": "https://[nope]"}, "origin"),
        ({"per_second": 1, "origin": "api.example.com"}, "origin"),
        ({"per_second": 1, "origin": ""}, "origin"),
        ({"per_second": 1, "origin": 5}, "origin"),
        # what the document's pattern refuses, though the URL parser would strip or drop it
        ({"per_second": 1, "origin": " https://api.example.com"}, "origin"),
        ({"per_second": 1, "origin": "https://api.example.com\n"}, "origin"),
        ({"per_second": 1, "origin": "https://api.exa\tmple.com"}, "origin"),
        ({"per_second": 1, "origin": "https://api.example.com?"}, "origin"),
        ({"per_second": 1, "origin": "https://api.example.com#"}, "origin"),
        ({"per_second": 1, "speed": 2}, "speed"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(api, body, field):
    assert refused(put(api, "orders", body)) == field
    assert api("GET", "/v1/limits").body == {"items": []}


def test_the_name_is_checked_and_whole_numbers_may_be_written_as_such(api):
    for bad in ("Orders", "-orders", "a" * 65, "orders%20api", "or$ders"):
        assert refused(put(api, bad, {"per_second": 1})) == "name", bad
        assert refused(api("GET", f"/v1/limits/{bad}")) == "name", bad
    good = put(api, "a.b_c-9", {"per_second": 2.5, "burst": 5.0, "max_in_flight": 2.0})
    assert good.status == 200, good.body
    assert (good.body["per_second"], good.body["burst"], good.body["max_in_flight"]) == (2.5, 5, 2)
    slowest = put(api, "slowest", {"per_second": 0.0001})  # one call every 10,000 s
    assert slowest.status == 200, slowest.body
    assert api("GET", "/v1/limits/slowest").body["per_second"] == 0.0001


def test_a_tenant_has_at_most_max_limits(api, monkeypatch):
    import shared.services.limits

    monkeypatch.setattr(shared.services.limits, "MAX_LIMITS", 3)
    for name in ("a", "b", "c"):
        assert put(api, name, {"per_second": 1}).status == 200
    over = put(api, "d", {"per_second": 1})
    assert over.status == 409
    assert over.body["error"]["code"] == "too_many_limits"
    assert put(api, "c", {"per_second": 2}).status == 200  # replacing one is fine
    assert api("DELETE", "/v1/limits/a").status == 204
    assert put(api, "d", {"per_second": 1}).status == 200


def http(url: str, limit: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"url": url}
    if limit is not None:
        call["limit"] = limit
    return {"http": call}


def test_a_target_names_a_limit_of_its_tenant_or_is_refused(api):
    assert put(api, "orders", {"per_second": 5}).status == 200
    unknown = {"schedule": {"at": soon()}, "target": http("https://x.example.com/", "nope")}
    assert refused(api("POST", "/v1/tasks", unknown)) == "target.http.limit"
    multicast = {
        "schedule": {"at": soon()},
        "targets": [http("https://x.example.com/", "orders"), http("https://y/", "nope")],
    }
    assert refused(api("POST", "/v1/tasks", multicast)) == "targets[1].http.limit"
    malformed = {"schedule": {"at": soon()}, "target": http("https://x.example.com/", "Not A Name")}
    assert refused(api("POST", "/v1/tasks", malformed)) == "target.http.limit"

    batch = api(
        "POST",
        "/v1/tasks:batch",
        {"tasks": [unknown, {"schedule": {"at": soon()}, "target": http("https://x.example.com/", "orders")}]},
    )
    assert batch.status == 200, batch.body
    first, second = batch.body["items"]
    assert first["error"]["details"][0]["field"] == "target.http.limit"
    assert second["task"]["target"]["http"]["limit"] == "orders"

    job = {"name": "j", "processor": http("https://x.example.com/", "orders"), "data": [[1]]}
    assert refused(api("POST", "/v1/jobs", job)) == "processor.http.limit"  # a processor is not held


def test_the_limit_field_round_trips_and_a_deleted_limit_only_stops_applying(api):
    assert put(api, "orders", {"per_second": 5}).status == 200
    spec = {
        "name": "t",
        "schedule": {"at": soon()},
        "targets": [http("https://x.example.com/", "orders"), http("https://y.example.com/")],
    }
    created = api("POST", "/v1/tasks", spec)
    assert created.status == 201, created.body
    task = created.body
    assert task["targets"][0]["http"]["limit"] == "orders"
    assert "limit" not in task["targets"][1]["http"]  # no limit named: left out, as other optional members
    read = api("GET", f"/v1/tasks/{task['id']}")
    assert read.body["targets"] == task["targets"]

    def listed_with_its_limit() -> None:
        listed = api("GET", "/v1/tasks").body["items"]
        assert [t["id"] for t in listed] == [task["id"]]
        assert listed[0]["targets"][0]["http"]["limit"] == "orders"

    eventually(listed_with_its_limit)

    patch = api("PATCH", f"/v1/tasks/{task['id']}", {"target": http("https://z.example.com/", "nope")})
    assert refused(patch) == "target.http.limit"
    assert api("DELETE", "/v1/limits/orders").status == 204
    renamed = api("PATCH", f"/v1/tasks/{task['id']}", {"name": "renamed"})  # its target still names it
    assert renamed.status == 200, renamed.body
    assert renamed.body["targets"][0]["http"]["limit"] == "orders"
    resent = api("PATCH", f"/v1/tasks/{task['id']}", {"targets": renamed.body["targets"]})  # as read
    assert resent.status == 200, resent.body
    moved = api("PATCH", f"/v1/tasks/{task['id']}", {"targets": [http("https://w.example.com/", "orders")]})
    assert refused(moved) == "targets[0].http.limit"  # a target changed: the name is checked again
    assert put(api, "orders", {"per_second": 1}).status == 200
    again = api("PATCH", f"/v1/tasks/{task['id']}", {"target": http("https://x.example.com/", "orders")})
    assert again.status == 200, again.body
    assert again.body["target"]["http"]["limit"] == "orders"
