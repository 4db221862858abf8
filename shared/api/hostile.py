"""Request bodies built to break the parsers behind the API, refused before anything parses them.

Valid JSON can still be hostile: arrays nested thousands deep exhaust the recursion of every
parser and serializer after this one, an integer literal of thousands of digits is more than
CPython converts (and costs quadratic time on the way), ``NaN``, ``Infinity`` and ``1e400`` are no
JSON numbers and would be stored as ``null``, and a lone UTF-16 surrogate (``"\\udfff"``) is a
string no UTF-8 encoder accepts: DynamoDB refuses the write and the client gets a 503 for its own
mistake. :func:`check_json_body` names the first such problem as a validation error; ordinary
bodies cost it one scan and one parse.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from shared.api.views.errors import error_view
from shared.domain.errors import ValidationFailed

MAX_DEPTH = 64
"""Arrays and objects nested in one another; far more than any task needs, far less than the
recursion limit of the parsers and serializers a body goes through."""

MAX_INTEGER_DIGITS = 100
"""Digits in an integer literal: above any 64-bit or decimal value, below CPython's 4300."""

BODY = "body"
_SPECIAL = re.compile(r'[\[\]{}"\\]')
_SURROGATE = re.compile("[\ud800-\udfff]")


def _too_deep(text: str) -> bool:
    """Whether brackets outside strings nest deeper than :data:`MAX_DEPTH` (one pass over the
    characters that matter; what is not JSON is left to the parser to name)."""
    depth = 0
    in_string = False
    escaped_until = -1
    for special in _SPECIAL.finditer(text):
        at, char = special.start(), special.group()
        if at < escaped_until:
            continue
        if in_string:
            if char == "\\":
                escaped_until = at + 2
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif char in "]}":
            depth -= 1
    return False


def _integer(literal: str) -> int:
    if len(literal.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise ValidationFailed.on(BODY, f"has an integer of more than {MAX_INTEGER_DIGITS} digits")
    return int(literal)


def _float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise ValidationFailed.on(BODY, f"has a number out of range ({literal[:20]})")
    return value


def _constant(name: str) -> float:
    raise ValidationFailed.on(BODY, f"has {name}, which is not a JSON number")


def _field(path: tuple[str | int, ...]) -> str:
    """A location as the API names fields: ``targets[0].http.url``."""
    name = ""
    for part in path:
        name += f"[{part}]" if isinstance(part, int) else ("." if name else "") + part
    return name or BODY


def _surrogate_in(value: Any) -> tuple[str | int, ...] | None:
    """Where the first string (or object key) holding a lone surrogate is, if one does."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return path
        elif isinstance(item, dict):
            for key, child in item.items():
                if _SURROGATE.search(key):
                    return (*path, key)
                stack.append(((*path, key), child))
        elif isinstance(item, list):
            stack.extend(((*path, index), child) for index, child in enumerate(item))
    return None


def check_json_body(text: str | None) -> object:
    """The JSON value ``text`` holds; :class:`ValidationFailed` naming the problem when it is not
    JSON or is hostile JSON. No body (``None`` or empty, answered ``None``) is not hostile: the
    route says whether it needs one."""
    if not text:
        return None
    if _too_deep(text):
        raise ValidationFailed.on(BODY, f"nests arrays and objects more than {MAX_DEPTH} levels deep")
    try:
        value = json.loads(text, parse_int=_integer, parse_float=_float, parse_constant=_constant)
    except ValueError as error:  # JSONDecodeError, and what the hooks above do not catch
        raise ValidationFailed.on(BODY, f"is not valid JSON ({error})") from None
    path = _surrogate_in(value)
    if path is not None:
        raise ValidationFailed.on(_field(path), "has a lone UTF-16 surrogate, which is no Unicode character")
    return value


def refusal(body: str | None) -> dict[str, Any] | None:
    """The API Gateway proxy answer (400, the API's error format) to a hostile body, or to one
    that is not a JSON object; None when the body may go on to its route."""
    try:
        value = check_json_body(body)
        if body and not isinstance(value, dict):
            # every request body is an object; the routes' validation would otherwise read an
            # array whose first member is an object as that object ([{}] rotated a secret)
            raise ValidationFailed.on(BODY, "must be a JSON object")
    except ValidationFailed as error:
        return {
            "statusCode": error.status,
            "headers": {"Content-Type": "application/json"},
            "body": json.dumps(error_view(error).model_dump(mode="json", by_alias=True)),
        }
    return None
