"""``/v1/dead-letters``: the occurrences that failed for good; inspect and redrive them."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path, Query

from functions.api.common import json_response, replayable, settings, tasks, tenant
from functions.api.openapi import RESPONSES
from functions.api.routes.tasks import Cursor, PageSize
from shared.api.models.dead_letters import RedriveIn
from shared.api.paging import fitted
from shared.api.responses import DeadLetterOut, DeadLetterPage, RedriveOut
from shared.api.views.dead_letters import dead_letter_view, redrive_view
from shared.domain.states import LetterStatus

router = Router()

LetterId = Annotated[str, Path(min_length=1, max_length=64, description="The dead letter's id (its run id).")]


@router.get("/v1/dead-letters", responses=RESPONSES["list"], summary="Dead letters, newest first")
def list_dead_letters(
    status: Annotated[LetterStatus | None, Query()] = None, limit: PageSize = 50, cursor: Cursor = None
) -> Response[DeadLetterPage]:
    page = tasks().dead_letters(tenant(), limit=limit, cursor=cursor, status=status)
    items, after = fitted(page.items, page.cursors, page.next_cursor, dead_letter_view, settings().page_bytes)
    return json_response(200, DeadLetterPage(items=items, next_cursor=after))


@router.get("/v1/dead-letters/<letter_id>", responses=RESPONSES["dead_letter"], summary="One dead letter")
def get_dead_letter(letter_id: LetterId) -> Response[DeadLetterOut]:
    return json_response(200, dead_letter_view(tasks().dead_letter(tenant(), letter_id)))


@router.post("/v1/dead-letters/redrive", responses=RESPONSES["redrive"], summary="Fire dead letters once more")
def redrive_dead_letters(request: RedriveIn) -> Response[RedriveOut]:
    def redrive() -> tuple[int, RedriveOut]:
        return 200, redrive_view(tasks().redrive(tenant(), request.chosen(), request.cursor))

    return replayable(router, "POST /v1/dead-letters/redrive", redrive)
