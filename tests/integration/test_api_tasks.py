"""The registration API through its Lambda handler, with API Gateway proxy events, on moto."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import boto3
import pytest

from shared.domain.times import iso
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration

HOOK = {"http": {"url": "https://example.com/hook", "headers": {"X-Team": "orders"}, "timeout_seconds": 5}}


def parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def soon(seconds: float = 600) -> str:
    return iso(datetime.now(UTC) + timedelta(seconds=seconds))


def new(api, **fields):
    body = {"schedule": {"after_seconds": 600}, "target": HOOK, **fields}
    answer = api("POST", "/v1/tasks", body)
    assert answer.status == 201, answer.body
    return answer.body


def raw_items():
    """The table's items of tasks (not the callers' rate limits, keys or the tenants' counters)."""
    items = boto3.resource("dynamodb").Table("sundial-test").scan()["Items"]
    return [item for item in items if not item["pk"].startswith(("RATE#", "T#", "K#", "ADMIN"))]


def test_a_registered_task_reads_back_with_every_field(api):
    at = soon(3600)
    created = new(
        api,
        name="close-order-123",
        schedule={"at": at},
        payload={"order_id": 123},
        retry={"max_attempts": 5, "backoff": "fixed", "interval_seconds": 3, "max_age_seconds": 600},
    )
    assert created["status"] == "scheduled"
    assert created["name"] == "close-order-123"
    assert created["schedule"] == {"at": at}
    assert created["target"] == {"http": {**HOOK["http"], "method": "POST"}}
    assert created["payload"] == {"order_id": 123}
    assert created["retry"] == {"max_attempts": 5, "backoff": "fixed", "interval_seconds": 3.0, "max_age_seconds": 600}
    assert created["misfire"] == "fire_now"
    assert created["next_fire_at"] == at
    assert created["created_at"] == created["updated_at"]
    fetched = api("GET", f"/v1/tasks/{created['id']}")
    assert fetched.status == 200
    assert fetched.body == created


def test_defaults_follow_the_api_contract(api):
    one_shot = new(api)
    recurring = new(api, schedule={"every_seconds": 60})
    assert one_shot["retry"] == {
        "max_attempts": 3,
        "backoff": "exponential",
        "interval_seconds": 2.0,
        "max_age_seconds": None,
    }
    assert one_shot["misfire"] == "fire_now"
    assert recurring["misfire"] == "skip"
    assert one_shot["payload"] is None
    assert one_shot["name"] is None


def test_after_seconds_fires_that_long_after_registration(api):
    created = new(api, schedule={"after_seconds": 1800.25})
    delay = parse(created["next_fire_at"]) - parse(created["created_at"])
    assert delay == timedelta(seconds=1800, milliseconds=250)
    assert created["schedule"] == {"after_seconds": 1800.25}


def test_an_at_with_an_offset_is_returned_in_utc_to_the_millisecond(api):
    local = (datetime.now(ZoneInfo("Asia/Shanghai")) + timedelta(days=2)).replace(microsecond=250_999)
    created = new(api, schedule={"at": local.isoformat()})
    assert created["next_fire_at"].endswith("Z")
    assert parse(created["next_fire_at"]) == local.replace(microsecond=250_000)


def test_a_past_at_fires_now_when_misfire_is_fire_now(api):
    before = datetime.now(UTC)
    created = new(api, schedule={"at": iso(before - timedelta(hours=2))})
    assert before - timedelta(seconds=1) <= parse(created["next_fire_at"]) <= datetime.now(UTC)


def test_the_answer_says_a_past_at_fires_at_once(api):
    """Accepted silently, a past ``at`` would fire at a time its writer did not write: the answer
    to the write that set it says so (a create, a batch item, a PATCH of the schedule); a read
    does not repeat it, and a future ``at`` has nothing to say."""
    past = iso(datetime.now(UTC) - timedelta(seconds=5))
    created = new(api, schedule={"at": past})
    (notice,) = created["notices"]
    assert notice["field"] == "schedule.at"
    assert past in notice["message"]
    assert "fires at once" in notice["message"]
    assert "notices" not in api("GET", f"/v1/tasks/{created['id']}").body
    assert "notices" not in new(api, schedule={"at": soon()})

    batch = api("POST", "/v1/tasks:batch", {"tasks": [{"schedule": {"at": past}, "target": HOOK}]}).body
    assert batch["items"][0]["task"]["notices"][0]["field"] == "schedule.at"

    later = new(api)
    renamed = api("PATCH", f"/v1/tasks/{later['id']}", {"name": "renamed"}).body
    assert "notices" not in renamed
    moved = api("PATCH", f"/v1/tasks/{later['id']}", {"schedule": {"at": past}}).body
    assert moved["notices"][0]["field"] == "schedule.at"


