"""The EventBridge Scheduler API's schedule groups and names in memory: the ``Schedules`` port
(shared/services/ports/) as shared/store/scheduler_api.py keeps them, held to the same contract
(tests/integration/test_schedules_contract.py)."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from typing import Any, TypeVar

from shared.domain.schedule_names import GroupRecord, NameRecord, NameTaken
from shared.store.scheduler_api import decode_token, encode_token


class InMemorySchedules:
    """The ``Schedules`` port as shared/store/scheduler_api.py keeps it: names taken atomically,
    pages in sort-key order with the store's tokens (one is answered whenever a page is full, as
    DynamoDB answers a last key at its limit), records read back as JSON, as an item stores them."""

    def __init__(self) -> None:
        self._groups: dict[tuple[str, str], GroupRecord] = {}
        self._names: dict[tuple[str, str], NameRecord] = {}
        self._lock = threading.Lock()

    def create_group(
        self, tenant: str, group: str, tags: list[dict[str, str]], now_ms: int, client_token: str | None = None
    ) -> GroupRecord:
        with self._lock:
            if (tenant, group) in self._groups:
                raise NameTaken(group)
            record = GroupRecord(group, now_ms, now_ms, _stored(tags), client_token)
            self._groups[(tenant, group)] = record
            return record

    def group(self, tenant: str, group: str) -> GroupRecord | None:
        return self._groups.get((tenant, group))

    def put_group(self, tenant: str, record: GroupRecord) -> None:
        self._groups[(tenant, record.name)] = replace(record, tags=_stored(record.tags))

    def delete_group(self, tenant: str, group: str) -> None:
        self._groups.pop((tenant, group), None)

    def groups(self, tenant: str, prefix: str, count: int, token: str | None) -> tuple[list[GroupRecord], str | None]:
        keyed = {name: r for (owner, name), r in self._groups.items() if owner == tenant}
        return _page(keyed, prefix, count, token)

    def take_name(self, tenant: str, record: NameRecord) -> None:
        with self._lock:
            if (tenant, f"{record.group}/{record.name}") in self._names:
                raise NameTaken(record.name)
            self.put_name(tenant, record)

    def put_name(self, tenant: str, record: NameRecord) -> None:
        self._names[(tenant, f"{record.group}/{record.name}")] = replace(record, request=_stored(record.request))

    def name(self, tenant: str, group: str, name: str) -> NameRecord | None:
        return self._names.get((tenant, f"{group}/{name}"))

    def drop_name(self, tenant: str, group: str, name: str) -> None:
        self._names.pop((tenant, f"{group}/{name}"), None)

    def drop_completed(self, tenant: str, group: str, name: str, task_id: str) -> bool:
        with self._lock:
            record = self._names.get((tenant, f"{group}/{name}"))
            if record is None or record.task_id != task_id:
                return False
            del self._names[(tenant, f"{group}/{name}")]
            return True

    def names(self, tenant: str, prefix: str, count: int, token: str | None) -> tuple[list[NameRecord], str | None]:
        keyed = {key: r for (owner, key), r in self._names.items() if owner == tenant}
        return _page(keyed, prefix, count, token)


Record = TypeVar("Record")


def _stored(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _page(keyed: dict[str, Record], prefix: str, count: int, token: str | None) -> tuple[list[Record], str | None]:
    after = decode_token(token) if token else None
    keys = [k for k in sorted(keyed) if k.startswith(prefix) and (after is None or k > after)][:count]
    return [keyed[k] for k in keys], (encode_token(keys[-1]) if keys and len(keys) == count else None)
