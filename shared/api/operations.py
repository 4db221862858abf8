"""The responses of the operations over many of a tenant's tasks: a bulk step's
(``POST /v1/tasks:pause``, ``:resume``, ``:cancel``; docs/bulk.md) and a backfill's
(``POST /v1/tasks/{task_id}/backfill`` and its reads; docs/backfill.md). The other answers are
:mod:`shared.api.responses`'."""

from __future__ import annotations

from pydantic import Field

from shared.api.responses import ErrorBody
from shared.api.types import Instant, Model, is_none
from shared.domain.backfills import BackfillStatus
from shared.domain.bulk import BulkAction


class TaskError(Model):
    task_id: str
    error: ErrorBody


class BulkOut(Model):
    """What one step did, and where the next one starts."""

    action: BulkAction
    dry_run: bool
    selected: int = Field(description="The tasks this step listed (the selection's next page).")
    changed: int = Field(description="Those it changed (dry run: would change now).")
    unchanged: int = Field(
        description="Those left as they were: already so, or in a state the move does not apply to (a completed "
        "task is not paused)."
    )
    changed_ids: list[str] = Field(description="The ids of the tasks counted in changed.")
    errors: list[TaskError] = Field(
        description="The tasks this step could not change, each with its error (concurrent_update, "
        "storage_unavailable): another step, or the task's own route, may."
    )
    next_cursor: str | None = Field(
        description="Send it as cursor, with the same selector, for the next step; null: the selection is done. A "
        "step may list fewer than limit, even none, and still answer a cursor (a name prefix or a status the "
        "listing reads a bounded number of tasks a request): keep going until it is null."
    )


class BackfillProgressOut(Model):
    """Where a backfill's runs stand."""

    waiting: int = Field(description="Not fired yet: each is due at its place in the pace.")
    firing: int = Field(description="Being called, retrying, or held back by a limit per destination.")
    succeeded: int
    failed: int = Field(description="Ended failed or dead-lettered (its dead letter can be redriven).")
    skipped: int = Field(description="Skipped: the task was paused or cancelled when its turn came.")
    cancelled: int = Field(description="Cancelled with the backfill before they fired.")


class BackfillOut(Model):
    """A backfill of a task's past occurrences."""

    backfill_id: str
    task_id: str
    status: BackfillStatus = Field(
        description="running (runs left to fire or firing), done (every run ended), cancelled."
    )
    start: Instant = Field(alias="from")
    end: Instant = Field(alias="to")
    per_second: float
    occurrences: int = Field(description="The occurrences this backfill fires, each once, as runs of the task.")
    in_window: int = Field(description="The schedule's occurrences in [from, to).")
    left_out: dict[str, int] = Field(
        description="The window's other occurrences, counted by why: fired_by_task (its own run is on record), "
        "backfilled (another backfill took it), task_armed (the task fires it itself: at or after the occurrence "
        "it is armed for), cancelled (the backfill was cancelled first)."
    )
    first_fire_at: Instant | None = Field(description="When its first run is due (null: it fires none).")
    last_fire_at: Instant | None = Field(description="When its last run is due (null: it fires none).")
    created_at: Instant
    cancelled_at: Instant | None = Field(None, exclude_if=is_none, description="Set once it is cancelled.")
    progress: BackfillProgressOut | None = Field(
        None, exclude_if=is_none, description="Read from its runs: in the answer of a read by id or a cancel only."
    )
    next_fire_at: Instant | None = Field(
        None, exclude_if=is_none, description="When its next waiting run fires (with progress, while one waits)."
    )


class BackfillPage(Model):
    items: list[BackfillOut]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last.")
