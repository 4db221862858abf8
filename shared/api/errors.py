"""Errors the API adds to the domain's, and pydantic's validation errors in the API's terms:
``{"field": "targets[0].http.url", "message": ...}``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from shared.api.types import Problem
from shared.domain.errors import FieldError, SundialError, ValidationFailed


class RouteNotFound(SundialError):
    code = "route_not_found"
    status = 404


class MethodNotAllowed(SundialError):
    code = "method_not_allowed"
    status = 405


class InternalError(SundialError):
    """Anything unexpected: logged, and answered in the error format (never a bare 500)."""

    code = "internal_error"
    status = 500


def field_name(loc: Sequence[Any]) -> str:
    """A pydantic error location as the API names fields: ``targets[0].http.url``."""
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    name = ""
    for part in parts:
        if isinstance(part, int):
            name += f"[{part}]"
        # pydantic adds union member tags (ours start with ~) and validator names to some locations
        elif str(part).startswith(("~", "function-", "json-or-python")) or part == "[key]":
            continue
        else:
            name += ("." if name else "") + ("lambda" if part == "lambda_" else str(part))
    return name


_KINDS = {
    **dict.fromkeys(("hour", "day", "week", "month", "year", "workday"), "rule"),
    **dict.fromkeys(("at", "after_seconds", "cron", "every_seconds", "repeat"), "schedule"),
    **dict.fromkeys(
        ("http", "lambda", "sqs", "sns", "eventbridge", "job", "workflow", "stepfunctions", "ecs"), "target"
    ),
}


def _of(loc: Sequence[Any]) -> str:
    """`` of a day rule``: the kind of object (a union member) a field is not known in."""
    kinds = [str(part)[1:] for part in loc[:-1] if str(part).startswith("~")]
    if not kinds or kinds[-1] not in _KINDS:
        return ""
    return f" of a {kinds[-1]} {_KINDS[kinds[-1]]}"


def _joined(name: str, member: str) -> str:
    if not member:
        return name
    if not name or member.startswith("["):
        return name + member
    return f"{name}.{member}"


def from_pydantic(errors: Sequence[Mapping[str, Any]]) -> ValidationFailed:
    details = []
    for error in errors:
        message = str(error.get("msg", "is not valid")).removeprefix("Value error, ")
        name = field_name(error.get("loc", ()))
        problem = (error.get("ctx") or {}).get("error")
        kind = error.get("type")
        if isinstance(problem, Problem):
            name, message = _joined(name, problem.member), problem.message
        elif kind == "missing":
            message = "is required"
        elif kind == "extra_forbidden":
            message = "is not a known field" + _of(error.get("loc", ()))
        elif kind == "unknown_level":
            name = _joined(name, "level")
        elif kind == "string_pattern_mismatch":
            message = f"does not have the form this field takes (the pattern {(error.get('ctx') or {}).get('pattern')})"
        elif kind == "json_invalid":
            name, message = "body", "is not valid JSON"
        details.append(FieldError(name or "body", message))
    summary = "; ".join(f"{d.field}: {d.message}" for d in details)
    return ValidationFailed(f"the request is not valid: {summary}", details)
