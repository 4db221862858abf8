"""Between the EventBridge Scheduler API's wire and Sundial's tasks: a schedule's request as the
task it is (:func:`spec_of`, refusing what Sundial cannot do with the service's own
``ValidationException``), the request as kept and as ``GetSchedule`` answers it, the ARNs of
schedules and groups (:class:`Place`), and Sundial's errors as the service's
(:func:`wire_error`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from shared.domain import arns
from shared.domain import scheduler_api as dialect
from shared.domain.errors import (
    ConcurrentUpdate,
    InvalidTransition,
    QuotaExceeded,
    RateLimited,
    SchedulerApiError,
    StorageUnavailable,
    SundialError,
    TaskNotFound,
    ValidationFailed,
    scheduler_validation,
)
from shared.domain.own import OwnResources
from shared.domain.retry import RetryPolicy
from shared.domain.schedules import EVENTBRIDGE, At, Cron, Every, Flexible, Schedule
from shared.domain.tasks import (
    EventBridgeSchedule,
    EventBridgeTarget,
    LambdaTarget,
    SnsTarget,
    SqsTarget,
    Target,
    TaskSpec,
)
from shared.domain.wallclock import zone_of
from shared.services.scheduler_api.requests import ScheduleRequest, ScheduleTarget

DEFAULT_RETRIES = 185
"""``RetryPolicy.MaximumRetryAttempts`` when not given, as the service's."""
DEFAULT_EVENT_AGE_S = 86_400
"""``RetryPolicy.MaximumEventAgeInSeconds`` when not given, as the service's."""
TASK_NAME_PREFIX = "eventbridge:"


@dataclass(frozen=True)
class Place:
    """Where the schedules live, for their ARNs."""

    region: str
    account: str

    def schedule_arn(self, group: str, name: str) -> str:
        return arns.schedule_arn(self.region, self.account, group, name)

    def group_arn(self, group: str) -> str:
        return arns.schedule_group_arn(self.region, self.account, group)

    def group_of_arn(self, arn: str) -> str:
        prefix = self.group_arn("")
        if not arn.startswith(prefix) or "/" in arn[len(prefix) :]:
            raise SchedulerApiError("ResourceNotFoundException", f"Resource {arn} does not exist.")
        return arn[len(prefix) :]


def wire_error(exc: SundialError) -> SchedulerApiError:
    """A Sundial error (the task service's) as the service's error."""
    if isinstance(exc, QuotaExceeded):
        return SchedulerApiError("ServiceQuotaExceededException", exc.message)
    if isinstance(exc, RateLimited):
        return SchedulerApiError("ThrottlingException", exc.message)
    if isinstance(exc, TaskNotFound):
        return SchedulerApiError("ResourceNotFoundException", exc.message)
    if isinstance(exc, ConcurrentUpdate):
        return SchedulerApiError("ConflictException", exc.message)
    if isinstance(exc, ValidationFailed):
        return scheduler_validation(exc.details[0].message if exc.details else exc.message)
    if isinstance(exc, StorageUnavailable):
        return SchedulerApiError("InternalServerException", "Unexpected error, please retry.")
    by_status = {404: "ResourceNotFoundException", 409: "ConflictException", 429: "ThrottlingException"}
    if exc.status in by_status:
        return SchedulerApiError(by_status[exc.status], exc.message)
    if 400 <= exc.status < 500:  # InvalidTransition (a schedule already ended), and the like
        return SchedulerApiError(
            "ConflictException" if isinstance(exc, InvalidTransition) else "ValidationException", exc.message
        )
    return SchedulerApiError("InternalServerException", exc.message)


# --- a request as a task -----------------------------------------------------------------------


