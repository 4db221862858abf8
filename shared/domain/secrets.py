"""Secrets a task's targets carry: stored and sent, never shown back.

An HTTP target's header whose name says it holds a credential (``Authorization``, ``Cookie``,
``X-Api-Key``, or any name with ``token``, ``secret``, ``key``, ``password``, ``auth`` or
``credential`` in it, in any case) is answered as :data:`REDACTED` wherever the API shows the
target (a task, a batch answer, a dead letter), including a job's HTTP processor. A ``PATCH``
that sends :data:`REDACTED` back for such a header keeps the value stored, so reading a task
and sending it back does not wipe its secrets. (A URL carrying ``user:password@`` is refused at
registration: credentials go in a header.)
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace

from shared.domain.errors import ValidationFailed
from shared.domain.tasks import HttpTarget, JobTarget, Target

REDACTED = "[redacted]"
_SECRET_NAME = re.compile(r"token|secret|key|password|auth|credential|cookie", re.IGNORECASE)


def is_secret_header(name: str) -> bool:
    return _SECRET_NAME.search(name) is not None


def _redact(headers: Mapping[str, str]) -> dict[str, str]:
    return {name: REDACTED if is_secret_header(name) else value for name, value in headers.items()}


def redacted(target: Target) -> Target:
    """The target as the API shows it: its secret header values replaced by :data:`REDACTED`."""
    if isinstance(target, HttpTarget):
        return replace(target, headers=_redact(target.headers))
    if isinstance(target, JobTarget):
        job = json.loads(target.job)
        http = (job.get("processor") or {}).get("http")
        if isinstance(http, dict) and isinstance(http.get("headers"), dict):
            http["headers"] = _redact(http["headers"])
        return JobTarget(json.dumps(job, separators=(",", ":"), ensure_ascii=False, sort_keys=True))
    return target


def kept(new: Target, old: Target | None, field: str) -> Target:
    """``new`` (from a PATCH) with each secret header sent as :data:`REDACTED` given the value
    ``old`` (the target at the same place before) holds for it; ``field`` names the target."""
    if not isinstance(new, HttpTarget):
        return new
    stored = {name.lower(): value for name, value in old.headers.items()} if isinstance(old, HttpTarget) else {}
    headers = dict(new.headers)
    for name, value in new.headers.items():
        if value != REDACTED or not is_secret_header(name):
            continue
        if name.lower() not in stored:
            raise ValidationFailed.on(
                f"{field}.http.headers.{name}",
                f"{REDACTED} stands for a value this target does not hold: send the value itself",
            )
        headers[name] = stored[name.lower()]
    return replace(new, headers=headers)
