"""The EventBridge Scheduler API's schedule groups and schedule names as the store keeps them
(shared/store/scheduler_api.py): a name, in its group, points at the task that is the schedule
and keeps the request that made it (what ``GetSchedule`` answers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GroupRecord:
    name: str
    created_ms: int
    modified_ms: int
    tags: list[dict[str, str]]
    client_token: str | None = None


@dataclass(frozen=True)
class NameRecord:
    group: str
    name: str
    task_id: str
    """Empty while the creation that took the name has not recorded its task yet."""
    created_ms: int
    modified_ms: int
    request: dict[str, Any]
    """The request as kept (timestamps in epoch seconds): what ``GetSchedule`` answers."""
    client_token: str | None


class NameTaken(Exception):
    """The schedule's name, or the group, exists already."""
