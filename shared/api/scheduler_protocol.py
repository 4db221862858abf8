"""EventBridge Scheduler's wire protocol (``rest-json``), read from botocore's service model of
``scheduler`` (2021-06-30), which boto3 installs: the operation a request is, its input bound from
the path, the query string and the JSON body, checked against the model's shapes (required
members, lengths, ranges, patterns, enumerations), and the answers and errors as the service
writes them (docs/eventbridge.md, section 4). Nothing here knows what a schedule does: the
operations are the service layer's (shared/services/scheduler_api/)."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any
from urllib.parse import quote, unquote

import botocore.session

from shared.domain.errors import SchedulerApiError, scheduler_validation

SERVICE = "scheduler"
API_VERSION = "2021-06-30"
PREFIX = "/scheduler"
"""Where Sundial serves the API: a client's ``endpoint_url`` is the base URL and this."""


@cache
def service_model() -> Any:
    return botocore.session.get_session().get_service_model(SERVICE, API_VERSION)


@dataclass(frozen=True)
class Request:
    operation: str
    params: dict[str, Any]


def _template(uri: str) -> re.Pattern[str]:
    """``/schedules/{Name}`` as a pattern whose groups are the path's members."""
    path = uri.split("?", 1)[0]
    pattern = re.sub(
        r"\{(\w+)\+?\}", lambda m: f"(?P<{m[1]}>[^/]+)", re.escape(path).replace(r"\{", "{").replace(r"\}", "}")
    )
    return re.compile(pattern + "$")


@cache
def _routes() -> list[tuple[str, re.Pattern[str], str]]:
    model = service_model()
    routes = []
    for name in model.operation_names:
        http = model.operation_model(name).http
        routes.append((http["method"], _template(http["requestUri"]), name))
    return routes


def route(method: str, path: str) -> tuple[str, dict[str, str]]:
    """The operation ``method`` ``path`` (below :data:`PREFIX`, percent-encoded as sent) names,
    and its path's members (decoded); an unknown one is a ``ValidationException`` as the
    service's front door answers a path it has no operation for."""
    if path.startswith("/tags/"):  # an ARN holds slashes: whatever follows is the ARN
        members = {"ResourceArn": unquote(path[len("/tags/") :])}
        for verb, pattern, name in _routes():
            if verb == method and pattern.pattern.startswith("/tags/"):
                return name, members
    for verb, pattern, name in _routes():
        found = pattern.match(path)
        if found and verb == method:
            return name, {k: unquote(v) for k, v in found.groupdict().items()}
    raise SchedulerApiError("UnknownOperationException", f"no operation answers {method} {path}")


def wire_path(operation: str, members: Mapping[str, str]) -> str:
    """The operation's path as an SDK sends it, below :data:`PREFIX` (each member percent-encoded,
    ``/`` included, as botocore renders a URI label): what a SigV4 signature covers, rebuilt from
    the decoded path API Gateway hands the function."""
    uri = service_model().operation_model(operation).http["requestUri"].split("?", 1)[0]
    return re.sub(r"\{(\w+)\+?\}", lambda m: quote(members[m[1]], safe="-_.~"), uri)


def bind(
    operation: str, path_members: Mapping[str, str], query: Mapping[str, list[str]], body: bytes | None
) -> Request:
    """The operation's input from the request's parts, checked against its shape."""
    shape = service_model().operation_model(operation).input_shape
    params: dict[str, Any] = {}
    document: dict[str, Any] = {}
    if body:
        try:
            parsed = json.loads(body)
        except ValueError as exc:
            raise SchedulerApiError("SerializationException", "the request's body is not JSON") from exc
        if not isinstance(parsed, dict):
            raise SchedulerApiError("SerializationException", "the request's body is not a JSON object")
        document = parsed
    for name, member in shape.members.items():
        location = member.serialization.get("location")
        wire = member.serialization.get("name", name)
        if location == "uri":
            if name in path_members:
                params[name] = path_members[name]
        elif location == "querystring":
            values = query.get(wire)
            if values:
                params[name] = _scalar(member, values) if member.type_name != "list" else list(values)
        elif location == "header":
            continue
        elif name in document:
            params[name] = _from_json(member, document[name], name)
    unknown = sorted(set(document) - set(shape.members))
    if unknown:
        raise SchedulerApiError("SerializationException", f"unknown member {unknown[0]!r} in the request")
    check(shape, params, "")
    return Request(operation, params)


def _scalar(member: Any, values: list[str]) -> Any:
    value = values[0]
    if member.type_name in ("integer", "long"):
        try:
            return int(value)
        except ValueError as exc:
            raise scheduler_validation(
                f"Value '{value}' at '{member.name}' failed to satisfy constraint: Member must be a number"
            ) from exc
    return value


_PRIMITIVES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "boolean": bool,
    "integer": int,
    "long": int,
    "double": (int, float),
    "float": (int, float),
}


def _timestamp(value: Any, path: str) -> datetime:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise SchedulerApiError("SerializationException", f"{path} is not a timestamp")
    if isinstance(value, int | float):
        return datetime.fromtimestamp(float(value), UTC)
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise SchedulerApiError("SerializationException", f"{path} is not a timestamp") from exc
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SchedulerApiError("SerializationException", f"{path} is not an object")
    return value


