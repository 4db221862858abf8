"""A task's tags through the API's Lambda handler on moto: registered, read, PATCHed (replaced whole,
cleared), refused when they break the rules (a 400 naming the member), and listed by
``GET /v1/tasks?tag=key:value`` through the tag index: full pages however many newer tasks without
the tag the tenant has, and never another tenant's task."""

from __future__ import annotations

from typing import Any

import pytest

from shared.domain.tags import MAX_TAGS
from tests.integration.conftest import ADMIN_KEY
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration

HOOK = {"http": {"url": "https://example.com/hook"}}
FAR = {"cron": "0 0 1 1 *"}


def spec(**fields: Any) -> dict[str, Any]:
    return {"schedule": FAR, "target": HOOK, **fields}


def register(api, headers=None, **fields):
    answer = api("POST", "/v1/tasks", spec(**fields), headers)
    assert answer.status == 201, answer.body
    return answer.body


def tagged(api, tag: str, headers=None, limit: int = 100) -> list[str]:
    """Every task the list answers for ``tag``, following the cursor to the end."""
    names, cursor = [], None
    while True:
        path = f"/v1/tasks?tag={tag}&limit={limit}" + (f"&cursor={cursor}" if cursor else "")
        answer = api("GET", path, None, headers)
        assert answer.status == 200, answer.body
        names += [task["name"] for task in answer.body["items"]]
        cursor = answer.body["next_cursor"]
        if cursor is None:
            return names


def test_tags_are_kept_read_back_replaced_by_a_patch_and_cleared_by_null(api):
    task = register(api, name="t1", tags={"team": "orders", "env": "prod"})
    assert task["tags"] == {"env": "prod", "team": "orders"}
    assert api("GET", f"/v1/tasks/{task['id']}").body["tags"] == {"env": "prod", "team": "orders"}
    untagged = register(api, name="t0")
    assert untagged["tags"] == {}

    changed = api("PATCH", f"/v1/tasks/{task['id']}", {"tags": {"team": "billing"}})
    assert changed.status == 200, changed.body
    assert changed.body["tags"] == {"team": "billing"}
    assert tagged(api, "team:billing") == ["t1"]
    assert tagged(api, "team:orders") == []  # the tag taken away: no longer found by it
    assert tagged(api, "env:prod") == []

    kept = api("PATCH", f"/v1/tasks/{task['id']}", {"name": "t1-renamed"})
    assert kept.body["tags"] == {"team": "billing"}  # a change that does not name tags keeps them
    cleared = api("PATCH", f"/v1/tasks/{task['id']}", {"tags": None})
    assert cleared.status == 200, cleared.body
    assert cleared.body["tags"] == {}
    assert tagged(api, "team:billing") == []


@pytest.mark.parametrize(
    ("tags", "field"),
    [
        ({f"k{i}": "v" for i in range(MAX_TAGS + 1)}, "tags"),
        ({"a:b": "v"}, "tags.a:b"),
        ({"": "v"}, "tags."),  # the empty key, named
        ({"k" * 129: "v"}, "tags." + "k" * 129),
        ({"team": "v" * 257}, "tags.team"),
        ({"team": "é"}, "tags.team"),
        ({"team": 5}, "tags.team"),
        ({"team": "a#b"}, "tags.team"),
    ],
)
def test_tags_that_break_the_rules_are_refused_naming_the_member(api, tags, field):
    answer = api("POST", "/v1/tasks", spec(tags=tags))
    assert answer.status == 400, answer.body
    assert answer.body["error"]["code"] == "validation_error"
    assert field in {detail["field"] for detail in answer.body["error"]["details"]}, answer.body


@pytest.mark.parametrize("tag", ["team", "team%23x:y", "a:%0A"])
def test_a_tag_filter_that_is_not_key_colon_value_is_refused(api, tag):
    answer = api("GET", f"/v1/tasks?tag={tag}")
    assert answer.status == 400, answer.body
    assert [detail["field"] for detail in answer.body["error"]["details"]] == ["tag"]


def test_a_tag_lists_full_pages_however_many_newer_tasks_lack_it(api):
    """Three tagged tasks, then 250 newer untagged ones (a name filter reads 200 a request and comes
    back empty): the tag's pages are full, and end with its last task."""
    for i in range(3):
        register(api, name=f"old-{i}", tags={"batch": "nightly"})
    for start in range(0, 250, 100):
        body = {"tasks": [spec(name=f"new-{start + i}") for i in range(min(100, 250 - start))]}
        answer = api("POST", "/v1/tasks:batch", body)
        assert answer.status == 200, answer.body
        assert all("task" in item for item in answer.body["items"])

    first = api("GET", "/v1/tasks?tag=batch:nightly&limit=2")
    assert first.status == 200, first.body
    assert [t["name"] for t in first.body["items"]] == ["old-2", "old-1"]
    assert first.body["next_cursor"] is not None
    second = api("GET", f"/v1/tasks?tag=batch:nightly&limit=2&cursor={first.body['next_cursor']}")
    assert [t["name"] for t in second.body["items"]] == ["old-0"]
    assert second.body["next_cursor"] is None

    def name_filter_comes_back_empty() -> None:  # the listing index's bounded read, once it shows the newer tasks
        by_name = api("GET", "/v1/tasks?name_prefix=old-&limit=2")
        assert by_name.body["items"] == []
        assert by_name.body["next_cursor"] is not None

    eventually(name_filter_comes_back_empty)


def test_a_batch_registration_is_listed_by_its_tags_and_filters_combine(api):
    specs = [spec(name=f"b-{i}", tags={"team": "orders" if i % 2 else "billing"}) for i in range(6)]
    answer = api("POST", "/v1/tasks:batch", {"tasks": specs})
    assert answer.status == 200, answer.body
    ids = {item["task"]["name"]: item["task"]["id"] for item in answer.body["items"]}
    assert sorted(tagged(api, "team:orders", limit=2)) == ["b-1", "b-3", "b-5"]
    assert api("POST", f"/v1/tasks/{ids['b-3']}/pause").status == 200
    paused = api("GET", "/v1/tasks?tag=team:orders&status=paused")
    assert [t["name"] for t in paused.body["items"]] == ["b-3"]
    named = api("GET", "/v1/tasks?tag=team:billing&name_prefix=b-4")
    assert [t["name"] for t in named.body["items"]] == ["b-4"]


def test_a_tag_lists_the_callers_tasks_only(api):
    created = api("POST", "/v1/tenants", {"id": "globex"}, {"Authorization": f"Bearer {ADMIN_KEY}"})
    assert created.status == 201, created.body
    globex = {"Authorization": f"Bearer {created.body['key']['secret']}"}
    register(api, name="mine", tags={"team": "orders"})
    register(api, globex, name="theirs", tags={"team": "orders"})
    assert tagged(api, "team:orders") == ["mine"]
    assert tagged(api, "team:orders", globex) == ["theirs"]
