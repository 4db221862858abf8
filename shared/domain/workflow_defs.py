"""A workflow as it is registered (docs/workflows.md): its nodes, each called as a task's target
is, and its graph (shared/domain/workflows.py). Pure: no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from shared.domain.retry import RetryPolicy
from shared.domain.schedules import Schedule
from shared.domain.tasks import Target
from shared.domain.workflows import Graph


@dataclass(frozen=True)
class NodeDef:
    """A node: called as a task's target is (its targets, payload, retry policy)."""

    id: str
    targets: tuple[Target, ...]
    multicast: bool = False
    payload: Any = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)


@dataclass(frozen=True)
class Workflow:
    """A workflow as it is registered: its nodes, its graph, an optional schedule (kept as a
    recurring task of the tenant whose target starts a run of this workflow)."""

    id: str
    tenant: str
    nodes: tuple[NodeDef, ...]
    graph: Graph
    created_at: datetime
    updated_at: datetime
    name: str | None = None
    schedule: Schedule | None = None
    schedule_task_id: str | None = None
    version: int = 1

    def node(self, node: str) -> NodeDef:
        return next(n for n in self.nodes if n.id == node)
