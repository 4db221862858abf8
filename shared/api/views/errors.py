"""The error answer, every 4xx and 5xx (and a batch item's error)."""

from __future__ import annotations

from shared.api.responses import ErrorBody, ErrorDetail, ErrorOut
from shared.domain.errors import SundialError


def error_body(error: SundialError) -> ErrorBody:
    details = [ErrorDetail(field=d.field, message=d.message) for d in error.details] or None
    return ErrorBody(code=error.code, message=error.message, details=details)


def error_view(error: SundialError) -> ErrorOut:
    return ErrorOut(error=error_body(error))
