"""Bulk operations by selector through the API's Lambda handler on moto (docs/bulk.md): a dry run
counts and writes nothing; a step moves a page of the selection and answers the cursor of the
next; a move that does not apply leaves the task as it is; a retried step never acts twice; a
tenant's selection never holds another tenant's task; bad bodies are a 400 naming the member."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.conftest import ADMIN_KEY
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration

HOOK = {"http": {"url": "https://example.com/hook"}}
FAR = {"cron": "0 0 1 1 *"}


def spec(**fields: Any) -> dict[str, Any]:
    return {"schedule": FAR, "target": HOOK, **fields}


def register_batch(api, specs: list[dict[str, Any]], headers=None) -> dict[str, str]:
    """name -> id of each task registered (100 a batch)."""
    ids: dict[str, str] = {}
    for start in range(0, len(specs), 100):
        answer = api("POST", "/v1/tasks:batch", {"tasks": specs[start : start + 100]}, headers)
        assert answer.status == 200, answer.body
        for item in answer.body["items"]:
            ids[item["task"]["name"]] = item["task"]["id"]
    return ids


def statuses(api, ids: dict[str, str], headers=None) -> dict[str, str]:
    return {name: api("GET", f"/v1/tasks/{task_id}", None, headers).body["status"] for name, task_id in ids.items()}


def every_step(api, action: str, body: dict[str, Any], headers=None) -> list[dict[str, Any]]:
    """The steps of a bulk operation, each starting from the last one's cursor, to the end."""
    steps, cursor = [], None
    while True:
        answer = api("POST", f"/v1/tasks:{action}", {**body, **({"cursor": cursor} if cursor else {})}, headers)
        assert answer.status == 200, answer.body
        steps.append(answer.body)
        cursor = answer.body["next_cursor"]
        if cursor is None:
            return steps


def test_a_dry_run_counts_what_a_pause_by_tag_would_change_and_the_pause_changes_only_that(api):
    ids = register_batch(
        api,
        [spec(name=f"nightly-{i}", tags={"batch": "nightly"}) for i in range(5)]
        + [spec(name=f"other-{i}", tags={"batch": "hourly"}) for i in range(3)],
    )
    assert api("POST", f"/v1/tasks/{ids['nightly-0']}/pause").status == 200  # already paused: unchanged
    assert api("DELETE", f"/v1/tasks/{ids['nightly-1']}").status == 204  # cancelled: a pause does not apply
    selector = {"tag": {"batch": "nightly"}}

    dry = every_step(api, "pause", {"selector": selector, "dry_run": True})
    assert sum(step["changed"] for step in dry) == 3
    assert sum(step["unchanged"] for step in dry) == 2
    assert sorted(id_ for step in dry for id_ in step["changed_ids"]) == sorted(ids[f"nightly-{i}"] for i in (2, 3, 4))
    assert statuses(api, {n: ids[n] for n in ("nightly-2", "nightly-3", "nightly-4")}) == {
        "nightly-2": "scheduled",
        "nightly-3": "scheduled",
        "nightly-4": "scheduled",
    }  # a dry run writes nothing

    steps = every_step(api, "pause", {"selector": selector, "limit": 2})
    assert len(steps) >= 3  # five tasks, two a step
    assert sum(step["changed"] for step in steps) == 3
    assert all(step["errors"] == [] for step in steps)
    assert statuses(api, ids) == {
        "nightly-0": "paused",
        "nightly-1": "cancelled",
        "nightly-2": "paused",
        "nightly-3": "paused",
        "nightly-4": "paused",
        "other-0": "scheduled",
        "other-1": "scheduled",
        "other-2": "scheduled",
    }

    again = every_step(api, "pause", {"selector": selector})  # a retried operation: nothing twice
    assert sum(step["changed"] for step in again) == 0
    assert sum(step["unchanged"] for step in again) == 5


