"""AWS's own recordings of the events and answers Sundial's code receives, kept under
tests/data/aws/ as test data: each file is ``{"_source": {...}, "recorded": ...}``, its source
naming where the recording comes from (for most, LocalStack's AWS-validated snapshot suite:
repository, commit, path, test id, recorded date), ``recorded`` the JSON as recorded (values that
change per run replaced by placeholders such as ``<uuid:1>``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent.parent / "data" / "aws"
PLACEHOLDER = re.compile(r"^<[^<>]+>$")


def recording(name: str) -> Any:
    """The recorded JSON of ``tests/data/aws/<name>.json``."""
    return json.loads((DATA / f"{name}.json").read_text())["recorded"]


def source(name: str) -> dict[str, Any]:
    source: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text())["_source"]
    return source


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def same_shape(actual: Any, recorded: Any, *, ignore: Iterable[str] = (), at: str = "$") -> list[str]:
    """Where ``actual`` differs in shape from ``recorded``: a member one has and the other lacks,
    or a value of another JSON type (a placeholder string stands for a value of any type but an
    object; null matches null only). Members named by their path in ``ignore``
    (``$.requestContext.authorizer``) are left out. Empty when the shapes agree. Arrays are compared
    element by element to the recorded first element's shape."""
    skipped = set(ignore)
    if at in skipped:
        return []
    if isinstance(recorded, str) and PLACEHOLDER.match(recorded) and not isinstance(actual, dict):
        return []
    if _kind(actual) != _kind(recorded):
        return [f"{at}: {_kind(actual)} where AWS records {_kind(recorded)} ({recorded!r:.60})"]
    if isinstance(recorded, dict):
        problems = [
            f"{at}.{k}: missing (AWS records it)" for k in recorded if k not in actual and f"{at}.{k}" not in skipped
        ]
        problems += [
            f"{at}.{k}: not in AWS's recording" for k in actual if k not in recorded and f"{at}.{k}" not in skipped
        ]
        for key in recorded.keys() & actual.keys():
            problems += same_shape(actual[key], recorded[key], ignore=skipped, at=f"{at}.{key}")
        return problems
    if isinstance(recorded, list) and recorded:
        return [p for item in actual for p in same_shape(item, recorded[0], ignore=skipped, at=f"{at}[]")]
    return []