def test_cron_next_fire_is_the_next_weekday_eight_oclock_in_its_zone(api):
    created = new(api, schedule={"cron": "0 8 * * 1-5", "timezone": "Asia/Shanghai"})
    fire = parse(created["next_fire_at"]).astimezone(ZoneInfo("Asia/Shanghai"))
    assert (fire.hour, fire.minute, fire.second) == (8, 0, 0)
    assert fire.isoweekday() <= 5
    now = datetime.now(ZoneInfo("Asia/Shanghai"))
    assert now < fire <= now + timedelta(days=4)
    assert created["schedule"] == {"cron": "0 8 * * 1-5", "timezone": "Asia/Shanghai"}


def test_every_seconds_with_start_fires_at_the_next_step_from_start(api):
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=95)
    created = new(api, schedule={"every_seconds": 60, "start": iso(start)})
    assert parse(created["next_fire_at"]) == start + timedelta(seconds=120)


def test_multicast_targets_are_kept_in_order(api):
    targets = [
        HOOK,
        {"lambda": {"function_arn": "arn:aws:lambda:us-east-1:123456789012:function:close-order"}},
        {"sqs": {"queue_url": "https://sqs.us-east-1.amazonaws.com/123456789012/orders"}},
        {"sns": {"topic_arn": "arn:aws:sns:us-east-1:123456789012:orders"}},
        {"eventbridge": {"event_bus": "default", "source": "orders", "detail_type": "close"}},
    ]
    created = new(api, target=None, targets=targets)
    assert "target" not in created
    assert [next(iter(t)) for t in created["targets"]] == ["http", "lambda", "sqs", "sns", "eventbridge"]
    assert created["targets"][4] == targets[4]


def test_registration_puts_the_task_in_its_minute_bucket_for_the_scanners(api):
    created = new(api, schedule={"at": soon(7200)}, payload={"n": 1})
    due = parse(created["next_fire_at"])
    bucket = due.strftime("%Y%m%d%H%M")
    shards = {item["pk"].split("#")[2] for item in raw_items()}
    found = []
    for shard in shards:
        found += (
            boto3.resource("dynamodb")
            .Table("sundial-test")
            .query(
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": f"B#{bucket}#{shard}"},
            )["Items"]
        )
    assert [item["task_id"] for item in found] == [created["id"]]
    item = found[0]
    assert item["tenant"] == "default"
    assert int(item["due_ms"]) == int(due.timestamp() * 1000)
    assert "expires_at" not in item  # a task that can still fire never expires


def test_listing_pages_through_every_task_once_newest_first(api):
    ids = [new(api, name=f"task-{i}")["id"] for i in range(7)]

    def pages_through_all() -> list[str]:
        seen, cursor, pages = [], None, 0
        while True:
            answer = api("GET", "/v1/tasks?limit=3" + (f"&cursor={cursor}" if cursor else ""))
            assert answer.status == 200
            assert len(answer.body["items"]) <= 3
            seen += [task["id"] for task in answer.body["items"]]
            pages += 1
            cursor = answer.body["next_cursor"]
            if cursor is None:
                break
        assert pages == 3
        assert sorted(seen) == sorted(ids)
        assert len(seen) == len(ids)
        return seen

    seen = eventually(pages_through_all)
    created = [parse(api("GET", f"/v1/tasks/{i}").body["created_at"]) for i in seen]
    assert created == sorted(created, reverse=True)


def test_a_filtered_listing_reads_a_bounded_number_of_tasks_and_hands_a_cursor_on_a_short_page(api):
    """A filter may discard every task one request reads: it reads at most LIST_READ_BUDGET of
    them (the API function has 10 s) and answers a cursor, even on an empty page."""
    from shared.store.dynamo import LIST_READ_BUDGET

    spec = {"schedule": {"after_seconds": 3600}, "target": {"http": {"url": "https://example.com/hook"}}}
    wanted = new(api, name="wanted")["id"]  # the oldest: read last
    for start in range(0, LIST_READ_BUDGET + 20, 100):
        batch = [{**spec, "name": f"other-{n}"} for n in range(start, min(start + 100, LIST_READ_BUDGET + 20))]
        assert api("POST", "/v1/tasks:batch", {"tasks": batch}).status == 200

    def bounded() -> None:
        first = api("GET", "/v1/tasks?name_prefix=wanted&limit=10").body
        assert first["items"] == []
        assert first["next_cursor"] is not None
        rest = api("GET", f"/v1/tasks?name_prefix=wanted&limit=10&cursor={first['next_cursor']}").body
        assert [task["id"] for task in rest["items"]] == [wanted]
        assert rest["next_cursor"] is None

    eventually(bounded)


