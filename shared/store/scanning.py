"""What the scanners read and write (docs/design.md, section 2.2): each shard's scan lease and mark,
the tick's clean map past the marks, and the minute buckets' Query for what is due. The first
part of shared.services.ports.pipeline.PipelineStore, which DynamoPipelineStore (shared/store/pipeline.py)
completes with the claims and the records."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

from pynamodb.exceptions import DoesNotExist, PynamoDBException

from shared.domain.buckets import MINUTE_MS, minute_of, minutes_between
from shared.domain.codec import is_one_shot_spec
from shared.domain.errors import StorageUnavailable
from shared.domain.firing import Staged, staged_for
from shared.domain.ids import parse_task_id, ulid_ceiling, ulid_floor
from shared.domain.states import TaskStatus
from shared.store.items import priority_of
from shared.store.keys import CLEAN_PK, MARK_PREFIX, MARK_SK, bucket_pk, mark_pk
from shared.store.models import BucketItem, TaskItem, WatermarkItem, is_conflict

SCHEDULED = TaskStatus.SCHEDULED.value
BATCH_GET_KEYS = 100
"""BatchGetItem's most keys a call (DynamoDB's API reference)."""


def _bucket_items(
    shard: int, start_ms: int, end_ms: int, limit: int | None = None
) -> Iterator[tuple[BucketItem, int, int]]:
    """The items of ``shard``'s minute buckets due in ``[start_ms, end_ms)``, each with the part
    of the window its bucket covers: a Query per minute (``limit``: at most that many items a
    Query), in due order."""
    if end_ms <= start_ms:
        return
    for minute in minutes_between(start_ms, end_ms - 1):
        low, high = max(start_ms, minute), min(end_ms, minute + MINUTE_MS)
        condition = BucketItem.sk.between(ulid_floor(low), ulid_ceiling(high - 1))
        try:
            for item in BucketItem.query(bucket_pk(minute, shard), condition, limit=limit):
                yield item, low, high
        except PynamoDBException as exc:
            raise StorageUnavailable(f"bucket {minute_of(minute)}/{shard}: {exc.msg}") from exc


class DynamoScans:
    """The scanners' side of the pipeline store: marks, leases, the clean map and the due Query."""

    def watermark(self, shard: int) -> int | None:
        try:
            item = WatermarkItem.get(mark_pk(shard), MARK_SK, consistent_read=True)
        except DoesNotExist:
            return None
        except PynamoDBException as exc:
            raise StorageUnavailable(f"watermark of shard {shard}: {exc.msg}") from exc
        return int(item.staged_until_ms) if item.staged_until_ms is not None else None

    def scan_marks(self, shards: Sequence[int]) -> tuple[dict[int, int | None], dict[int, int]]:
        """Each shard's mark, and what the tick last found clean past it (``W#clean``): one
        BatchGetItem, eventually consistent (DynamoDB's "Read consistency" page: such a read may
        not reflect a recently completed write, i.e. it answers an earlier version of the item).
        That is safe here because every version of these items ever written is true: a mark says
        what a scan staged, a clean map what a tick found empty, and a window stays so (what is
        written into it later is staged by its writer). An older one only widens the next look."""
        keys = [(mark_pk(shard), MARK_SK) for shard in shards] + [(CLEAN_PK, MARK_SK)]
        marks: dict[int, int | None] = dict.fromkeys(shards)
        clean: dict[int, int] = {}
        try:
            for start in range(0, len(keys), BATCH_GET_KEYS):
                for item in WatermarkItem.batch_get(keys[start : start + BATCH_GET_KEYS]):
                    if item.pk == CLEAN_PK:
                        clean = {int(shard): int(ms) for shard, ms in json.loads(item.clean_until or "{}").items()}
                    elif item.staged_until_ms is not None:
                        marks[int(item.pk.removeprefix(MARK_PREFIX))] = int(item.staged_until_ms)
        except PynamoDBException as exc:
            raise StorageUnavailable(f"scan marks: {exc.msg}") from exc
        return marks, {shard: ms for shard, ms in clean.items() if shard in marks}

    def mark_clean(self, until: dict[int, int]) -> None:
        """Keep what the tick found clean (the whole map: one PutItem of ``W#clean``)."""
        item = WatermarkItem(CLEAN_PK, MARK_SK, clean_until=json.dumps({str(k): v for k, v in sorted(until.items())}))
        try:
            item.save()
        except PynamoDBException as exc:
            raise StorageUnavailable(f"clean marks: {exc.msg}") from exc

    def has_items(self, shard: int, start_ms: int, end_ms: int) -> bool:
        """Whether the shard's buckets hold any item due in ``[start_ms, end_ms)``, staged or
        not: a Query of at most one item per minute bucket, eventually consistent (as the scan's
        own: the writers' guard covers what is in flight)."""
        return any(True for _ in _bucket_items(shard, start_ms, end_ms, limit=1))

    def begin_scan(self, shard: int, now_ms: int, lease_ms: int) -> tuple[int | None, int] | None:
        """Take the shard's scan lease; returns (its mark, the lease) or None while another scan
        holds it. Two scans reading the same mark would stage the same window twice."""
        lease = now_ms + lease_ms
        item = WatermarkItem(mark_pk(shard), MARK_SK)
        free = WatermarkItem.scanning_until_ms.does_not_exist() | (WatermarkItem.scanning_until_ms < now_ms)
        try:
            item.update(actions=[WatermarkItem.scanning_until_ms.set(lease)], condition=free)
        except PynamoDBException as exc:
            if is_conflict(exc):
                return None
            raise StorageUnavailable(f"scan lease of shard {shard}: {exc.msg}") from exc
        mark = int(item.staged_until_ms) if item.staged_until_ms is not None else None
        return mark, lease

    def end_scan(self, shard: int, lease: int, mark: int) -> bool:
        """Move the shard's mark and release the lease; False if the lease was lost meanwhile."""
        try:
            WatermarkItem(mark_pk(shard), MARK_SK).update(
                actions=[WatermarkItem.staged_until_ms.set(mark), WatermarkItem.scanning_until_ms.remove()],
                condition=WatermarkItem.scanning_until_ms == lease,
            )
        except PynamoDBException as exc:
            if is_conflict(exc):
                return False
            raise StorageUnavailable(f"watermark of shard {shard}: {exc.msg}") from exc
        return True

    def due(self, shard: int, start_ms: int, end_ms: int) -> list[Staged]:
        """Occurrences of ``shard`` due in ``[start_ms, end_ms)`` that nobody staged yet."""
        found = (self._stageable(item, low, high) for item, low, high in _bucket_items(shard, start_ms, end_ms))
        return [staged for staged in found if staged is not None]

    @staticmethod
    def _stageable(item: BucketItem, low: int, high: int) -> Staged | None:
        due = int(item.due_ms)
        if not low <= due < high or getattr(item, "staged_ms", None) == due:
            return None
        if isinstance(item, TaskItem):
            armed_here = parse_task_id(item.task_id).due_ms == due
            if item.status != SCHEDULED or not armed_here or item.run_due_ms == due:
                return None
            one_shot = is_one_shot_spec(json.loads(item.schedule))
            return staged_for(item.task_id, due, one_shot, priority_of(item.priority))
        return staged_for(item.task_id, due, one_shot=False, priority=priority_of(item.priority))
