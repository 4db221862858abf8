"""EventBridge Scheduler's operations over Sundial's tasks (docs/eventbridge.md): a schedule is a
task of the tenant, registered, changed, paused and cancelled through the task service, and
its name (in its group) is an item that points at it. Errors are the service's, by the name of
their shape (:class:`~shared.domain.eventbridge.ServiceError`)."""

from __future__ import annotations

import binascii
import contextlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from shared.domain import eventbridge as eb
from shared.domain.errors import (
    ConcurrentUpdate,
    InvalidTransition,
    QuotaExceeded,
    RateLimited,
    StorageUnavailable,
    SundialError,
    TaskNotFound,
    ValidationFailed,
)
from shared.domain.eventbridge import ServiceError, service_validation
from shared.domain.firing import Staged
from shared.domain.own import OwnResources
from shared.domain.patches import TaskPatch
from shared.domain.retry import Exhausted, RetryPolicy
from shared.domain.schedules import EVENTBRIDGE, At, Cron, Every, Flexible, Schedule, scheduled_time
from shared.domain.tasks import (
    EventBridgeSchedule,
    EventBridgeTarget,
    LambdaTarget,
    SnsTarget,
    SqsTarget,
    Target,
    Task,
    TaskSpec,
    TaskStatus,
)
from shared.domain.times import from_ms, to_ms, truncate_ms
from shared.domain.wallclock import zone_of
from shared.observability import logger
from shared.services.ports.eventbridge import ScheduleNames
from shared.services.ports.pipeline import QueueSender
from shared.services.tasks import TaskService
from shared.store.eventbridge import DynamoSchedules, GroupRecord, NameRecord, Taken

DEFAULT_GROUP = "default"
DEFAULT_RETRIES = 185
"""``RetryPolicy.MaximumRetryAttempts`` when not given, as the service's."""
DEFAULT_EVENT_AGE_S = 86_400
"""``RetryPolicy.MaximumEventAgeInSeconds`` when not given, as the service's."""
MAX_PAGE = 100
TASK_NAME_PREFIX = "eventbridge:"
ABANDONED_MS = 60_000
"""A name taken this long ago whose task was never recorded is a creation that crashed in between
(the API function's timeout is 10 s): a new creation of the name may take it."""


@dataclass(frozen=True)
class Place:
    """Where the schedules live, for their ARNs."""

    region: str
    account: str

    def schedule_arn(self, group: str, name: str) -> str:
        return f"arn:aws:scheduler:{self.region}:{self.account}:schedule/{group}/{name}"

    def group_arn(self, group: str) -> str:
        return f"arn:aws:scheduler:{self.region}:{self.account}:schedule-group/{group}"

    def group_of_arn(self, arn: str) -> str:
        prefix = f"arn:aws:scheduler:{self.region}:{self.account}:schedule-group/"
        if not arn.startswith(prefix) or "/" in arn[len(prefix) :]:
            raise ServiceError("ResourceNotFoundException", f"Resource {arn} does not exist.")
        return arn[len(prefix) :]


