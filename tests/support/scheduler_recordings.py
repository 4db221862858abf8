"""AWS's own answers to EventBridge Scheduler API requests, as test data: ``tests/data/aws/scheduler-*.json``,
each one answer as LocalStack's AWS-validated snapshot files recorded it (its ``"_source"`` names
the repository, commit, snapshot file, test id, the dates it was recorded and validated, where
in the recorded content it sits, and the request the recorded test sent). The rest of the file
is the answer as botocore parsed it, untouched.

Values that change from run to run are the snapshot library's placeholders: ``"<region>"``,
``"<physical_resource_id:1>"`` inside a text, ``"datetime"`` for a timestamp, and the account
``111111111111`` it writes for every account. :func:`differences` reads them as "any value
here" (a placeholder in a text, any text; ``"datetime"``, any :class:`~datetime.datetime`).
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from tests.support.suites import TESTS_ROOT

DATA = TESTS_ROOT / "data" / "aws"
ACCOUNT = "111111111111"
"""The account the snapshot library writes in place of the one recorded."""
_PLACEHOLDER = re.compile(r"<[^<>]+>")
IGNORED = frozenset({"ResponseMetadata"})
"""Members of a recorded answer that are botocore's, not the service's."""


def recording(name: str) -> dict[str, Any]:
    """The recorded answer ``tests/data/aws/<name>.json``, its ``"_source"`` included."""
    loaded: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text())
    return loaded


def recordings(prefix: str) -> list[dict[str, Any]]:
    """Every recording whose file name starts with ``prefix``, in their names' order."""
    return [recording(path.stem) for path in sorted(DATA.glob(f"{prefix}*.json"))]


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
        for key in sorted((set(recorded) | set(actual)) - IGNORED - {"_source"}):
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
