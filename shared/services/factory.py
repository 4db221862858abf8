"""Wiring: the real service from a deployment's settings (handlers call this once)."""

from __future__ import annotations

from datetime import timedelta

from shared.services.tasks import TaskService
from shared.settings import Settings
from shared.store.dynamo import DynamoTaskRepository
from shared.store.models import bind_table


def build_task_service(settings: Settings) -> TaskService:
    bind_table(settings.table_name)
    return TaskService(
        repository=DynamoTaskRepository(list_shards=settings.list_shards),
        bucket_shards=settings.bucket_shards,
        retention=timedelta(days=settings.run_retention_days),
    )
