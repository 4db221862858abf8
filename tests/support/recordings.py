"""AWS's own recordings of the events Sundial's code receives, as test data.

``tests/data/aws/<name>.json`` holds one recorded event (or answer) each, copied as recorded from
LocalStack's AWS-validated snapshot files; its ``"_source"`` member names the repository, commit,
path, test id, recorded date and where in the snapshot it sits (tests/data/aws/README.md).

Two things about those snapshots that :func:`same_shape` allows for:

* **Placeholders.** The snapshot library replaces values that change from run to run (ids,
  ARNs, times) by text such as ``"<uuid:1>"``, ``"arn:<partition>:sqs:<region>:..."``,
  ``"timestamp"`` or ``"start-date"``. A placeholder is still a string, so its value's type
  is lost where the real value is a number (``startDate``): pass such a path in ``ignore`` and
  say, where the test asserts it, where the type comes from.
* **JSON text.** Before recording, the snapshot library parses every string value that starts
  with ``{`` into the object it holds (localstack-snapshot, ``SnapshotSession._transform``), so a
  recorded object may stand for a string of JSON (an SQS body, an execution's ``input``). A string
  of JSON in the actual event matches a recorded object; where the type matters the test asserts
  it from the AWS page that documents it.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent.parent / "data" / "aws"
SOURCE = "_source"


@cache
def _load(name: str) -> str:
    return (DATA / f"{name}.json").read_text()


def recording(name: str) -> dict[str, Any]:
    """The recording ``tests/data/aws/<name>.json`` as recorded (a fresh copy each call), without
    its ``_source``."""
    recorded = json.loads(_load(name))
    recorded.pop(SOURCE, None)
    return recorded


def names(prefix: str) -> list[str]:
    """The recordings whose names start with ``prefix``, in order."""
    return [path.stem for path in sorted(DATA.glob(f"{prefix}*.json"))]


def source(name: str) -> dict[str, Any]:
    """Where the recording ``name`` comes from (its ``_source``)."""
    return dict(json.loads(_load(name))[SOURCE])


def with_values(recorded: Any, values: Mapping[str, Any]) -> Any:
    """``recorded`` with every string equal to a key of ``values`` replaced by its value: a
    placeholder filled with a value of the type it stands for, so that a model can parse it."""
    if isinstance(recorded, dict):
        return {key: with_values(value, values) for key, value in recorded.items()}
    if isinstance(recorded, list):
        return [with_values(item, values) for item in recorded]
    if isinstance(recorded, str) and recorded in values:
        return values[recorded]
    return recorded


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _matcher(patterns: Iterable[str]) -> re.Pattern[str] | None:
    """One regular expression for the ``ignore`` paths: ``*`` is any one key, ``[*]`` any index."""
    alternatives = [
        re.escape(pattern).replace(r"\[\*\]", r"\[\d+\]").replace(r"\*", r"[^.\[\]]+") for pattern in patterns
    ]
    return re.compile("|".join(f"(?:{a})" for a in alternatives)) if alternatives else None


def same_shape(actual: Any, recorded: Any, *, ignore: Iterable[str] = ()) -> list[str]:
    """How ``actual``'s shape differs from ``recorded``'s: the same keys at every level, and values
    of the same JSON type (string, number, boolean, null, array, object), values themselves never
    compared. Each difference is one readable line naming its path (``Records[0].attributes``);
    the list is empty when the shapes agree.

    ``ignore``: paths whose values are not compared (their keys must still be there), written as
    the lines write them, ``*`` standing for any one key and ``[*]`` for any index. An array's
    items are compared with the recorded item at the same index, or its last one; an empty
    recorded array says nothing about its items."""
    differences: list[str] = []
    _compare(actual, recorded, "", _matcher(ignore), differences)
    return differences


def _parsed(actual: Any, recorded: Any) -> Any:
    """``actual`` as the snapshot library would have recorded it: a string of a JSON object
    where AWS's recording holds an object (module docstring)."""
    if isinstance(recorded, dict) and isinstance(actual, str) and actual.startswith("{"):
        with contextlib.suppress(json.JSONDecodeError):
            return json.loads(actual)
    return actual


def _compare(actual: Any, recorded: Any, path: str, ignored: re.Pattern[str] | None, out: list[str]) -> None:
    here = path or "(the whole)"
    if ignored is not None and path and ignored.fullmatch(path):
        return
    actual = _parsed(actual, recorded)
    if _kind(actual) != _kind(recorded):
        out.append(f"{here}: {_kind(actual)} where AWS recorded {_kind(recorded)}")
    elif isinstance(recorded, dict):
        out.extend(f"{here}: no {key!r}, which AWS recorded" for key in recorded if key not in actual)
        out.extend(f"{here}: {key!r}, which AWS did not record" for key in actual if key not in recorded)
        for key in recorded:
            if key in actual:
                _compare(actual[key], recorded[key], f"{path}.{key}" if path else key, ignored, out)
    elif isinstance(recorded, list) and recorded:
        for index, item in enumerate(actual):
            _compare(item, recorded[min(index, len(recorded) - 1)], f"{path}[{index}]", ignored, out)


# --- answers compared by value (placeholders match any value) ---------------------------------

ACCOUNT = "111111111111"
"""The account the snapshot library writes in place of the one recorded."""
_PLACEHOLDER = re.compile(r"<[^<>]+>")
IGNORED = frozenset({"ResponseMetadata", SOURCE})
"""Members of a recorded answer that are botocore's (or the recording's own), not the service's."""


def _matches(recorded: str, actual: str) -> bool:
    if not _PLACEHOLDER.search(recorded) and ACCOUNT not in recorded:
        return recorded == actual
    parts = [re.escape(part).replace(ACCOUNT, r"\d{12}") for part in _PLACEHOLDER.split(recorded)]
    return re.fullmatch(".+".join(parts), actual) is not None


def differences(recorded: Any, actual: Any, path: str = "") -> list[str]:
    """Where ``actual`` (an answer as botocore parsed it) differs from ``recorded``: a member one
    has and the other has not, a value that is not the recorded one (a placeholder matching any).
    Empty when they agree."""
    where = path or "the answer"
    if isinstance(recorded, dict):
        if not isinstance(actual, dict):
            return [f"{where}: {actual!r} is not an object"]
        found: list[str] = []
        for key in sorted((set(recorded) | set(actual)) - IGNORED):
            member = f"{path}.{key}" if path else key
            if key not in actual:
                found.append(f"{member}: missing (recorded {recorded[key]!r})")
            elif key not in recorded:
                found.append(f"{member}: not in the recorded answer ({actual[key]!r})")
            else:
                found.extend(differences(recorded[key], actual[key], member))
        return found
    if isinstance(recorded, list):
        if not isinstance(actual, list) or len(actual) != len(recorded):
            return [f"{where}: {actual!r} is not a list of {len(recorded)}"]
        return [
            d for i, (r, a) in enumerate(zip(recorded, actual, strict=True)) for d in differences(r, a, f"{path}[{i}]")
        ]
    if recorded in ("datetime", "timestamp"):
        return [] if isinstance(actual, datetime) else [f"{where}: {actual!r} is not a timestamp"]
    if isinstance(recorded, str) and isinstance(actual, str):
        return [] if _matches(recorded, actual) else [f"{where}: {actual!r}, recorded {recorded!r}"]
    return [] if recorded == actual else [f"{where}: {actual!r}, recorded {recorded!r}"]
