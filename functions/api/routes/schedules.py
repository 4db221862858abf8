"""``/v1/schedules:preview``: the next occurrences of any schedule, without registering it."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router

from functions.api.common import json_response
from functions.api.openapi import RESPONSES
from shared.api.models.schedules import PreviewIn, schedule_to_domain
from shared.api.responses import PreviewOut
from shared.domain.calendars import Repeat, calendar_notes
from shared.domain.registration import preview
from shared.domain.schedules import after_runs
from shared.domain.times import truncate_ms, utc_now

router = Router()

FIXED_DELAY_NOTE = (
    "after: end (a fixed delay): each time after the first is every_seconds after the run before it ends, "
    "whatever its final state; they depend on the runs and cannot be listed ahead"
)


@router.post("/v1/schedules:preview", responses=RESPONSES["preview"], summary="The next occurrences of a schedule")
def preview_schedule(request: PreviewIn) -> Response[PreviewOut]:
    schedule = schedule_to_domain(request.schedule)
    times = preview(schedule, request.count, truncate_ms(utc_now()), request.after)
    notes = calendar_notes(schedule, times) if isinstance(schedule, Repeat) else []
    runs = after_runs(schedule)
    if runs:
        notes.append(FIXED_DELAY_NOTE)
    return json_response(200, PreviewOut.model_validate({"times": times, "notes": notes, "depends_on_runs": runs}))
