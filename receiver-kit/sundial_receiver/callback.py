"""A Sundial callback as a typed object: what every target receives (the body of an HTTP call,
the event of a ``lambda`` target, the message of an ``sqs`` target)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


class InvalidCallback(ValueError):
    """A body that is not a Sundial callback (not JSON, or a required member missing or of the
    wrong type): answer it 400."""


def _text(data: dict[str, Any], name: str) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value:
        raise InvalidCallback(f"{name} is required, a string")
    return value


def _time(data: dict[str, Any], name: str) -> datetime:
    text = _text(data, name)
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise InvalidCallback(f"{name} is not an ISO 8601 time: {text!r}") from None


@dataclass(frozen=True)
class Parent:
    """The run a chained run follows: its task, run, how it ended and what it answered."""

    task_id: str
    run_id: str
    status: str
    """``succeeded`` (an ``on_success`` child), ``failed`` or ``dead_lettered`` (``on_failure``)."""
    response: Any = None
    error: str | None = None
    """Why the parent failed (an ``on_failure`` child); None after a success."""

    @classmethod
    def from_dict(cls, data: Any) -> Parent:
        if not isinstance(data, dict):
            raise InvalidCallback("parent is an object")
        status, error = data.get("status"), data.get("error")
        return cls(
            task_id=_text(data, "task_id"),
            run_id=_text(data, "run_id"),
            status=status if isinstance(status, str) else "",
            response=data.get("response"),
            error=error if isinstance(error, str) else None,
        )


@dataclass(frozen=True)
class Callback:
    """One occurrence of a task. ``run_id`` is the same on every attempt: de-duplicate on it."""

    task_id: str
    run_id: str
    scheduled_for: datetime
    fired_at: datetime
    attempt: int
    payload: Any = None
    parent: Parent | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    """Members this kit does not know yet (a newer Sundial's): kept, never refused."""

    KNOWN = frozenset({"task_id", "run_id", "scheduled_for", "fired_at", "attempt", "payload", "parent"})

    @classmethod
    def from_dict(cls, data: Any) -> Callback:
        if not isinstance(data, dict):
            raise InvalidCallback("a callback is a JSON object")
        attempt = data.get("attempt")
        if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1:
            raise InvalidCallback("attempt is required, an integer from 1")
        parent = data.get("parent")
        return cls(
            task_id=_text(data, "task_id"),
            run_id=_text(data, "run_id"),
            scheduled_for=_time(data, "scheduled_for"),
            fired_at=_time(data, "fired_at"),
            attempt=attempt,
            payload=data.get("payload"),
            parent=None if parent is None else Parent.from_dict(parent),
            extra={k: v for k, v in data.items() if k not in cls.KNOWN},
        )

    @classmethod
    def parse(cls, body: bytes | str) -> Callback:
        """The callback in a body (bytes or text of JSON)."""
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise InvalidCallback(f"the body is not JSON: {exc}") from None
        return cls.from_dict(data)