def _from_json(shape: Any, value: Any, path: str) -> Any:
    """A body member as the service reads it: timestamps as epoch seconds (botocore writes them
    so) or ISO 8601 text."""
    kind = shape.type_name
    if value is None:
        return None
    if kind == "timestamp":
        return _timestamp(value, path)
    if kind == "structure":
        members = _object(value, path)
        unknown = sorted(set(members) - set(shape.members))
        if unknown:
            raise SchedulerApiError("SerializationException", f"unknown member {path}.{unknown[0]}")
        return {k: _from_json(shape.members[k], v, f"{path}.{k}") for k, v in members.items()}
    if kind == "list":
        if not isinstance(value, list):
            raise SchedulerApiError("SerializationException", f"{path} is not a list")
        return [_from_json(shape.member, v, f"{path}[{i}]") for i, v in enumerate(value)]
    if kind == "map":
        return {k: _from_json(shape.value, v, f"{path}.{k}") for k, v in _object(value, path).items()}
    wanted = _PRIMITIVES.get(kind)
    wrong = wanted is not None and not isinstance(value, wanted)
    if wrong or (kind in ("integer", "long") and isinstance(value, bool)):
        raise SchedulerApiError("SerializationException", f"{path} is not a {kind}")
    return value


def _fail(value: Any, path: str, constraint: str) -> SchedulerApiError:
    shown = value if not isinstance(value, datetime) else value.isoformat()
    return scheduler_validation(
        f"1 validation error detected: Value '{shown}' at '{path}' failed to satisfy constraint: {constraint}"
    )


def _check_structure(shape: Any, value: dict[str, Any], path: str) -> None:
    for name in shape.metadata.get("required", []):
        if value.get(name) is None:
            member = f"{path}.{name}" if path else name
            raise scheduler_validation(
                f"1 validation error detected: Value null at '{member}' failed to satisfy constraint: "
                "Member must not be null"
            )
    for name, member_value in value.items():
        if member_value is not None:
            check(shape.members[name], member_value, f"{path}.{name}" if path else name)


def _check_bounds(meta: Mapping[str, Any], value: Any, size: int, path: str, what: str) -> None:
    if "min" in meta and size < meta["min"]:
        raise _fail(value, path, f"Member must have {what} greater than or equal to {meta['min']}")
    if "max" in meta and size > meta["max"]:
        raise _fail(value, path, f"Member must have {what} less than or equal to {meta['max']}")


def _check_string(shape: Any, value: str, path: str) -> None:
    _check_bounds(shape.metadata, value, len(value), path, "length")
    if shape.enum and value not in shape.enum:
        raise _fail(value, path, f"Member must satisfy enum value set: [{', '.join(shape.enum)}]")
    pattern = shape.metadata.get("pattern")
    if pattern and not re.fullmatch(pattern, value, re.DOTALL):
        raise _fail(value, path, f"Member must satisfy regular expression pattern: {pattern}")


def check(shape: Any, value: Any, path: str) -> None:
    """The model's constraints on ``value``, the first broken one a ``ValidationException``
    naming the member (``Target.RetryPolicy.MaximumRetryAttempts``)."""
    kind = shape.type_name
    if kind == "structure":
        _check_structure(shape, value, path)
    elif kind == "string":
        _check_string(shape, value, path)
    elif kind in ("integer", "long"):
        _check_bounds(shape.metadata, value, value, path, "value")
    elif kind == "list":
        _check_bounds(shape.metadata, value, len(value), path, "length")
        for i, item in enumerate(value):
            check(shape.member, item, f"{path}.{i + 1}.member")
    elif kind == "map":
        for key, item in value.items():
            check(shape.key, key, f"{path}.key")
            check(shape.value, item, f"{path}.{key}")


def _to_json(shape: Any, value: Any) -> Any:
    if value is None:
        return None
    kind = shape.type_name
    if kind == "timestamp":
        return value.timestamp() if isinstance(value, datetime) else value
    if kind == "structure":
        return {k: _to_json(shape.members[k], v) for k, v in value.items() if v is not None and k in shape.members}
    if kind == "list":
        return [_to_json(shape.member, v) for v in value]
    if kind == "map":
        return {k: _to_json(shape.value, v) for k, v in value.items()}
    return value


def answer(operation: str, result: Mapping[str, Any]) -> tuple[int, dict[str, str], bytes]:
    """The operation's output as the service writes it."""
    op = service_model().operation_model(operation)
    body = _to_json(op.output_shape, dict(result)) if op.output_shape is not None else {}
    return op.http.get("responseCode", 200), {"Content-Type": "application/json"}, json.dumps(body).encode()


def error_answer(error: SchedulerApiError) -> tuple[int, dict[str, str], bytes]:
    """An error as the service writes it: the status of the error's shape (400 for the
    protocol's own, 403 for the authentication layer's), ``x-amzn-ErrorType`` naming it (botocore
    reads the code there), and its ``Message``."""
    status = {"UnknownOperationException": 404, "SerializationException": 400}.get(error.code, 400)
    if error.code in (
        "UnrecognizedClientException",
        "InvalidSignatureException",
        "MissingAuthenticationTokenException",
        "AccessDeniedException",
    ):
        status = 403
    else:
        with contextlib.suppress(Exception):  # not a shape of the model: the protocol's own status above
            status = service_model().shape_for(error.code).metadata["error"]["httpStatusCode"]
    headers = {"Content-Type": "application/json", "x-amzn-ErrorType": error.code}
    return status, headers, json.dumps({"Message": error.message}).encode()