def spec_of(request: ScheduleRequest, now: datetime, schedule_arn: str, own: OwnResources | None = None) -> TaskSpec:
    """The task a schedule is: its ``Input`` kept as the text given (the payload), to be sent as
    is; retried as its ``RetryPolicy`` says (attempts and event age), Sundial's backoff between.
    ``own``: the deployment's own resources, which neither its target nor its dead-letter queue
    may be. Refusals come in the order the checks run: the target's own resource, the expression
    and its dates, the window, the target, the dead-letter queue."""
    own = own or OwnResources()
    target = request.target
    _not_ours(target.arn, "Target.Arn", own)
    retries = DEFAULT_RETRIES if target.max_retry_attempts is None else target.max_retry_attempts
    age = DEFAULT_EVENT_AGE_S if target.max_event_age_s is None else target.max_event_age_s
    return TaskSpec(
        schedule=_flexible(schedule_of(request, now), request, schedule_arn),
        targets=(target_of(target, schedule_arn),),
        name=f"{TASK_NAME_PREFIX}{request.group}/{request.name}",
        payload=target.input,
        retry=RetryPolicy(max_attempts=retries + 1, max_age_seconds=age),
        eventbridge=EventBridgeSchedule(
            schedule_arn,
            _dead_letter_arn(target, schedule_arn, own),
            request.action_after_completion == "DELETE",
        ),
    )


def schedule_of(request: ScheduleRequest, now: datetime) -> Schedule:
    """The task's schedule for the service's expression, time zone, start and end."""
    text = request.expression
    zone_name = request.timezone or "UTC"
    try:
        expression = dialect.parse(text)
    except ValidationFailed as exc:
        raise scheduler_validation(dialect.invalid_expression(text, exc.details[0].message)) from exc
    try:
        zone = zone_of(zone_name, "ScheduleExpressionTimezone")
    except ValidationFailed as exc:
        raise scheduler_validation(exc.details[0].message if exc.details else exc.message) from exc
    start, end = request.start, request.end
    if start is not None and end is not None and end <= start:
        raise scheduler_validation("The EndDate must be after the StartDate.")
    if isinstance(expression, dialect.AtExpression):
        return At(expression.wall.replace(tzinfo=zone).astimezone(UTC))
    if isinstance(expression, dialect.RateExpression):
        return Every(float(expression.seconds), start or now, end)
    body = expression.text[len("cron(") : -1]
    return Cron(body, zone_name, start, end, EVENTBRIDGE)


def target_of(target: ScheduleTarget, schedule_arn: str) -> Target:
    """The Sundial target for the service's ``Target.Arn``; one Sundial cannot call is refused.
    What it is sent (the schedule's ``Input`` as the service sends it) the task's ``eventbridge``
    says (shared/delivery/aws.py)."""
    arn = target.arn
    parts = arn.split(":", 5)
    if len(parts) == 6 and parts[0] == "arn":
        service, resource = parts[2], parts[5]
        _at_home(arn, "Target.Arn", schedule_arn)
        if service in ("lambda", "events"):
            _json_input(target.input)
        if service == "lambda" and resource.startswith("function:"):
            return LambdaTarget(arn)
        if service == "sqs" and "/" not in resource:
            fifo = resource.endswith(".fifo")
            if fifo and not target.message_group_id:
                raise scheduler_validation("Target.SqsParameters.MessageGroupId is required for a FIFO queue.")
            return SqsTarget(arns.queue_url(arn), target.message_group_id if fifo else None)
        if service == "sns":
            return SnsTarget(arn)
        if service == "events" and resource.startswith("event-bus/"):
            if target.event_bus is None:
                raise scheduler_validation(
                    "Target.EventBridgeParameters is required for an EventBridge event bus target."
                )
            return EventBridgeTarget(arn, target.event_bus.source, target.event_bus.detail_type)
    raise scheduler_validation(
        f"Target.Arn {arn!r}: Sundial calls Lambda functions, SQS queues, SNS topics and EventBridge event buses; "
        "universal targets and other services are not supported"
    )


def _flexible(schedule: Schedule, request: ScheduleRequest, schedule_arn: str) -> Schedule:
    """The schedule with its ``FlexibleTimeWindow``: each occurrence at a moment drawn in the
    window, from a hash of the schedule's ARN and the occurrence."""
    window = request.window
    if window is None or window.mode != "FLEXIBLE":
        if window is not None and window.max_window_minutes is not None:
            raise scheduler_validation("FlexibleTimeWindow.MaximumWindowInMinutes is only valid in FLEXIBLE mode.")
        return schedule
    if window.max_window_minutes is None:
        raise scheduler_validation("FlexibleTimeWindow.MaximumWindowInMinutes is required in FLEXIBLE mode.")
    return Flexible(schedule, int(window.max_window_minutes) * 60, schedule_arn)  # type: ignore[arg-type]