def test_a_resume_by_status_and_a_cancel_by_name_prefix_go_step_by_step_to_the_end(api):
    """A name prefix reads the listing index, 200 tasks a request: 230 newer tasks than the
    prefixed ones make its first steps come back short with a cursor, and the operation still
    reaches every one."""
    prefixed = register_batch(api, [spec(name=f"old-{i}") for i in range(4)])
    register_batch(api, [spec(name=f"new-{i}") for i in range(230)])
    for task_id in prefixed.values():
        assert api("POST", f"/v1/tasks/{task_id}/pause").status == 200

    eventually(lambda: api("GET", "/v1/tasks?status=paused").body["items"][3])  # the status index caught up
    resumed = every_step(api, "resume", {"selector": {"status": "paused"}})
    assert sum(step["changed"] for step in resumed) == 4
    assert set(statuses(api, prefixed).values()) == {"scheduled"}

    def newer_tasks_listed() -> None:  # the listing index shows the batches a moment after their writes
        page = api("GET", "/v1/tasks?name_prefix=old-&limit=4").body
        assert page["items"] == []
        assert page["next_cursor"] is not None

    eventually(newer_tasks_listed)
    steps = every_step(api, "cancel", {"selector": {"name_prefix": "old-"}})
    assert sum(step["changed"] for step in steps) == 4
    assert steps[0]["selected"] == 0  # the first step read 200 newer tasks and none of the prefix
    assert steps[0]["next_cursor"] is not None
    assert set(statuses(api, prefixed).values()) == {"cancelled"}


def test_a_step_retried_with_its_idempotency_key_gets_the_first_answer(api):
    ids = register_batch(api, [spec(name=f"k-{i}", tags={"team": "a"}) for i in range(2)])
    body = {"selector": {"tag": {"team": "a"}}}
    first = api("POST", "/v1/tasks:cancel", body, {"Idempotency-Key": "cancel-team-a"})
    assert first.status == 200, first.body
    assert first.body["changed"] == 2
    replayed = api("POST", "/v1/tasks:cancel", body, {"Idempotency-Key": "cancel-team-a"})
    assert replayed.body == first.body
    assert replayed.headers.get("Idempotent-Replayed") == "true"
    assert set(statuses(api, ids).values()) == {"cancelled"}


def test_a_tenants_bulk_operation_never_touches_another_tenants_tasks(api):
    created = api("POST", "/v1/tenants", {"id": "globex"}, {"Authorization": f"Bearer {ADMIN_KEY}"})
    assert created.status == 201, created.body
    globex = {"Authorization": f"Bearer {created.body['key']['secret']}"}
    mine = register_batch(api, [spec(name="mine", tags={"team": "orders"})])
    theirs = register_batch(api, [spec(name="theirs", tags={"team": "orders"})], globex)
    for selector in ({"tag": {"team": "orders"}}, {"name_prefix": "theirs"}, {"status": "scheduled"}):
        for step in every_step(api, "pause", {"selector": selector}):
            assert theirs["theirs"] not in step["changed_ids"]
    assert statuses(api, mine) == {"mine": "paused"}
    assert statuses(api, theirs, globex) == {"theirs": "scheduled"}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "selector"),
        ({"selector": {}}, "selector"),
        ({"selector": {"name_prefix": "a", "status": "paused"}}, "selector"),
        ({"selector": {"tag": {}}}, "selector.tag"),
        ({"selector": {"tag": {"a": "1", "b": "2"}}}, "selector.tag"),
        ({"selector": {"tag": {"a:b": "1"}}}, "selector.tag.a:b"),
        ({"selector": {"status": "sleeping"}}, "selector.status"),
        ({"selector": {"name_prefix": ""}}, "selector.name_prefix"),
        ({"selector": {"status": "paused"}, "dry_run": "yes"}, "dry_run"),
        ({"selector": {"status": "paused"}, "limit": 101}, "limit"),
        ({"selector": {"status": "paused"}, "cursor": "not-a-cursor"}, "cursor"),
        ({"selector": {"status": "paused"}, "everything": True}, "everything"),
    ],
)
def test_a_bad_bulk_body_is_refused_naming_the_member(api, body, field):
    for action in ("pause", "resume", "cancel"):
        answer = api("POST", f"/v1/tasks:{action}", body)
        assert answer.status == 400, answer.body
        assert answer.body["error"]["code"] == "validation_error"
        assert field in {detail["field"] for detail in answer.body["error"]["details"]}, answer.body


def test_a_whole_number_written_as_a_float_is_an_integer_limit(api):
    register_batch(api, [spec(name=f"f-{i}", tags={"f": "1"}) for i in range(3)])
    answer = api("POST", "/v1/tasks:pause", {"selector": {"tag": {"f": "1"}}, "dry_run": True, "limit": 2.0})
    assert answer.status == 200, answer.body
    assert answer.body["selected"] == 2
    assert answer.body["next_cursor"] is not None
