"""Putting the items written before the status index into it (docs/status-index.md, section 5): a
Scan of the whole table, once after an upgrade, that gives every item in a status of ``by_status``
(a failed or paused task, a running or failed job, a waiting dead letter, a failed workflow run)
the keys its kind's writes give it now. Each write is conditional on the item still being in the
status it was read in and having no keys yet, so a write of the running deployment that moved it
meanwhile (and wrote its keys itself) is never undone; running it twice writes nothing the second
time.

The plain DynamoDB client, with the caller's credentials (no model binding): `make run` runs it
on a kept data folder when it starts, and ``sundial status-index backfill`` with an operator's
credentials against a deployment, as ``sundial admin-key`` writes the admin key."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from shared.domain.errors import StorageUnavailable
from shared.domain.jobs import JobStatus
from shared.domain.states import LetterStatus, TaskStatus
from shared.domain.workflows import NodeStatus
from shared.store.dead_letters import waiting_keys
from shared.store.items import keys_in_status
from shared.store.jobs import JOB_SK
from shared.store.jobs import status_keys as job_status_keys
from shared.store.workflows import status_keys as run_status_keys

Raw = Mapping[str, Any]
"""An item as the low-level client answers it (``{"name": {"S": ...}}``)."""
Keys = tuple[str, str]


def _text(item: Raw, name: str) -> str | None:
    value = item.get(name)
    return None if value is None else str(next(iter(value.values())))


def _task_keys(item: Raw, list_shards: int) -> Keys | None:
    """A task's home item (``kind`` ``task``): failed or paused, listed (no ``parent_id``)."""
    if _text(item, "kind") != "task":
        return None
    status, tenant, task_id, created = (_text(item, n) for n in ("status", "tenant", "task_id", "created_ms"))
    if status is None or tenant is None or task_id is None or created is None:
        return None
    try:
        state = TaskStatus(status)
    except ValueError:
        return None
    listed = "parent_id" not in item
    reason = _text(item, "paused_reason")
    return keys_in_status(tenant, task_id, int(float(created)), listed, state, reason, list_shards)


def _job_keys(item: Raw, list_shards: int) -> Keys | None:
    """A job's item (``J#<job id>`` / ``J``): running or failed."""
    pk, tenant, status, created = (_text(item, n) for n in ("pk", "tenant", "status", "created_ms"))
    if _text(item, "sk") != JOB_SK or pk is None or not pk.startswith("J#") or None in (tenant, status, created):
        return None
    try:
        state = JobStatus(str(status))
    except ValueError:
        return None
    return job_status_keys(str(tenant), pk.removeprefix("J#"), int(float(str(created))), state)


def _letter_keys(item: Raw, list_shards: int) -> Keys | None:
    """A dead letter (``DL#<tenant>`` / ``<run id>``) waiting for a redrive."""
    pk, run_id, tenant = _text(item, "pk"), _text(item, "sk"), _text(item, "tenant")
    if pk is None or not pk.startswith("DL#") or run_id is None or tenant is None:
        return None
    if _text(item, "status") != LetterStatus.DEAD_LETTERED.value:
        return None
    return waiting_keys(tenant, run_id, list_shards)


def _run_keys(item: Raw, list_shards: int) -> Keys | None:
    """A workflow run (``WR#<run id>`` / ``R``): failed."""
    pk, tenant, status, created = (_text(item, n) for n in ("pk", "tenant", "status", "created_ms"))
    if _text(item, "sk") != "R" or pk is None or not pk.startswith("WR#") or None in (tenant, status, created):
        return None
    try:
        state = NodeStatus(str(status))
    except ValueError:
        return None
    return run_status_keys(str(tenant), pk.removeprefix("WR#"), int(float(str(created))), state)


@dataclass(frozen=True)
class Kind:
    """One kind of item the index holds: how to tell it and the keys its status gives it."""

    name: str
    keys: Callable[[Raw, int], Keys | None]


KINDS: tuple[Kind, ...] = (
    Kind("task", _task_keys),
    Kind("job", _job_keys),
    Kind("letter", _letter_keys),
    Kind("workflow_run", _run_keys),
)
"""Every kind of item the status index holds, in the order a Scan meets them."""


def scan(client: Any, table: str) -> Iterator[Raw]:
    """Every item of the table, a page (1 MB) at a time."""
    start: dict[str, Any] | None = None
    while True:
        page = client.scan(TableName=table, **({"ExclusiveStartKey": start} if start else {}))
        yield from page.get("Items", [])
        start = page.get("LastEvaluatedKey")
        if not start:
            return


def backfill(client: Any, table: str, list_shards: int) -> Counter[str]:
    """Give every item in a status of ``by_status`` that has no keys its keys; how many items of
    each kind were written (and ``skipped``: changed meanwhile, left to their own writes)."""
    written: Counter[str] = Counter()
    try:
        for item in scan(client, table):
            if "spk" in item:
                continue
            for kind in KINDS:
                keys = kind.keys(item, list_shards)
                if keys is None:
                    continue
                written[kind.name if _put(client, table, item, keys) else "skipped"] += 1
                break
    except (ClientError, BotoCoreError) as exc:
        raise StorageUnavailable(f"the table {table} did not answer: {exc}") from exc
    return written


def _put(client: Any, table: str, item: Raw, keys: Keys) -> bool:
    """The keys written on the item as it was read: False when it changed since."""
    try:
        client.update_item(
            TableName=table,
            Key={"pk": item["pk"], "sk": item["sk"]},
            UpdateExpression="SET spk = :spk, ssk = :ssk",
            ConditionExpression="attribute_not_exists(spk) AND #status = :status",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={":spk": {"S": keys[0]}, ":ssk": {"S": keys[1]}, ":status": item["status"]},
        )
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            return False
        raise
    return True


DONE_PK, DONE_SK = "STATUS_INDEX", "BACKFILLED"
"""The item that says a table's older items are in the status index (the local runtime's kept
data folder: it looks once, at a start)."""


def backfill_once(client: Any, table: str, list_shards: int) -> Counter[str] | None:
    """:func:`backfill` unless the table says it was done: what it wrote, or None when done before."""
    key = {"pk": {"S": DONE_PK}, "sk": {"S": DONE_SK}}
    try:
        if "Item" in client.get_item(TableName=table, Key=key, ConsistentRead=True):
            return None
        written = backfill(client, table, list_shards)
        client.put_item(TableName=table, Item={**key, "written": {"N": str(sum(written.values()))}})
    except (ClientError, BotoCoreError) as exc:
        raise StorageUnavailable(f"the table {table} did not answer: {exc}") from exc
    return written
