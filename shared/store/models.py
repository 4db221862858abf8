"""PynamoDB models: the storage shape of every item (see docs/design.md, "Data model").

One table, ``pk``/``sk`` strings:

* ``B#<YYYYMMDDHHMM>#<shard>`` / ``<ulid>`` — a task's *home* item in the bucket of its first due
  minute; the ULID sort key orders a bucket by due time, so a scanner reads a window of it
  with one Query. The task id *is* that ULID (see shared/domain/ids.py).

Index ``by_tenant`` (keys only): ``lpk = L#<tenant>#<k>`` / ``lsk = <created ms>#<task id>``
lists a tenant's tasks newest first, spread over a few partitions so a registration burst of one
tenant never throttles.
"""

from __future__ import annotations

from typing import Any

from pynamodb.attributes import (
    BooleanAttribute,
    NumberAttribute,
    TTLAttribute,
    UnicodeAttribute,
    VersionAttribute,
)
from pynamodb.indexes import GlobalSecondaryIndex, KeysOnlyProjection
from pynamodb.models import Model

DEFAULT_TABLE_NAME = "sundial"
LIST_INDEX_NAME = "by_tenant"


class ListIndex(GlobalSecondaryIndex["TaskItem"]):
    class Meta:
        index_name = LIST_INDEX_NAME
        projection = KeysOnlyProjection()

    lpk = UnicodeAttribute(hash_key=True)
    lsk = UnicodeAttribute(range_key=True)


class TaskItem(Model):
    """A task's home item: its definition, its state and its current occurrence."""

    class Meta:
        table_name = DEFAULT_TABLE_NAME
        billing_mode = "PAY_PER_REQUEST"

    pk = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)

    tenant = UnicodeAttribute()
    task_id = UnicodeAttribute()
    name = UnicodeAttribute(null=True)
    status = UnicodeAttribute()
    schedule = UnicodeAttribute()
    """The schedule spec as JSON, in the API's form."""
    anchor_ms = NumberAttribute(null=True)
    """The instant relative schedules (after_seconds, every_seconds) count from."""
    targets = UnicodeAttribute()
    """The targets as a JSON list, in the API's form."""
    multicast = BooleanAttribute(default=False)
    payload = UnicodeAttribute(null=True)
    """The payload as JSON text (absent when the task has none)."""
    retry = UnicodeAttribute()
    misfire = UnicodeAttribute()
    due_ms = NumberAttribute()
    """The occurrence this item is due for; the scanners stage it when its window comes."""
    next_fire_ms = NumberAttribute(null=True)
    created_ms = NumberAttribute()
    updated_ms = NumberAttribute()
    version = VersionAttribute()
    expires_at = TTLAttribute(null=True)

    lpk = UnicodeAttribute()
    lsk = UnicodeAttribute()
    by_tenant = ListIndex()


def bind_table(table_name: str, **connection: Any) -> None:
    """Point the models at a deployment's table (called once per cold start)."""
    for model in (TaskItem,):
        model.Meta.table_name = table_name
        for key, value in connection.items():
            setattr(model.Meta, key, value)
