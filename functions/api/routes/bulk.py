"""``/v1/tasks:pause``, ``:resume``, ``:cancel``: a bulk operation over the tasks a selector picks,
a step (a page) at a time (docs/bulk.md)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.metrics import MetricUnit

from functions.api.common import bulk, replayable, tenant
from functions.api.openapi import RESPONSES
from shared.api.models.bulk import BulkIn
from shared.api.operations import BulkOut, TaskError
from shared.api.views.errors import error_body
from shared.domain.bulk import BulkAction
from shared.observability import logger, metrics

router = Router()


def _step(action: BulkAction, body: BulkIn) -> Response[BulkOut]:
    def work() -> tuple[int, BulkOut]:
        done = bulk().step(
            tenant(), action, body.selector.to_domain(), dry_run=body.dry_run, cursor=body.cursor, limit=body.limit
        )
        if not body.dry_run:
            metrics.add_metric(name=f"TasksBulk_{action.value}", unit=MetricUnit.Count, value=len(done.changed))
            logger.info(
                "bulk step",
                extra={"action": action.value, "changed": len(done.changed), "errors": len(done.errors)},
            )
        return 200, BulkOut(
            action=action,
            dry_run=body.dry_run,
            selected=done.selected,
            changed=len(done.changed),
            unchanged=done.unchanged,
            changed_ids=done.changed,
            errors=[TaskError(task_id=task_id, error=error_body(error)) for task_id, error in done.errors],
            next_cursor=done.next_cursor,
        )

    return replayable(router, f"POST /v1/tasks:{action.value}", work)


@router.post(
    "/v1/tasks:pause", responses=RESPONSES["bulk"], summary="Pause the tasks a selector picks, a step at a time"
)
def pause_tasks(body: BulkIn) -> Response[BulkOut]:
    return _step(BulkAction.PAUSE, body)


@router.post(
    "/v1/tasks:resume", responses=RESPONSES["bulk"], summary="Resume the tasks a selector picks, a step at a time"
)
def resume_tasks(body: BulkIn) -> Response[BulkOut]:
    return _step(BulkAction.RESUME, body)


@router.post(
    "/v1/tasks:cancel", responses=RESPONSES["bulk"], summary="Cancel the tasks a selector picks, a step at a time"
)
def cancel_tasks(body: BulkIn) -> Response[BulkOut]:
    return _step(BulkAction.CANCEL, body)
