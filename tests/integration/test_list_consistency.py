"""Lists are eventually consistent, as on AWS: tasks and jobs are listed through the ``by_tenant``
GSI, which a write reaches a moment later ("Using Global Secondary Indexes in DynamoDB": a GSI
answers eventually consistent reads only), modelled on moto by local/moto_patches/index_lag.py; a read by
id is strongly consistent. And what is past its retention is left out of lists before DynamoDB's
TTL deletes it (maybe days later: "Using time to live (TTL) in DynamoDB")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from local.moto_patches.index_lag import index_lag
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration

SPEC = {"schedule": {"after_seconds": 3600}, "target": {"http": {"url": "https://example.com/hook"}}}


def listed(api: Any) -> list[str]:
    answer = api("GET", "/v1/tasks?limit=100")
    assert answer.status == 200
    return [task["id"] for task in answer.body["items"]]


def test_a_task_just_registered_is_read_by_id_at_once_and_listed_once_the_index_has_it(api):
    now = [0.0]
    with index_lag(0.5, clock=lambda: now[0]):
        task = api("POST", "/v1/tasks", SPEC).body
        assert api("GET", f"/v1/tasks/{task['id']}").status == 200, "a read by id is strongly consistent"
        assert task["id"] not in listed(api), "the index has not got it yet"
        now[0] += 0.5
        assert task["id"] in listed(api)


def test_a_task_past_its_retention_is_left_out_of_the_list_before_ttl_deletes_it(api):
    from shared.store.keys import task_key
    from shared.store.models import TaskItem

    kept, gone = (api("POST", "/v1/tasks", {**SPEC, "name": name}).body["id"] for name in ("kept", "gone"))
    assert api("DELETE", f"/v1/tasks/{gone}").status == 204

    def both_listed() -> None:  # first: a task the index has not got yet is left out anyway
        assert sorted(listed(api)) == sorted([kept, gone])

    eventually(both_listed)
    item = TaskItem.get(*task_key(gone), consistent_read=True)
    item.update(actions=[TaskItem.expires_at.set(datetime.now(UTC) - timedelta(seconds=1))])
    assert listed(api) == [kept]
