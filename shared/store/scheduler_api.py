"""EventBridge Scheduler's schedule groups and schedule names on the task table
(docs/eventbridge.md, section 3): ``SG#<tenant>`` / ``<group>`` and ``SN#<tenant>`` /
``<group>/<name>``. A name is taken with a conditional put, so two creations of one name
cannot both succeed."""

from __future__ import annotations

import base64
import json
from typing import Any

from pynamodb.exceptions import DoesNotExist, PynamoDBException

from shared.domain.errors import StorageUnavailable
from shared.domain.schedule_names import GroupRecord, NameRecord, NameTaken
from shared.store.models import ScheduleGroupItem, ScheduleNameItem, is_conflict


def group_pk(tenant: str) -> str:
    return f"SG#{tenant}"


def name_pk(tenant: str) -> str:
    return f"SN#{tenant}"


def name_sk(group: str, name: str) -> str:
    return f"{group}/{name}"


def _group(item: ScheduleGroupItem) -> GroupRecord:
    return GroupRecord(
        item.sk, int(item.created_ms), int(item.modified_ms), json.loads(item.tags or "[]"), item.client_token
    )


def _name(item: ScheduleNameItem) -> NameRecord:
    group, _, name = item.sk.partition("/")
    return NameRecord(
        group,
        name,
        item.task_id,
        int(item.created_ms),
        int(item.modified_ms),
        json.loads(item.request),
        item.client_token,
    )


def _unavailable(exc: PynamoDBException) -> StorageUnavailable:
    return StorageUnavailable(f"schedules: {exc.msg}")


def encode_token(key: str) -> str:
    return base64.urlsafe_b64encode(key.encode()).decode()


def decode_token(token: str) -> str:
    return base64.urlsafe_b64decode(token.encode()).decode()


class DynamoSchedules:
    """The groups and names of every tenant (one instance per process): the ``Schedules`` port
    (shared/services/ports/). A page token is the last key's sort key, base64: one that is not
    decodes to a ValueError."""

    def create_group(
        self, tenant: str, group: str, tags: list[dict[str, str]], now_ms: int, client_token: str | None = None
    ) -> GroupRecord:
        item = ScheduleGroupItem(
            group_pk(tenant),
            group,
            created_ms=now_ms,
            modified_ms=now_ms,
            tags=json.dumps(tags),
            client_token=client_token,
        )
        try:
            item.save(condition=ScheduleGroupItem.pk.does_not_exist())
        except PynamoDBException as exc:
            if is_conflict(exc):
                raise NameTaken(group) from exc
            raise _unavailable(exc) from exc
        return _group(item)

    def group(self, tenant: str, group: str) -> GroupRecord | None:
        try:
            return _group(ScheduleGroupItem.get(group_pk(tenant), group, consistent_read=True))
        except DoesNotExist:
            return None
        except PynamoDBException as exc:
            raise _unavailable(exc) from exc

    def put_group(self, tenant: str, record: GroupRecord) -> None:
        item = ScheduleGroupItem(
            group_pk(tenant),
            record.name,
            created_ms=record.created_ms,
            modified_ms=record.modified_ms,
            tags=json.dumps(record.tags),
            client_token=record.client_token,
        )
        try:
            item.save()
        except PynamoDBException as exc:
            raise _unavailable(exc) from exc

    def delete_group(self, tenant: str, group: str) -> None:
        try:
            ScheduleGroupItem(group_pk(tenant), group).delete()
        except PynamoDBException as exc:
            raise _unavailable(exc) from exc

    def groups(self, tenant: str, prefix: str, count: int, token: str | None) -> tuple[list[GroupRecord], str | None]:
        return self._page(ScheduleGroupItem, group_pk(tenant), prefix, count, token, _group)

    def take_name(self, tenant: str, record: NameRecord) -> None:
        item = self._name_item(tenant, record)
        try:
            item.save(condition=ScheduleNameItem.pk.does_not_exist())
        except PynamoDBException as exc:
            if is_conflict(exc):
                raise NameTaken(record.name) from exc
            raise _unavailable(exc) from exc

    def put_name(self, tenant: str, record: NameRecord) -> None:
        try:
            self._name_item(tenant, record).save()
        except PynamoDBException as exc:
            raise _unavailable(exc) from exc

    def name(self, tenant: str, group: str, name: str) -> NameRecord | None:
        try:
            return _name(ScheduleNameItem.get(name_pk(tenant), name_sk(group, name), consistent_read=True))
        except DoesNotExist:
            return None
        except PynamoDBException as exc:
            raise _unavailable(exc) from exc

    def drop_name(self, tenant: str, group: str, name: str) -> None:
        try:
            ScheduleNameItem(name_pk(tenant), name_sk(group, name)).delete()
        except PynamoDBException as exc:
            raise _unavailable(exc) from exc

    def drop_completed(self, tenant: str, group: str, name: str, task_id: str) -> bool:
        """Remove a name that still points at ``task_id`` (a schedule created again under the
        name since is left alone); False when it does not."""
        try:
            ScheduleNameItem(name_pk(tenant), name_sk(group, name)).delete(
                condition=ScheduleNameItem.task_id == task_id
            )
        except PynamoDBException as exc:
            if is_conflict(exc):
                return False
            raise _unavailable(exc) from exc
        return True

    def names(self, tenant: str, prefix: str, count: int, token: str | None) -> tuple[list[NameRecord], str | None]:
        """Names whose ``<group>/<name>`` starts with ``prefix``, in order, a page at a time."""
        return self._page(ScheduleNameItem, name_pk(tenant), prefix, count, token, _name)

    @staticmethod
    def _name_item(tenant: str, record: NameRecord) -> ScheduleNameItem:
        return ScheduleNameItem(
            name_pk(tenant),
            name_sk(record.group, record.name),
            task_id=record.task_id,
            created_ms=record.created_ms,
            modified_ms=record.modified_ms,
            request=json.dumps(record.request),
            client_token=record.client_token,
        )

    @staticmethod
    def _page(
        model: Any, pk: str, prefix: str, count: int, token: str | None, convert: Any
    ) -> tuple[list[Any], str | None]:
        condition = model.sk.startswith(prefix) if prefix else None
        start = {"pk": {"S": pk}, "sk": {"S": decode_token(token)}} if token else None
        try:
            found = model.query(pk, condition, limit=count, last_evaluated_key=start, consistent_read=True)
            records = [convert(item) for item in found]
            last = found.last_evaluated_key
        except PynamoDBException as exc:
            raise _unavailable(exc) from exc
        return records, (encode_token(last["sk"]["S"]) if last and len(records) == count else None)
