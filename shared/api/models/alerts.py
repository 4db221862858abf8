"""Where a task's alerts go (:mod:`shared.domain.alerts`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, Tag

from shared.api.models.calls import EventBridgeTarget, HttpTarget, LambdaTarget, SnsTarget, SqsTarget
from shared.api.models.fields import FailureCount
from shared.api.models.targets import target_to_domain
from shared.api.types import Model, is_none, one_of, tag
from shared.domain import tasks as t

AlertTargetIn = Annotated[
    Annotated[HttpTarget, Tag(tag("http"))]
    | Annotated[LambdaTarget, Tag(tag("lambda"))]
    | Annotated[SqsTarget, Tag(tag("sqs"))]
    | Annotated[SnsTarget, Tag(tag("sns"))]
    | Annotated[EventBridgeTarget, Tag(tag("eventbridge"))],
    one_of(("http", "lambda", "sqs", "sns", "eventbridge"), "the alert target's kind: a job receives no alert"),
]
"""A task's target but a job: exactly one of ``http``, ``lambda``, ``sqs``, ``sns``, ``eventbridge``."""


class AlertIn(Model):
    """Where a task's alerts go: ``{"type", "task_id", "run_id", "reason", "at"}`` to ``target``
    when a run of the task is dead-lettered (``sundial.run.dead_lettered``), and with
    ``after_consecutive_failures``, once when that many occurrences in a row have failed
    (``sundial.task.failing``)."""

    target: AlertTargetIn = Field(
        description="An http, lambda, sqs, sns or eventbridge target (an alert is a message, not work to start), "
        "signed and refused as a task's target is."
    )
    after_consecutive_failures: FailureCount | None = Field(
        None,
        exclude_if=is_none,
        description=f"Alert once when this many occurrences in a row have failed (1 to {t.MAX_FAILURE_COUNT}).",
    )

    def to_domain(self) -> t.Alert:
        """The alert as sent: a ``[redacted]`` header is still the placeholder (a new task refuses
        it, a change gives it the stored value: :func:`~shared.domain.secrets.kept`)."""
        return t.Alert(target_to_domain(self.target), self.after_consecutive_failures)
