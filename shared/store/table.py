"""Every item model of the one table, and :func:`bind_table`, which points them all at a
deployment's table (:mod:`shared.store.models`, :mod:`shared.store.tenant_items`)."""

from __future__ import annotations

from pynamodb.models import Model

from shared.store.models import (
    BackfillItem,
    BackfillMarkItem,
    BucketItem,
    CanaryResourceItem,
    DeadLetterItem,
    JobItem,
    ListPageItem,
    NodeOutcomeItem,
    OccurrenceItem,
    RateItem,
    RunItem,
    RunLogItem,
    ScheduleGroupItem,
    ScheduleNameItem,
    SigningGuardItem,
    SigningSecretItem,
    TagEntryItem,
    TaskItem,
    WatermarkItem,
    WorkflowItem,
    WorkflowRunItem,
    WorkflowVersionItem,
)
from shared.store.tenant_items import (
    AccessKeyItem,
    KeyEntryItem,
    KeyItem,
    LimitItem,
    LimitOriginItem,
    LimitStateItem,
    TenantEntryItem,
    TenantItem,
)

TABLE_MODELS: tuple[type[Model], ...] = (
    BucketItem,
    TaskItem,
    OccurrenceItem,
    WatermarkItem,
    ListPageItem,
    WorkflowItem,
    WorkflowVersionItem,
    WorkflowRunItem,
    NodeOutcomeItem,
    RunItem,
    RunLogItem,
    JobItem,
    DeadLetterItem,
    RateItem,
    SigningSecretItem,
    SigningGuardItem,
    TenantItem,
    TenantEntryItem,
    KeyItem,
    KeyEntryItem,
    LimitItem,
    LimitOriginItem,
    LimitStateItem,
    AccessKeyItem,
    ScheduleGroupItem,
    ScheduleNameItem,
    CanaryResourceItem,
    TagEntryItem,
    BackfillItem,
    BackfillMarkItem,
)


def bind_table(table_name: str) -> None:
    """Point every model at a deployment's table (once per cold start, before any request).

    The models share one connection, so a process makes one botocore client, not one per model
    class (each costs tens of milliseconds and ~40,000 objects the first time a model is used)."""
    current = BucketItem._connection
    if current is not None and all(
        model.Meta.table_name == table_name and model._connection is current for model in TABLE_MODELS
    ):
        return  # bound already (a function building several services binds once)
    for model in TABLE_MODELS:
        model.Meta.table_name = table_name
        model._connection = None
    shared = BucketItem._get_connection()  # the schema with every key and the index
    for model in TABLE_MODELS:
        model._connection = shared
