"""Listing pages on DynamoDB (shared/store/listing.py): what a batch registration writes, and what
happens when its page cannot be written. The listing order itself is held by the repository
contract (tests/integration/test_repository_contract.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import boto3
import pytest
from pynamodb.exceptions import PutError

from shared.domain.errors import StorageUnavailable
from shared.store.dynamo import DynamoTaskRepository
from shared.store.listing import PAGE_SLACK
from shared.store.models import ListPageItem, TaskItem
from tests.integration.test_repository_contract import batch

pytestmark = pytest.mark.integration

NOW = datetime(2026, 11, 27, 10, 0, tzinfo=UTC)
RETENTION = timedelta(days=30)


def _items() -> list[dict]:
    table = TaskItem.Meta.table_name
    return boto3.client("dynamodb").scan(TableName=table)["Items"]


def test_a_batchs_one_shots_share_one_page_and_write_no_index_entry(aws) -> None:
    repo = DynamoTaskRepository(list_shards=4, retention=RETENTION)
    tasks = batch(NOW, 10, recurring=2)
    repo.create_many([(t, False) for t in tasks])
    items = _items()
    home = {i["sk"]["S"]: i for i in items if i.get("kind", {}).get("S") == "task"}
    one_shots, recurring = tasks[:8], tasks[8:]
    assert all("lpk" not in home[t.id] for t in one_shots)  # no index entry written with them
    assert all("lpk" in home[t.id] for t in recurring)
    (page,) = [i for i in items if i["pk"]["S"].startswith("P#default#")]
    assert set(page["ids"]["SS"]) == {t.id for t in one_shots}
    last_due = max(t.due_at for t in one_shots)
    assert int(page["expires_at"]["N"]) == int((last_due + RETENTION + PAGE_SLACK).timestamp())
    assert len(str(page)) < 1024 * 3  # about 27 bytes a task: three write units for a hundred


def test_a_page_that_cannot_be_written_stores_none_of_its_tasks_and_gives_their_places_back(
    aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = DynamoTaskRepository(list_shards=4, retention=RETENTION)
    tasks = batch(NOW, 5)

    def refused(self: ListPageItem, *args: object, **kwargs: object) -> None:
        raise PutError("throttled")

    monkeypatch.setattr(ListPageItem, "save", refused)
    answers = repo.create_many([(t, False) for t in tasks])
    assert all(isinstance(answer, StorageUnavailable) for answer in answers)
    assert [i for i in _items() if i.get("kind", {}).get("S") == "task"] == []
    assert repo.live_tasks("default") == 0


def test_pages_of_one_instant_in_one_list_shard_are_merged_entry_by_entry(aws) -> None:
    """Two batches registered in the same millisecond: their ids interleave (ULIDs of one
    instant), and with one list shard both pages are in one partition, read as one stream."""
    repo = DynamoTaskRepository(list_shards=1, retention=RETENTION)
    batches = [batch(NOW, 6), batch(NOW, 6)]
    ids = sorted((t.id for tasks in batches for t in tasks), reverse=True)
    assert {t.id for t in batches[0]} != set(ids[:6])  # interleaved, not one batch after the other
    for tasks in batches:
        repo.create_many([(t, False) for t in tasks])
    seen, cursor = [], None
    while True:
        page = repo.list("default", status=None, limit=4, cursor=cursor)
        seen += [t.id for t in page.items]
        if (cursor := page.next_cursor) is None:
            break
    assert seen == ids