def _json_input(text: str | None) -> None:
    """A Lambda or EventBridge target's ``Input`` must be well-formed JSON, as the service requires
    (the API reference's ``Target.Input``)."""
    if text is None:
        return
    try:
        json.loads(text)
    except ValueError as exc:
        raise scheduler_validation(
            "Target.Input must be well-formed JSON for a Lambda or EventBridge event bus target."
        ) from exc


def _at_home(arn: str, member: str, schedule_arn: str) -> None:
    """Sundial's trigger may call what is in its own account and Region only (its role's policy,
    infra/targets.py): a target or queue elsewhere is refused, not left to fail at every fire."""
    region, account = schedule_arn.split(":")[3:5]
    parts = arn.split(":")
    if len(parts) < 6 or (parts[3], parts[4]) != (region, account):
        raise scheduler_validation(
            f"{member} {arn!r}: Sundial calls resources in its own account and Region ({account}, {region}) only."
        )


def _not_ours(arn: str, member: str, own: OwnResources) -> None:
    """A target or dead-letter queue that is one of Sundial's own resources (a delay queue, the
    dead-letter queue, a function of the deployment: shared/domain/own.py) is refused, naming
    the member, as the native API refuses such a target: any tenant could write into it."""
    why = own.arn_refusal(arn)
    if why is not None:
        raise scheduler_validation(f"{member} {arn!r} {why}.")


def _dead_letter_arn(target: ScheduleTarget, schedule_arn: str, own: OwnResources) -> str | None:
    arn = target.dead_letter_arn
    if arn is None:
        return None
    _at_home(arn, "Target.DeadLetterConfig.Arn", schedule_arn)
    _not_ours(arn, "Target.DeadLetterConfig.Arn", own)
    if arn.endswith(".fifo"):
        raise scheduler_validation("Target.DeadLetterConfig.Arn: a FIFO queue cannot be a dead-letter queue.")
    return arn


# --- a request as kept and answered ------------------------------------------------------------


def kept(request: ScheduleRequest) -> dict[str, Any]:
    """What ``GetSchedule`` answers of a schedule, as stored (timestamps in epoch seconds): the
    members given, ``State``, ``ActionAfterCompletion`` and the time zone by their defaults when
    not, ``Target`` as it was sent."""
    members: dict[str, Any] = {
        "ScheduleExpression": request.expression,
        "ScheduleExpressionTimezone": request.timezone,
        "StartDate": request.start.timestamp() if request.start is not None else None,
        "EndDate": request.end.timestamp() if request.end is not None else None,
        "Description": request.description,
        "State": request.state,
        "KmsKeyArn": request.kms_key_arn,
        "Target": dict(request.target.given),
        "FlexibleTimeWindow": request.window.to_wire() if request.window is not None else None,
        "ActionAfterCompletion": request.action_after_completion,
    }
    stored = {k: v for k, v in members.items() if v is not None}
    stored.setdefault("State", "ENABLED")
    stored.setdefault("ActionAfterCompletion", "NONE")
    stored.setdefault("ScheduleExpressionTimezone", "UTC")
    return stored


def answered(stored: Mapping[str, Any]) -> dict[str, Any]:
    """A stored request as ``GetSchedule`` answers it: with the members AWS answers when the
    request left them out (``State``, ``ActionAfterCompletion`` and the time zone are stored
    so; ``Target.RetryPolicy`` is filled here, each of its two members by its default), as AWS
    answered a schedule created without them (tests/data/aws/scheduler-get-schedule-defaults.json,
    from LocalStack's AWS-validated recordings). What the request did not give and AWS does not
    answer (``Description``, ``StartDate``, ``Target.Input``, ``DeadLetterConfig``...) stays out.
    Timestamps are moments again."""
    view = dict(stored)
    target = dict(view["Target"])
    policy = target.get("RetryPolicy") or {}
    target["RetryPolicy"] = {
        "MaximumEventAgeInSeconds": policy.get("MaximumEventAgeInSeconds", DEFAULT_EVENT_AGE_S),
        "MaximumRetryAttempts": policy.get("MaximumRetryAttempts", DEFAULT_RETRIES),
    }
    view["Target"] = target
    for key in ("StartDate", "EndDate"):
        if view.get(key) is not None:
            view[key] = datetime.fromtimestamp(view[key], UTC)
    return view
