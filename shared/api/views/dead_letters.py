"""``/v1/dead-letters``: a dead letter, and what a redrive fired."""

from __future__ import annotations

from shared.api.responses import DeadLetterOut, RedrivenRun, RedriveOut
from shared.api.views.forms import targets_shown
from shared.api.views.tasks import retry_view
from shared.domain.tasks import DeadLetter
from shared.services.tasks import Redriven


def dead_letter_view(letter: DeadLetter) -> DeadLetterOut:
    return DeadLetterOut.model_validate(
        {
            "id": letter.id,
            "task_id": letter.task_id,
            "run_id": letter.run_id,
            "name": letter.name,
            "status": letter.status,
            "reason": letter.reason,
            "scheduled_for": letter.scheduled_for,
            "failed_at": letter.failed_at,
            "attempts": letter.attempts,
            **targets_shown(letter.targets, letter.multicast),
            "payload": letter.payload,
            "retry": retry_view(letter.retry),
            "redriven_run_id": letter.redriven_run_id,
            "redriven_at": letter.redriven_at,
            "workflow": _workflow(letter),
        }
    )


def _workflow(letter: DeadLetter) -> dict[str, object] | None:
    ref = letter.workflow
    if ref is None:
        return None
    return {"id": ref.workflow_id, "run_id": ref.run_id, "node": ref.node, "attempt": ref.attempt}


def redrive_view(done: Redriven) -> RedriveOut:
    runs = [RedrivenRun(id=letter.id, task_id=letter.task_id, run_id=run_id) for letter, run_id in done.runs]
    return RedriveOut(redriven=len(runs), runs=runs, next_cursor=done.next_cursor)
