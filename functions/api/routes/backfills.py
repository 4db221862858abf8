"""``/v1/tasks/{task_id}/backfill`` and ``/backfills``: fire a recurring task's past occurrences
(docs/backfill.md), read how far a backfill got, cancel it."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.metrics import MetricUnit

from functions.api.common import backfills, json_response, replayable, tenant
from functions.api.openapi import RESPONSES, TaskId
from shared.api.models.backfills import BackfillIn
from shared.api.operations import BackfillOut, BackfillPage
from shared.api.views.backfills import backfill_view
from shared.observability import logger, metrics

router = Router()

BackfillId = Annotated[str, Path(min_length=1, max_length=64, description="The backfill's id (a ULID).")]
PageSize = Annotated[int, Query(ge=1, le=100, description="1 to 100.")]
Cursor = Annotated[str | None, Query(max_length=512, description="next_cursor of the previous page.")]


@router.post(
    "/v1/tasks/<task_id>/backfill",
    status_code=202,
    responses=RESPONSES["backfill"],
    summary="Fire a recurring task's occurrences in a past window, oldest first, at a bounded rate",
)
def start_backfill(task_id: TaskId, body: BackfillIn) -> Response[BackfillOut]:
    def start() -> tuple[int, BackfillOut]:
        started = backfills().start(tenant(), task_id, body.start, body.end, body.per_second)
        metrics.add_metric(name="BackfillRuns", unit=MetricUnit.Count, value=len(started.plan))
        logger.info("backfill started", extra={"task_id": started.task_id, "backfill_id": started.id})
        return 202, backfill_view(started)

    return replayable(router, f"POST /v1/tasks/{task_id.upper()}/backfill", start)


@router.get(
    "/v1/tasks/<task_id>/backfills", responses=RESPONSES["backfills"], summary="A task's backfills, newest first"
)
def list_backfills(task_id: TaskId, limit: PageSize = 20, cursor: Cursor = None) -> Response[BackfillPage]:
    page = backfills().list(tenant(), task_id, limit=limit, cursor=cursor)
    return json_response(200, BackfillPage(items=[backfill_view(b) for b in page.items], next_cursor=page.next_cursor))


@router.get(
    "/v1/tasks/<task_id>/backfills/<backfill_id>",
    responses=RESPONSES["get_backfill"],
    summary="A backfill and how far it got",
)
def get_backfill(task_id: TaskId, backfill_id: BackfillId) -> Response[BackfillOut]:
    return json_response(200, backfill_view(backfills().get(tenant(), task_id, backfill_id)))


@router.post(
    "/v1/tasks/<task_id>/backfills/<backfill_id>/cancel",
    responses=RESPONSES["cancel_backfill"],
    summary="Cancel a backfill: none of its runs not fired yet fires",
)
def cancel_backfill(task_id: TaskId, backfill_id: BackfillId) -> Response[BackfillOut]:
    return json_response(200, backfill_view(backfills().cancel(tenant(), task_id, backfill_id)))