def _ms(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


def _moment(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)


def _translated(exc: SundialError) -> ServiceError:
    if isinstance(exc, QuotaExceeded):
        return ServiceError("ServiceQuotaExceededException", exc.message)
    if isinstance(exc, RateLimited):
        return ServiceError("ThrottlingException", exc.message)
    if isinstance(exc, TaskNotFound):
        return ServiceError("ResourceNotFoundException", exc.message)
    if isinstance(exc, ConcurrentUpdate):
        return ServiceError("ConflictException", exc.message)
    if isinstance(exc, ValidationFailed):
        return service_validation(exc.details[0].message if exc.details else exc.message)
    if isinstance(exc, StorageUnavailable):
        return ServiceError("InternalServerException", "Unexpected error, please retry.")
    by_status = {404: "ResourceNotFoundException", 409: "ConflictException", 429: "ThrottlingException"}
    if exc.status in by_status:
        return ServiceError(by_status[exc.status], exc.message)
    if 400 <= exc.status < 500:  # InvalidTransition (a schedule already ended), and the like
        return ServiceError(
            "ConflictException" if isinstance(exc, InvalidTransition) else "ValidationException", exc.message
        )
    return ServiceError("InternalServerException", exc.message)


def schedule_of(params: Mapping[str, Any], now: datetime) -> Schedule:
    """The task's schedule for the service's expression, time zone, start and end."""
    text = params["ScheduleExpression"]
    zone_name = params.get("ScheduleExpressionTimezone") or "UTC"
    try:
        expression = eb.parse(text)
    except ValidationFailed as exc:
        raise service_validation(eb.invalid_expression(text, exc.details[0].message)) from exc
    try:
        zone = zone_of(zone_name, "ScheduleExpressionTimezone")
    except ValidationFailed as exc:
        raise service_validation(exc.details[0].message if exc.details else exc.message) from exc
    start, end = params.get("StartDate"), params.get("EndDate")
    if start is not None and end is not None and end <= start:
        raise service_validation("The EndDate must be after the StartDate.")
    if isinstance(expression, eb.AtExpression):
        return At(expression.wall.replace(tzinfo=zone).astimezone(UTC))
    if isinstance(expression, eb.RateExpression):
        return Every(float(expression.seconds), start or now, end)
    body = expression.text[len("cron(") : -1]
    return Cron(body, zone_name, start, end, EVENTBRIDGE)


def target_of(target: Mapping[str, Any], schedule_arn: str) -> Target:
    """The Sundial target for the service's ``Target.Arn``, sent the schedule's ``Input`` as the
    service sends it; one Sundial cannot call is refused."""
    arn = target["Arn"]
    parts = arn.split(":", 5)
    if len(parts) == 6 and parts[0] == "arn":
        service, resource = parts[2], parts[5]
        _at_home(arn, "Target.Arn", schedule_arn)
        if service in ("lambda", "events"):
            _json_input(target.get("Input"))
        if service == "lambda" and resource.startswith("function:"):
            return LambdaTarget(arn, schedule_arn)
        if service == "sqs" and "/" not in resource:
            group = (target.get("SqsParameters") or {}).get("MessageGroupId")
            if resource.endswith(".fifo") and not group:
                raise service_validation("Target.SqsParameters.MessageGroupId is required for a FIFO queue.")
            return SqsTarget(eb.queue_url(arn), schedule_arn, group if resource.endswith(".fifo") else None)
        if service == "sns":
            return SnsTarget(arn, schedule_arn)
        if service == "events" and resource.startswith("event-bus/"):
            parameters = target.get("EventBridgeParameters")
            if not parameters:
                raise service_validation(
                    "Target.EventBridgeParameters is required for an EventBridge event bus target."
                )
            return EventBridgeTarget(arn, parameters["Source"], parameters["DetailType"], schedule_arn)
    raise service_validation(
        f"Target.Arn {arn!r}: Sundial calls Lambda functions, SQS queues, SNS topics and EventBridge event buses; "
        "universal targets and other services are not supported"
    )


def _flexible(schedule: Schedule, params: Mapping[str, Any], schedule_arn: str) -> Schedule:
    """The schedule with its ``FlexibleTimeWindow``: each occurrence at a moment drawn in the
    window, from a hash of the schedule's ARN and the occurrence."""
    window = params.get("FlexibleTimeWindow") or {}
    if window.get("Mode") != "FLEXIBLE":
        if window.get("MaximumWindowInMinutes") is not None:
            raise service_validation("FlexibleTimeWindow.MaximumWindowInMinutes is only valid in FLEXIBLE mode.")
        return schedule
    minutes = window.get("MaximumWindowInMinutes")
    if minutes is None:
        raise service_validation("FlexibleTimeWindow.MaximumWindowInMinutes is required in FLEXIBLE mode.")
    return Flexible(schedule, int(minutes) * 60, schedule_arn)  # type: ignore[arg-type]


def _json_input(text: str | None) -> None:
    """A Lambda or EventBridge target's ``Input`` must be well-formed JSON, as the service requires
    (the API reference's ``Target.Input``)."""
    if text is None:
        return
    try:
        json.loads(text)
    except ValueError as exc:
        raise service_validation(
            "Target.Input must be well-formed JSON for a Lambda or EventBridge event bus target."
        ) from exc


def _at_home(arn: str, member: str, schedule_arn: str) -> None:
    """Sundial's trigger may call what is in its own account and Region only (its role's policy,
    infra/targets.py): a target or queue elsewhere is refused, not left to fail at every fire."""
    region, account = schedule_arn.split(":")[3:5]
    parts = arn.split(":")
    if len(parts) < 6 or (parts[3], parts[4]) != (region, account):
        raise service_validation(
            f"{member} {arn!r}: Sundial calls resources in its own account and Region ({account}, {region}) only."
        )


def _not_ours(arn: str, member: str, own: OwnResources) -> None:
    """A target or dead-letter queue that is one of Sundial's own resources (a delay queue, the
    dead-letter queue, a function of the deployment: shared/domain/own.py) is refused, naming
    the member, as the native API refuses such a target: any tenant could write into it."""
    why = own.arn_refusal(arn)
    if why is not None:
        raise service_validation(f"{member} {arn!r} {why}.")


def _dead_letter_arn(target: Mapping[str, Any], schedule_arn: str, own: OwnResources) -> str | None:
    arn = (target.get("DeadLetterConfig") or {}).get("Arn")
    if arn is None:
        return None
    _at_home(arn, "Target.DeadLetterConfig.Arn", schedule_arn)
    _not_ours(arn, "Target.DeadLetterConfig.Arn", own)
    if arn.endswith(".fifo"):
        raise service_validation("Target.DeadLetterConfig.Arn: a FIFO queue cannot be a dead-letter queue.")
    return arn


def spec_of(
    params: Mapping[str, Any], group: str, now: datetime, schedule_arn: str, own: OwnResources | None = None
) -> TaskSpec:
    """The task a schedule is: its ``Input`` kept as the text given (the payload), to be sent as
    is; retried as its ``RetryPolicy`` says (attempts and event age), Sundial's backoff between.
    ``own``: the deployment's own resources, which neither its target nor its dead-letter queue
    may be."""
    own = own or OwnResources()
    target = params["Target"]
    _not_ours(target["Arn"], "Target.Arn", own)
    policy = target.get("RetryPolicy") or {}
    retries = policy.get("MaximumRetryAttempts", DEFAULT_RETRIES)
    age = policy.get("MaximumEventAgeInSeconds", DEFAULT_EVENT_AGE_S)
    return TaskSpec(
        schedule=_flexible(schedule_of(params, now), params, schedule_arn),
        targets=(target_of(target, schedule_arn),),
        name=f"{TASK_NAME_PREFIX}{group}/{params['Name']}",
        payload=target.get("Input"),
        retry=RetryPolicy(max_attempts=retries + 1, max_age_seconds=age),
        eventbridge=EventBridgeSchedule(
            schedule_arn, _dead_letter_arn(target, schedule_arn, own), params.get("ActionAfterCompletion") == "DELETE"
        ),
    )


def _error_parts(error: str | None) -> tuple[str, str]:
    """A failed call's error code and message, from the text the delivery wrote
    (``"sqs SendMessage failed: <Code>: <message>"``)."""
    text = (error or "").partition("; ")[0]
    _, found, rest = text.partition(" failed: ")
    if not found:
        return "Unknown", text
    code, _, message = rest.partition(": ")
    return (code, message) if message else ("Unknown", rest)


def _target_arn(target: Target) -> str:
    if isinstance(target, SqsTarget):
        return eb.queue_arn(target.queue_url)
    if isinstance(target, LambdaTarget):
        return target.function_arn
    if isinstance(target, SnsTarget):
        return target.topic_arn
    return target.event_bus if isinstance(target, EventBridgeTarget) else ""


class ScheduleEnds:
    """The pipeline's part for schedules made through this API (docs/eventbridge.md, section 7):
    a dead-letter event to the schedule's own queue, and the name removed after completion."""

    def __init__(self, queues: QueueSender, store: ScheduleNames) -> None:
        self.queues, self.store = queues, store

    def dead_letter(self, task: Task, staged: Staged, error: str | None, exhausted: Exhausted | None) -> None:
        """The dead-letter event as the service sends it: the ``Input`` the target was sent as the
        body, and what went wrong as message attributes ("Configuring a dead-letter queue",
        https://docs.aws.amazon.com/scheduler/latest/UserGuide/configuring-schedule-dlq.html; the
        attribute names are unconfirmed against its sample event: docs/eventbridge.md, section 7).
        Best effort: a send that fails is logged, and never stops the run's end from being
        recorded; its dead letter stays in Sundial's own, where the native API can redrive it."""
        service = task.eventbridge
        if service is None or service.dead_letter_arn is None:
            return
        scheduled = scheduled_time(task.schedule, from_ms(staged.due_ms))
        body = eb.delivered_input(
            eb.input_template(task.payload),
            schedule_arn=service.arn,
            scheduled_for=scheduled,
            execution_id=staged.run_id,
            attempt=staged.attempt,
        )
        code, message = _error_parts(error)
        values = {
            "ERROR_CODE": code,
            "ERROR_MESSAGE": message or code,
            "EXECUTION_ID": staged.run_id,
            "IS_PAYLOAD_TRUNCATED": "false",
            "RETRY_ATTEMPTS": str(staged.attempt - 1),
            "SCHEDULED_TIME": scheduled.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "SCHEDULE_ARN": service.arn,
            "TARGET_ARN": _target_arn(task.targets[0]) if task.targets else "",
        }
        if exhausted is not None:
            values["EXHAUSTED_RETRY_CONDITION"] = _EXHAUSTED[exhausted]
        attributes = {k: {"DataType": "String", "StringValue": v} for k, v in values.items() if v}
        try:
            outcome = self.queues.send_to_queue(service.dead_letter_arn, body, attributes)
        except Exception:  # never stops the occurrence's end from being written
            logger.exception("a dead-letter event was not sent", extra={"run_id": staged.run_id})
            return
        if not outcome.ok:
            logger.warning("a dead-letter event was not sent", extra={"run_id": staged.run_id, "error": outcome.error})

    def completed(self, task: Task) -> None:
        service = task.eventbridge
        if service is None or not service.delete_after_completion:
            return
        group, _, name = service.arn.partition(":schedule/")[2].partition("/")
        self.store.drop_completed(task.tenant, group, name, task.id)


_EXHAUSTED = {Exhausted.ATTEMPTS: "MaximumRetryAttempts", Exhausted.AGE: "MaximumEventAgeInSeconds"}


_KEPT = (
    "ScheduleExpression",
    "ScheduleExpressionTimezone",
    "StartDate",
    "EndDate",
    "Description",
    "State",
    "KmsKeyArn",
    "Target",
    "FlexibleTimeWindow",
    "ActionAfterCompletion",
)


def _request(params: Mapping[str, Any]) -> dict[str, Any]:
    """What ``GetSchedule`` answers of a schedule, as stored (timestamps in epoch seconds)."""
    kept = {k: params[k] for k in _KEPT if params.get(k) is not None}
    for key in ("StartDate", "EndDate"):
        if key in kept:
            kept[key] = kept[key].timestamp()
    kept.setdefault("State", "ENABLED")
    kept.setdefault("ActionAfterCompletion", "NONE")
    kept.setdefault("ScheduleExpressionTimezone", "UTC")
    return kept


def _answered(request: Mapping[str, Any]) -> dict[str, Any]:
    """A stored request as ``GetSchedule`` answers it: with the members AWS answers when the
    request left them out (``State``, ``ActionAfterCompletion`` and the time zone are stored
    so; ``Target.RetryPolicy`` is filled here, each of its two members by its default), as AWS
    answered a schedule created without them (tests/data/aws/scheduler-get-schedule-defaults.json,
    from LocalStack's AWS-validated recordings). What the request did not give and AWS does not
    answer (``Description``, ``StartDate``, ``Target.Input``, ``DeadLetterConfig``...) stays out."""
    view = dict(request)
    target = dict(view["Target"])
    policy = target.get("RetryPolicy") or {}
    target["RetryPolicy"] = {
        "MaximumEventAgeInSeconds": policy.get("MaximumEventAgeInSeconds", DEFAULT_EVENT_AGE_S),
        "MaximumRetryAttempts": policy.get("MaximumRetryAttempts", DEFAULT_RETRIES),
    }
    view["Target"] = target
    return view


class SchedulerService:
    def __init__(self, tasks: TaskService, store: DynamoSchedules, place: Place, now: Callable[[], datetime]) -> None:
        self.tasks = tasks
        self.store = store
        self.place = place
        self.now = now

    def call(self, tenant: str, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        method: Callable[[str, dict[str, Any]], dict[str, Any]] = getattr(self, _METHODS[operation])
        try:
            return method(tenant, params)
        except SundialError as exc:
            raise _translated(exc) from exc

    # --- groups ----------------------------------------------------------------------------

    def _group(self, tenant: str, group: str) -> GroupRecord:
        record = self.store.group(tenant, group)
        if record is None:
            if group == DEFAULT_GROUP:
                return GroupRecord(DEFAULT_GROUP, 0, 0, [])
            raise ServiceError("ResourceNotFoundException", f"Schedule group {group} does not exist.")
        return record

    def create_group(self, tenant: str, params: dict[str, Any]) -> dict[str, Any]:
        group = params["Name"]
        if group == DEFAULT_GROUP:
            raise ServiceError("ConflictException", f"Schedule group {group} already exists.")
        token, tags = params.get("ClientToken"), params.get("Tags") or []
        try:
            self.store.create_group(tenant, group, tags, to_ms(self.now()), token)
        except Taken as exc:
            existing = self.store.group(tenant, group)
            if existing is not None and token is not None and existing.client_token == token:
                if existing.tags != tags:
                    raise ServiceError(
                        "ConflictException", "The ClientToken was used with a different request."
                    ) from exc
                return {"ScheduleGroupArn": self.place.group_arn(group)}
            raise ServiceError("ConflictException", f"Schedule group {group} already exists.") from exc
        return {"ScheduleGroupArn": self.place.group_arn(group)}

    def _group_view(self, record: GroupRecord) -> dict[str, Any]:
        view: dict[str, Any] = {"Arn": self.place.group_arn(record.name), "Name": record.name, "State": "ACTIVE"}
        if record.created_ms:
            view["CreationDate"] = from_ms(record.created_ms)
            view["LastModificationDate"] = from_ms(record.modified_ms)
        return view

    def get_group(self, tenant: str, params: dict[str, Any]) -> dict[str, Any]:
        return self._group_view(self._group(tenant, params["Name"]))

    def delete_group(self, tenant: str, params: dict[str, Any]) -> dict[str, Any]:
        group = params["Name"]
        if group == DEFAULT_GROUP:
            raise service_validation("The default schedule group cannot be deleted.")
        self._group(tenant, group)
        token: str | None = None
        while True:
            names, token = self.store.names(tenant, f"{group}/", MAX_PAGE, token)
            for record in names:
                self._drop(tenant, record)
            if token is None:
                break
        self.store.delete_group(tenant, group)
        return {}

    def list_groups(self, tenant: str, params: dict[str, Any]) -> dict[str, Any]:
        prefix, count = params.get("NamePrefix") or "", int(params.get("MaxResults") or MAX_PAGE)
        token = params.get("NextToken")
        records, following = self._paged(self.store.groups, tenant, prefix, count, token)
        if token is None and DEFAULT_GROUP.startswith(prefix) and all(r.name != DEFAULT_GROUP for r in records):
            records.insert(0, GroupRecord(DEFAULT_GROUP, 0, 0, []))
        answer: dict[str, Any] = {"ScheduleGroups": [self._group_view(r) for r in records]}
        if following:
            answer["NextToken"] = following
        return answer

    def tag(self, tenant: str, params: dict[str, Any]) -> dict[str, Any]:
        group = self.place.group_of_arn(params["ResourceArn"])
        record = self._group(tenant, group)
        tags = {t["Key"]: t["Value"] for t in record.tags}
        tags.update({t["Key"]: t["Value"] for t in params["Tags"]})
        now = to_ms(self.now())
        kept = GroupRecord(
            group, record.created_ms or now, now, [{"Key": k, "Value": v} for k, v in tags.items()], record.client_token
        )
        self.store.put_group(tenant, kept)
        return {}

    def untag(self, tenant: str, params: dict[str, Any]) -> dict[str, Any]:
        group = self.place.group_of_arn(params["ResourceArn"])
        record = self._group(tenant, group)
        gone = set(params["TagKeys"])
        now = to_ms(self.now())
        kept = [t for t in record.tags if t["Key"] not in gone]
        self.store.put_group(tenant, GroupRecord(group, record.created_ms or now, now, kept, record.client_token))
        return {}

    def tags(self, tenant: str, params: dict[str, Any]) -> dict[str, Any]:
        group = self.place.group_of_arn(params["ResourceArn"])
        return {"Tags": self._group(tenant, group).tags}

    # --- schedules -------------------------------------------------------------------------

    def _named(self, tenant: str, group: str, name: str) -> NameRecord:
        record = self.store.name(tenant, group, name)
        if record is None:
            raise ServiceError("ResourceNotFoundException", f"Schedule {name} does not exist.")
        return record

    def create(self, tenant: str, params: dict[str, Any]) -> dict[str, Any]:
        group, name = params.get("GroupName") or DEFAULT_GROUP, params["Name"]
        self._group(tenant, group)
        now = truncate_ms(self.now())  # the schedule's start (a rate without StartDate) and its registration's
        spec = spec_of(params, group, now, self.place.schedule_arn(group, name), self.tasks.own)  # before any write
        request, token = _request(params), params.get("ClientToken")
        record = NameRecord(group, name, "", to_ms(now), to_ms(now), request, token)
        try:
            self.store.take_name(tenant, record)
        except Taken as exc:
            existing = self.store.name(tenant, group, name)
            if existing is not None and not existing.task_id and to_ms(now) - existing.created_ms > ABANDONED_MS:
                # a creation that crashed between taking the name and registering its task
                self.store.drop_name(tenant, group, name)
                return self.create(tenant, params)
            if existing is not None and token is not None and existing.client_token == token:
                if existing.request != json.loads(json.dumps(request)):
                    raise ServiceError(
                        "ConflictException", "The ClientToken was used with a different request."
                    ) from exc
                return {"ScheduleArn": self.place.schedule_arn(group, name)}
            raise ServiceError("ConflictException", f"Schedule {name} already exists.") from exc
        try:
            task = self.tasks.register(tenant, spec, now=now)
            if request["State"] == "DISABLED":
                self.tasks.pause(tenant, task.id)
        except BaseException:
            self.store.drop_name(tenant, group, name)
            raise
        self.store.put_name(
            tenant, NameRecord(group, name, task.id, record.created_ms, record.modified_ms, request, token)
        )
        return {"ScheduleArn": self.place.schedule_arn(group, name)}

    def get(self, tenant: str, params: dict[str, Any]) -> dict[str, Any]:
        group, name = params.get("GroupName") or DEFAULT_GROUP, params["Name"]
        record = self._named(tenant, group, name)
        if not record.task_id:
            raise ServiceError("ResourceNotFoundException", f"Schedule {name} does not exist.")
        view = _answered(record.request)
        for key in ("StartDate", "EndDate"):
            if key in view:
                view[key] = _moment(view[key])
        view.update(
            Arn=self.place.schedule_arn(group, name),
            Name=name,
            GroupName=group,
            CreationDate=from_ms(record.created_ms),
            LastModificationDate=from_ms(record.modified_ms),
        )
        return view

    def update(self, tenant: str, params: dict[str, Any]) -> dict[str, Any]:
        group, name = params.get("GroupName") or DEFAULT_GROUP, params["Name"]
        record = self._named(tenant, group, name)
        now = self.now()
        spec = spec_of(params, group, now, self.place.schedule_arn(group, name), self.tasks.own)
        request = _request(params)
        patch = TaskPatch(
            schedule=spec.schedule,
            targets=spec.targets,
            payload=spec.payload,
            retry=spec.retry,
            eventbridge=spec.eventbridge,
        )
        task = self.tasks.update(tenant, record.task_id, patch)
        if request["State"] == "DISABLED" and task.status is not TaskStatus.PAUSED:
            self.tasks.pause(tenant, task.id)
        elif request["State"] == "ENABLED" and task.status is TaskStatus.PAUSED:
            self.tasks.resume(tenant, task.id)
        kept = NameRecord(group, name, record.task_id, record.created_ms, to_ms(now), request, record.client_token)
        self.store.put_name(tenant, kept)
        return {"ScheduleArn": self.place.schedule_arn(group, name)}

    def _drop(self, tenant: str, record: NameRecord) -> None:
        if record.task_id:
            # a task gone, or already ended (fired its last, cancelled): the name is what is left
            with contextlib.suppress(TaskNotFound, InvalidTransition):
                self.tasks.cancel(tenant, record.task_id)
        self.store.drop_name(tenant, record.group, record.name)

    def delete(self, tenant: str, params: dict[str, Any]) -> dict[str, Any]:
        group, name = params.get("GroupName") or DEFAULT_GROUP, params["Name"]
        self._drop(tenant, self._named(tenant, group, name))
        return {}

    def list(self, tenant: str, params: dict[str, Any]) -> dict[str, Any]:
        group, prefix = params.get("GroupName"), params.get("NamePrefix") or ""
        count, token, state = int(params.get("MaxResults") or MAX_PAGE), params.get("NextToken"), params.get("State")
        if group is not None:
            self._group(tenant, group)
        key = f"{group}/{prefix}" if group is not None else ""
        records, following = self._paged(self.store.names, tenant, key, count, token)
        chosen = [
            r
            for r in records
            if r.task_id
            and (group is not None or r.name.startswith(prefix))
            and (state is None or r.request.get("State") == state)
        ]
        summaries = [
            {
                "Arn": self.place.schedule_arn(r.group, r.name),
                "Name": r.name,
                "GroupName": r.group,
                "State": r.request.get("State", "ENABLED"),
                "CreationDate": from_ms(r.created_ms),
                "LastModificationDate": from_ms(r.modified_ms),
                "Target": {"Arn": r.request["Target"]["Arn"]},
            }
            for r in chosen
        ]
        answer: dict[str, Any] = {"Schedules": summaries}
        if following:
            answer["NextToken"] = following
        return answer

    @staticmethod
    def _paged(read: Callable[..., Any], tenant: str, prefix: str, count: int, token: str | None) -> Any:
        try:
            return read(tenant, prefix, count, token)
        except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
            raise service_validation("The NextToken is not valid.") from exc


_METHODS = {
    "CreateScheduleGroup": "create_group",
    "GetScheduleGroup": "get_group",
    "DeleteScheduleGroup": "delete_group",
    "ListScheduleGroups": "list_groups",
    "TagResource": "tag",
    "UntagResource": "untag",
    "ListTagsForResource": "tags",
    "CreateSchedule": "create",
    "GetSchedule": "get",
    "UpdateSchedule": "update",
    "DeleteSchedule": "delete",
    "ListSchedules": "list",
}
