"""Secrets a task's targets carry: stored and sent, never shown back.

An HTTP target's header whose name says it holds a credential (``Authorization``, ``Cookie``,
``X-Api-Key``, or any name with ``token``, ``secret``, ``key``, ``password``, ``auth`` or
``credential`` in it, in any case) is answered as :data:`REDACTED` wherever the API shows the
target (a task, a batch answer, a dead letter), including a job's HTTP processor. A ``PATCH``
that sends :data:`REDACTED` back for such a header keeps the value *that target* stored (matched
by URL, else origin, never by position), so reading a task and sending it back does not wipe its
secrets; a target moved to another origin must send them again (:func:`kept`). (A URL carrying
``user:password@`` is refused at registration: credentials go in a header.)
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from shared.domain.errors import ValidationFailed
from shared.domain.limits import origin_of
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


def kept(new: Target, before: Sequence[Target], field: str) -> Target:
    """``new`` (from a PATCH) with each secret header sent as :data:`REDACTED` given the value the
    same target held ``before`` (the task's targets as stored). The same target is the one with
    the same URL, else the only one at the same origin (scheme, host, port): matched by identity,
    never by position, so targets sent back in another order keep their own secrets. A target
    moved to another origin must send its secrets again: a write-only secret never follows a URL
    its writer did not give it. A job target's HTTP processor is matched the same way. ``field``
    names the target (``target``, ``targets[1]``, ``alert.target``)."""
    if isinstance(new, HttpTarget):
        olds = [(old.url, old.headers) for old in before if isinstance(old, HttpTarget)]
        return replace(new, headers=_kept_headers(new.url, new.headers, olds, f"{field}.http.headers"))
    if isinstance(new, JobTarget):
        job = json.loads(new.job)
        http = _processor_http(job)
        if http is None or not isinstance(http.get("url"), str):
            return new
        olds = [
            (old_http["url"], old_http["headers"])
            for old in before
            if isinstance(old, JobTarget)
            and (old_http := _processor_http(json.loads(old.job))) is not None
            and isinstance(old_http.get("url"), str)
        ]
        http["headers"] = _kept_headers(http["url"], http["headers"], olds, f"{field}.job.processor.http.headers")
        return JobTarget(json.dumps(job, separators=(",", ":"), ensure_ascii=False, sort_keys=True))
    return new


def _processor_http(job: Any) -> dict[str, Any] | None:
    """A job body's HTTP processor when it has headers (a dict), else None."""
    processor = job.get("processor") if isinstance(job, dict) else None
    http = processor.get("http") if isinstance(processor, dict) else None
    return http if isinstance(http, dict) and isinstance(http.get("headers"), dict) else None


def _kept_headers(
    url: str, headers: Mapping[str, str], olds: Sequence[tuple[str, Mapping[str, str]]], field: str
) -> dict[str, str]:
    """``headers`` with each :data:`REDACTED` secret given its stored value (see :func:`kept`)."""
    sent_back = [name for name, value in headers.items() if value == REDACTED and is_secret_header(name)]
    if not sent_back:
        return dict(headers)
    origin = origin_of(url)
    same = [old for old_url, old in olds if old_url == url] or [
        old for old_url, old in olds if origin is not None and origin_of(old_url) == origin
    ]
    moved = not same and bool(olds)
    result = dict(headers)
    for name in sent_back:
        values = {value for old in same for key, value in old.items() if key.lower() == name.lower()}
        if len(values) == 1:
            result[name] = values.pop()
            continue
        if moved:
            why = f"this target's origin ({origin}) is not one a stored value was given for: send the value itself"
        elif values:
            why = "several targets at this origin hold different values: send the value itself"
        else:
            why = f"{REDACTED} stands for a value this target does not hold: send the value itself"
        raise ValidationFailed.on(f"{field}.{name}", why)
    return result
