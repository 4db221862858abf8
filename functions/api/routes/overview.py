"""``/v1/overview``: is anything wrong? The tenant's exact counts of what needs looking at, from the
status index (docs/status-index.md); the console's home shows them."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router

from functions.api.common import json_response, overview, tenant
from functions.api.openapi import RESPONSES
from shared.api.responses import OverviewOut
from shared.api.views.overview import overview_view

router = Router()


@router.get("/v1/overview", responses=RESPONSES["overview"], summary="How many items need looking at, exactly")
def read_overview() -> Response[OverviewOut]:
    return json_response(200, overview_view(overview().read(tenant())))
