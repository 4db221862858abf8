"""A backfill as the API answers it (``/v1/tasks/{task_id}/backfill...``)."""

from __future__ import annotations

from shared.api.operations import BackfillOut, BackfillProgressOut
from shared.domain.backfills import Backfill
from shared.domain.times import from_ms


def backfill_view(backfill: Backfill) -> BackfillOut:
    fires = [planned.fire_ms for planned in backfill.plan]
    progress = backfill.progress
    return BackfillOut.model_validate(
        {
            "backfill_id": backfill.id,
            "task_id": backfill.task_id,
            "status": backfill.status(),
            "from": backfill.start,
            "to": backfill.end,
            "per_second": backfill.per_second,
            "occurrences": len(backfill.plan),
            "in_window": backfill.in_window,
            "left_out": dict(backfill.left_out),
            "first_fire_at": from_ms(min(fires)) if fires else None,
            "last_fire_at": from_ms(max(fires)) if fires else None,
            "created_at": backfill.created_at,
            "cancelled_at": backfill.cancelled_at,
            "progress": BackfillProgressOut(
                waiting=progress.waiting,
                firing=progress.firing,
                succeeded=progress.succeeded,
                failed=progress.failed,
                skipped=progress.skipped,
                cancelled=progress.cancelled,
            )
            if progress is not None
            else None,
            "next_fire_at": from_ms(progress.next_fire_ms)
            if progress is not None and progress.next_fire_ms is not None
            else None,
        }
    )
