"""What every target receives: the occurrence's identity and the task's payload.

An HTTP target gets :meth:`Envelope.body` as the request body and :meth:`Envelope.headers`;
queues, topics and buses get the same JSON as their message (docs/api.md, "What a target
receives").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, Protocol

from shared.domain.signing import Signer
from shared.domain.times import iso

CONTENT_TYPE = "application/json"
IDEMPOTENCY_KEY = "Idempotency-Key"
TASK_ID_HEADER = "Sundial-Task-Id"
ATTEMPT_HEADER = "Sundial-Attempt"
ALERT_HEADER = "Sundial-Alert"


class Message(Protocol):
    """What the HTTP client sends: a task's :class:`Envelope`, or a job's phase call."""

    def body(self) -> bytes: ...

    def headers(self) -> dict[str, str]: ...

    @property
    def signer(self) -> Signer | None:
        """Signs the call (Standard Webhooks) with its tenant's active secrets; None: unsigned.
        The ``webhook-id`` is the message's ``Idempotency-Key``."""


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal):  # numbers read back from DynamoDB
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, datetime):
        return iso(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


@dataclass(frozen=True)
class Envelope:
    task_id: str
    run_id: str
    """The occurrence's id: the same on every attempt, so receivers can drop repeats."""
    scheduled_for: datetime
    fired_at: datetime
    attempt: int
    """1 for the first attempt of the occurrence."""
    payload: Any = None
    signer: Signer | None = field(default=None, compare=False, repr=False)
    """The tenant's signer: HTTP targets get the call signed (shared/domain/signing.py)."""
    tenant: str = field(default="", compare=False)
    """The task's tenant: a ``job`` target starts the job as that tenant's (never sent)."""
    parent: dict[str, Any] | None = None
    """A chained run's parent occurrence (shared/domain/chains.py, ``ChainLink.body``): sent as
    ``parent``; absent from other runs' bodies."""
    workflow: dict[str, Any] | None = None
    """A workflow node's run: its workflow run and its parents' outcomes
    (shared/domain/workflows.py, ``NodeLink.body``): sent as ``workflow``; absent elsewhere."""
    schedule_arn: str | None = None
    """An occurrence of a task made through the EventBridge Scheduler API: its schedule's ARN,
    from the task's ``eventbridge`` (the one copy). Its Lambda, SQS, SNS and event-bus targets
    get the schedule's ``Input`` as that service sends it, context attributes replaced
    (shared/domain/scheduler_api.py, :func:`delivered_input`), not this envelope
    (shared/delivery/aws.py); never sent as a member."""

    def to_dict(self) -> dict[str, Any]:
        body = {
            "task_id": self.task_id,
            "run_id": self.run_id,
            "scheduled_for": iso(self.scheduled_for),
            "fired_at": iso(self.fired_at),
            "attempt": self.attempt,
            "payload": self.payload,
        }
        if self.parent is not None:
            body["parent"] = self.parent
        if self.workflow is not None:
            body["workflow"] = self.workflow
        return body

    def text(self) -> str:
        """The envelope as JSON text (the message of SQS, SNS and EventBridge targets)."""
        return json.dumps(
            self.to_dict(), separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=_json_default
        )

    def body(self) -> bytes:
        """The envelope as a UTF-8 JSON request body."""
        return self.text().encode("utf-8")

    def headers(self) -> dict[str, str]:
        """Headers an HTTP target receives; they win over the task's own headers."""
        return {
            "Content-Type": CONTENT_TYPE,
            IDEMPOTENCY_KEY: self.run_id,
            TASK_ID_HEADER: self.task_id,
            ATTEMPT_HEADER: str(self.attempt),
        }


@dataclass(frozen=True)
class AlertEnvelope(Envelope):
    """A task's alert (shared/domain/alerts.py): its target receives ``content`` as it is, not
    an occurrence's envelope, signed as a callback is. ``run_id`` is the alert's own key (the
    ``Idempotency-Key`` and ``webhook-id``: the same on every try of one alert), ``attempt``
    the try."""

    content: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.content)

    def headers(self) -> dict[str, str]:
        return {
            "Content-Type": CONTENT_TYPE,
            IDEMPOTENCY_KEY: self.run_id,
            TASK_ID_HEADER: self.task_id,
            ALERT_HEADER: str(self.content.get("type", "")),
        }
