"""Every error answer in one shape: ``{"error": {"code", "message", "details"?}}``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types

from shared.api.views import error_view
from shared.domain.errors import FieldError, SundialError, ValidationFailed


class RouteNotFound(SundialError):
    code = "route_not_found"
    status = 404


class InternalError(SundialError):
    """Anything unexpected: logged, and answered in the error format (never a bare 500)."""

    code = "internal_error"
    status = 500


def field_name(loc: Sequence[Any]) -> str:
    """A pydantic error location as the API names fields: ``targets[0].http.url``."""
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    # pydantic adds the model or union member name for some errors; the API's field is the rest
    name = ""
    for part in parts:
        if isinstance(part, int):
            name += f"[{part}]"
        elif str(part).startswith(("function-", "json-or-python")):
            continue
        else:
            name += ("." if name else "") + ("lambda" if part == "lambda_" else str(part))
    return name or "body"


def from_pydantic(errors: Sequence[Mapping[str, Any]]) -> ValidationFailed:
    details = []
    for error in errors:
        message = str(error.get("msg", "is not valid"))
        if error.get("type") == "missing":
            message = "is required"
        elif error.get("type") == "extra_forbidden":
            message = "is not a known field"
        name = field_name(error.get("loc", ()))
        if error.get("type") == "json_invalid":
            name, message = "body", "is not valid JSON"
        details.append(FieldError(name, message.removeprefix("Value error, ")))
    summary = "; ".join(f"{d.field}: {d.message}" for d in details)
    return ValidationFailed(f"the request is not valid: {summary}", details)


def response_for(error: SundialError) -> Response:
    return Response(
        status_code=error.status,
        content_type=content_types.APPLICATION_JSON,
        body=error_view(error),
    )
