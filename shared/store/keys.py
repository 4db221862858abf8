"""Key formats of every item (docs/design.md, "Data model")."""

from __future__ import annotations

import base64
import functools
import json
import zlib

from shared.domain.buckets import bucket_of
from shared.domain.errors import TaskNotFound, ValidationFailed
from shared.domain.ids import parse_task_id

BUCKET_PREFIX = "B#"
"""What every bucket item's partition key begins with."""


MARK_PREFIX = "W#"
"""What a shard's scan mark's partition key begins with (and the tick's clean map's)."""
MARK_SK = "W"
CLEAN_PK = f"{MARK_PREFIX}clean"
"""The tick's item: what it found clean past each shard's mark."""


def mark_pk(shard: int) -> str:
    """A shard's scan mark (``WatermarkItem``)."""
    return f"{MARK_PREFIX}{shard}"


def bucket_pk(due_ms: int, shard: int) -> str:
    return f"{BUCKET_PREFIX}{bucket_of(due_ms)}#{shard:04d}"


@functools.lru_cache(maxsize=4096)
def task_key(task_id: str) -> tuple[str, str]:
    """The (pk, sk) of a task's home item, read off its id; an id that is not one is not found.
    Kept for the ids met last: a trigger or an API call reads the same ids' keys several times
    (the claim, the look before the call, the record), each a ULID's decode."""
    try:
        home = parse_task_id(task_id)
    except ValueError as exc:
        raise TaskNotFound(f"task {task_id!r} not found") from exc
    return bucket_pk(home.due_ms, home.shard), task_id.upper()


def list_pk(tenant: str, task_id: str, list_shards: int) -> str:
    return f"L#{tenant}#{list_shard(task_id, list_shards)}"


def list_shard(item_id: str, list_shards: int) -> int:
    """The list shard of an item: where its index entries go (the listing index's, the status
    index's), so one tenant's entries spread over ``list_shards`` partitions."""
    return zlib.crc32(item_id.encode()) % list_shards


def status_pk(tenant: str, kind: str, state: str, item_id: str, list_shards: int) -> str:
    """An item's partition in the status index ``by_status`` while it is in ``state``
    (docs/status-index.md): ``kind`` is ``task``, ``job``, ``letter`` or ``workflow_run``."""
    return status_shard_pk(tenant, kind, state, list_shard(item_id, list_shards))


def status_shard_pk(tenant: str, kind: str, state: str, k: int) -> str:
    return f"S#{tenant}#{kind}#{state}#{k}"


def page_pk(tenant: str, k: int) -> str:
    """A listing page's partition (shared/store/listing.py): the tenant's list shard ``k``."""
    return f"P#{tenant}#{k}"


def list_sk(created_ms: int, task_id: str) -> str:
    return f"{created_ms:013d}#{task_id}"


def encode_cursor(position: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"p": position}).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> str:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        position = json.loads(base64.urlsafe_b64decode(padded.encode()))["p"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValidationFailed.on("cursor", "is not a cursor this API returned") from exc
    if not isinstance(position, str):
        raise ValidationFailed.on("cursor", "is not a cursor this API returned")
    return position
