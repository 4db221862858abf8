"""``/v1/limits``: the caller's limits per destination (docs/receivers.md, section 1): how fast, and
how many at once, its HTTP targets may call one receiver."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path

from functions.api.common import json_response, limits, tenant
from functions.api.openapi import RESPONSES
from shared.api.models.fields import LIMIT_NAME
from shared.api.models.limits import DestinationLimitIn
from shared.api.responses import DestinationLimitList, DestinationLimitOut
from shared.api.views.limits import limit_view
from shared.domain.limits import MAX_LIMITS
from shared.services.limits import CACHE_SECONDS

router = Router()

LimitName = Annotated[
    str,
    Path(
        pattern=LIMIT_NAME,
        min_length=1,
        max_length=64,
        description="The limit's name: 1-64 of a-z, 0-9, `.`, `_` and `-`, starting with a letter or digit.",
    ),
]

APPLIES = f"Triggers keep a tenant's limits for {CACHE_SECONDS} s, so a change applies within {CACHE_SECONDS} s."


@router.put(
    "/v1/limits/<name>",
    responses=RESPONSES["put_limit"],
    summary="Create or replace a limit per destination",
    description=(
        "Holds the tenant's HTTP targets whose URL has `origin` (scheme, host and port), or that name the "
        "limit in `limit`, to `per_second` calls a second (GCRA: `burst` at once after a quiet spell) and "
        "at most `max_in_flight` calls outstanding. A held call waits and fires as soon as the limit allows; "
        f"it is never dropped. A tenant has at most {MAX_LIMITS} limits (`409 too_many_limits`), one per "
        f"origin (`409 origin_taken`). {APPLIES}"
    ),
)
def put_limit(name: LimitName, request: DestinationLimitIn) -> Response[DestinationLimitOut]:
    return json_response(200, limit_view(limits().put(tenant(), name, request.to_spec())))


@router.get("/v1/limits", responses=RESPONSES["limits"], summary="The tenant's limits per destination")
def list_limits() -> Response[DestinationLimitList]:
    return json_response(200, DestinationLimitList(items=[limit_view(limit) for limit in limits().list(tenant())]))


@router.get("/v1/limits/<name>", responses=RESPONSES["limit"], summary="A limit per destination")
def get_limit(name: LimitName) -> Response[DestinationLimitOut]:
    return json_response(200, limit_view(limits().get(tenant(), name)))


@router.delete(
    "/v1/limits/<name>",
    status_code=204,
    responses=RESPONSES["delete_limit"],
    summary="Delete a limit per destination",
    description=f"The targets it held are no longer held (targets that name it keep the name). {APPLIES}",
)
def delete_limit(name: LimitName) -> Response[None]:
    limits().delete(tenant(), name)
    return Response(status_code=204)
