"""moto serializes every JSON-protocol answer (DynamoDB's, among others) by walking the operation's
output shape member by member, asking an attribute picker to try up to six aliases of each
member's name on the value (``moto.core.serialize``). For DynamoDB's item operations the value is
already a plain dict keyed by the members' own names, and most of the walk is the picker
rediscovering that. It was about a fifth of the moto process's time per claim (an UpdateItem
returning its item), more than the update itself (`make bench ARGS="--ceiling"` under cProfile).

Wherever moto runs as a server for Sundial (local/moto_host/process.py) a JSON-protocol result is
first serialized by :func:`fast_body`, a walk of the same shape that reads each member by its own
name only, and that gives up (:class:`Unsupported`) wherever moto's walk could do anything else: a
value that is not a dict, a dict holding any key that is not one of its shape's members (where an
alias could have been picked), a member with a serialization name of its own, a ``None`` outside a
structure's members, timestamps, response transformers, pretty printing, errors and event
streams. Given up, moto's own serializer answers. Where it does not give up the body is the same,
byte for byte (tests/integration/test_moto_fidelity.py compares the two on every DynamoDB answer
Sundial's calls produce). An upstream fix (a fast path in ``JSONSerializer`` for plain dicts)
would be the better place."""

from __future__ import annotations

import functools
import json
from enum import Enum
from typing import Any


class Unsupported(Exception):
    """The value is not one :func:`fast_body` serializes exactly as moto would."""


def _named_differently(shape: Any) -> bool:
    return "name" in shape.serialization


def _value(value: Any, shape: Any, serializer: Any) -> Any:
    kind = shape.type_name
    if kind == "structure":
        return _structure(value, shape, serializer)
    if kind == "string":
        if isinstance(value, Enum):
            value = value.value
        return str(value) if value not in [None, {}, []] else value
    if kind == "list":
        return _list(value, shape, serializer)
    if kind == "map":
        return _map(value, shape, serializer)
    if kind in ("integer", "long"):
        return int(value)
    if kind in ("float", "double"):
        return float(value)
    if kind == "blob":
        return serializer._base64(value)
    if kind == "timestamp":
        raise Unsupported
    return value  # booleans and the other plain types: moto's default, the value itself


def _list(value: Any, shape: Any, serializer: Any) -> list[Any]:
    member = shape.member
    if not isinstance(value, list | tuple) or _named_differently(member):
        raise Unsupported
    out = []
    for item in value:
        if item is None:
            raise Unsupported
        out.append(_value(item, member, serializer))
    return out


def _map(value: Any, shape: Any, serializer: Any) -> dict[str, Any]:
    member = shape.value
    if not isinstance(value, dict) or _named_differently(member):
        raise Unsupported
    mapped = {}
    for key, item in value.items():
        if item is None:
            raise Unsupported
        mapped[key] = _value(item, member, serializer)
    return mapped


def _structure(value: Any, shape: Any, serializer: Any) -> dict[str, Any]:
    if shape.is_document_type or not isinstance(value, dict):
        raise Unsupported
    members = shape.members
    for key in value:
        if key not in members:
            raise Unsupported
    out: dict[str, Any] = {}
    for key, member in members.items():
        item = value.get(key)
        if item is None:
            continue
        if _named_differently(member):
            raise Unsupported
        out[key] = _value(item, member, serializer)
    return out


@functools.lru_cache(maxsize=512)
def _serializer(serializer_class: Any, operation_model: Any) -> Any:
    """One serializer per operation: only its stateless helpers are used (the content type,
    base64)."""
    from moto.core.serialize import XFormedAttributePicker

    return serializer_class(operation_model=operation_model, pretty_print=False, value_picker=XFormedAttributePicker())


def fast_body(result: Any, context: Any) -> tuple[int, dict[str, str], str]:
    """``ActionResult.execute_result``'s answer for a JSON-protocol result, or :class:`Unsupported`."""
    from moto import settings
    from moto.core.serialize import JSONSerializer

    operation = context.operation_model
    if (
        context.serializer_class is not JSONSerializer
        or settings.PRETTIFY_RESPONSES
        or isinstance(result, Exception)
        or operation.has_event_stream_output
        or getattr(context.response, "RESPONSE_KEY_PATH_TO_TRANSFORMER", None)
    ):
        raise Unsupported
    serializer = _serializer(context.serializer_class, operation)
    shape = operation.output_shape
    body = {} if shape is None else _structure(result, shape, serializer)
    status = operation.http.get("responseCode", serializer.DEFAULT_RESPONSE_CODE)
    headers = {"Content-Type": serializer._get_protocol_specific_content_type()}
    return status, headers, json.dumps(body)


def make_json_serialization_direct() -> None:
    from moto.core.responses import ActionResult

    original = ActionResult.execute_result
    if getattr(original, "_sundial_direct", False):
        return

    def execute_result(self: Any, context: Any) -> Any:
        try:
            return fast_body(self.result, context)
        except Unsupported:
            return original(self, context)

    functools.update_wrapper(execute_result, original)
    execute_result._sundial_direct = True  # type: ignore[attr-defined]
    ActionResult.execute_result = execute_result  # type: ignore[method-assign]