def test_listing_filters_by_status(api):
    ids = [new(api)["id"] for _ in range(5)]
    for task_id in ids[:2]:
        assert api("DELETE", f"/v1/tasks/{task_id}").status == 204

    def filtered() -> None:
        cancelled = api("GET", "/v1/tasks?status=cancelled&limit=1")
        assert len(cancelled.body["items"]) == 1
        assert cancelled.body["next_cursor"]
        rest = api("GET", f"/v1/tasks?status=cancelled&limit=1&cursor={cancelled.body['next_cursor']}")
        assert {t["id"] for t in cancelled.body["items"] + rest.body["items"]} == set(ids[:2])
        assert rest.body["next_cursor"] is None
        scheduled = api("GET", "/v1/tasks?status=scheduled")
        assert {t["id"] for t in scheduled.body["items"]} == set(ids[2:])

    eventually(filtered)


def test_cancel_stops_the_task_and_expires_it_after_the_retention(api):
    task = new(api)
    assert api("DELETE", f"/v1/tasks/{task['id']}").status == 204
    after = api("GET", f"/v1/tasks/{task['id']}").body
    assert after["status"] == "cancelled"
    assert after["next_fire_at"] is None
    assert api("DELETE", f"/v1/tasks/{task['id']}").status == 204  # cancelling twice is harmless
    (item,) = raw_items()
    retention = int(item["expires_at"]) - datetime.now(UTC).timestamp()
    assert timedelta(days=29) < timedelta(seconds=retention) <= timedelta(days=30)


@pytest.mark.parametrize("task_id", ["01ARZ3NDEKTSV4RRFFQ69G5FAV", "nope", "0" * 26, "U" * 26])
def test_an_unknown_or_malformed_id_is_not_found(api, task_id):
    for method, path in [("GET", ""), ("DELETE", ""), ("GET", "/runs")]:
        answer = api(method, f"/v1/tasks/{task_id}{path}")
        assert answer.status == 404
        assert answer.body["error"]["code"] == "task_not_found"


def test_runs_of_a_task_that_has_not_fired_are_empty(api):
    task = new(api)
    answer = api("GET", f"/v1/tasks/{task['id']}/runs")
    assert answer.status == 200
    assert answer.body == {"items": [], "next_cursor": None}


def test_the_openapi_document_describes_the_routes_and_the_limits(api):
    answer = api("GET", "/v1/openapi.json")
    assert answer.status == 200
    paths = answer.body["paths"]
    assert {"/v1/tasks", "/v1/tasks/{task_id}", "/v1/tasks/{task_id}/runs"} <= set(paths)
    assert {
        "/v1/tasks:batch",
        "/v1/schedules:preview",
        "/v1/tasks/{task_id}/run",
        "/v1/dead-letters",
        "/v1/dead-letters/{letter_id}",
        "/v1/dead-letters/redrive",
    } <= set(paths)
    assert {"get", "patch", "delete"} <= set(paths["/v1/tasks/{task_id}"])
    assert {"post", "get"} <= set(paths["/v1/tasks"])
    assert "32768 bytes" in answer.body["info"]["description"]
    assert "TaskIn" in answer.body["components"]["schemas"]


def test_an_unknown_route_answers_in_the_error_format(api):
    answer = api("GET", "/v1/nothing-here")
    assert answer.status == 404
    assert answer.body["error"]["code"] == "route_not_found"


def test_a_task_whose_start_is_before_the_year_1000_reads_back_and_lists(api):
    """Found by schemathesis: such a start was stored unpadded ("309-04-24T...") and every read
    or list that met the task answered 500."""
    body = {
        "schedule": {"every_seconds": 897534, "start": "0309-04-24T02:54:02.163Z"},
        "target": {"http": {"url": "https://example.com/hook"}},
    }
    created = api("POST", "/v1/tasks", body)
    assert created.status == 201, created.body
    assert created.body["schedule"]["start"] == "0309-04-24T02:54:02.163Z"
    assert api("GET", f"/v1/tasks/{created.body['id']}").status == 200

    def listed() -> None:
        answer = api("GET", "/v1/tasks?limit=5")
        assert answer.status == 200
        assert created.body["id"] in [task["id"] for task in answer.body["items"]]

    eventually(listed)
