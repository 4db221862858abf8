"""The EventBridge Scheduler API's operations' inputs, typed: each a frozen dataclass built by
``from_wire`` from the members shared/api/scheduler_protocol.py bound and checked against the
service's model (required members present, lengths, ranges, patterns, enumerations). Nothing here
refuses anything: what the model cannot say (an expression, a target Sundial cannot call...) is
checked where the request is translated into a task (translate.py), in the order the service
answers it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Self

DEFAULT_GROUP = "default"
MAX_PAGE = 100


def _text(params: Mapping[str, Any], name: str) -> str | None:
    value = params.get(name)
    return None if value is None else str(value)


@dataclass(frozen=True)
class Tag:
    key: str
    value: str

    def to_wire(self) -> dict[str, str]:
        return {"Key": self.key, "Value": self.value}


def _tags(params: Mapping[str, Any]) -> tuple[Tag, ...]:
    return tuple(Tag(t["Key"], t["Value"]) for t in params.get("Tags") or ())


@dataclass(frozen=True)
class EventBusParameters:
    """``Target.EventBridgeParameters``: what an event-bus target's events are."""

    source: str
    detail_type: str


@dataclass(frozen=True)
class ScheduleTarget:
    """``Target``: what Sundial reads of it, typed; ``given`` is the member as sent, kept and
    answered back by ``GetSchedule`` (with what Sundial does not read: ``RoleArn``,
    ``EcsParameters``...)."""

    arn: str
    input: str | None
    max_retry_attempts: int | None
    """``RetryPolicy.MaximumRetryAttempts`` (None: not given)."""
    max_event_age_s: int | None
    """``RetryPolicy.MaximumEventAgeInSeconds`` (None: not given)."""
    dead_letter_arn: str | None
    message_group_id: str | None
    """``SqsParameters.MessageGroupId``."""
    event_bus: EventBusParameters | None
    given: Mapping[str, Any]

    @classmethod
    def from_wire(cls, target: Mapping[str, Any]) -> ScheduleTarget:
        policy = target.get("RetryPolicy") or {}
        bus = target.get("EventBridgeParameters")
        return cls(
            arn=target["Arn"],
            input=_text(target, "Input"),
            max_retry_attempts=policy.get("MaximumRetryAttempts"),
            max_event_age_s=policy.get("MaximumEventAgeInSeconds"),
            dead_letter_arn=(target.get("DeadLetterConfig") or {}).get("Arn"),
            message_group_id=(target.get("SqsParameters") or {}).get("MessageGroupId"),
            event_bus=EventBusParameters(bus["Source"], bus["DetailType"]) if bus else None,
            given=dict(target),
        )


@dataclass(frozen=True)
class FlexibleTimeWindow:
    mode: str
    """``OFF`` or ``FLEXIBLE``."""
    max_window_minutes: int | None

    @classmethod
    def from_wire(cls, window: Mapping[str, Any] | None) -> FlexibleTimeWindow | None:
        if window is None:
            return None
        return cls(str(window.get("Mode")), window.get("MaximumWindowInMinutes"))

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"Mode": self.mode}
        if self.max_window_minutes is not None:
            wire["MaximumWindowInMinutes"] = self.max_window_minutes
        return wire


@dataclass(frozen=True)
class ScheduleRequest:
    """``CreateSchedule``'s and ``UpdateSchedule``'s members (the same: an update replaces the
    whole schedule)."""

    name: str
    group: str
    expression: str
    timezone: str | None
    start: datetime | None
    end: datetime | None
    description: str | None
    state: str | None
    """``ENABLED`` or ``DISABLED`` (None: not given, enabled)."""
    kms_key_arn: str | None
    target: ScheduleTarget
    window: FlexibleTimeWindow | None
    action_after_completion: str | None
    """``NONE`` or ``DELETE`` (None: not given, none)."""
    client_token: str | None

    @property
    def enabled(self) -> bool:
        return self.state != "DISABLED"

    @classmethod
    def from_wire(cls, params: Mapping[str, Any]) -> Self:
        return cls(
            name=params["Name"],
            group=params.get("GroupName") or DEFAULT_GROUP,
            expression=params["ScheduleExpression"],
            timezone=_text(params, "ScheduleExpressionTimezone"),
            start=params.get("StartDate"),
            end=params.get("EndDate"),
            description=_text(params, "Description"),
            state=_text(params, "State"),
            kms_key_arn=_text(params, "KmsKeyArn"),
            target=ScheduleTarget.from_wire(params["Target"]),
            window=FlexibleTimeWindow.from_wire(params.get("FlexibleTimeWindow")),
            action_after_completion=_text(params, "ActionAfterCompletion"),
            client_token=_text(params, "ClientToken"),
        )


class CreateSchedule(ScheduleRequest):
    pass


class UpdateSchedule(ScheduleRequest):
    pass


@dataclass(frozen=True)
class ScheduleRef:
    """``GetSchedule``'s and ``DeleteSchedule``'s members: the schedule, in its group."""

    name: str
    group: str

    @classmethod
    def from_wire(cls, params: Mapping[str, Any]) -> ScheduleRef:
        return cls(params["Name"], params.get("GroupName") or DEFAULT_GROUP)


@dataclass(frozen=True)
class Page:
    """A listing's page: ``NamePrefix``, ``MaxResults``, ``NextToken``."""

    prefix: str
    count: int
    token: str | None

    @classmethod
    def from_wire(cls, params: Mapping[str, Any]) -> Page:
        return cls(params.get("NamePrefix") or "", int(params.get("MaxResults") or MAX_PAGE), params.get("NextToken"))


@dataclass(frozen=True)
class ListSchedules:
    group: str | None
    state: str | None
    page: Page

    @classmethod
    def from_wire(cls, params: Mapping[str, Any]) -> ListSchedules:
        return cls(params.get("GroupName"), params.get("State"), Page.from_wire(params))


@dataclass(frozen=True)
class CreateScheduleGroup:
    name: str
    tags: tuple[Tag, ...]
    client_token: str | None

    @classmethod
    def from_wire(cls, params: Mapping[str, Any]) -> CreateScheduleGroup:
        return cls(params["Name"], _tags(params), params.get("ClientToken"))


@dataclass(frozen=True)
class GroupRef:
    """``GetScheduleGroup``'s and ``DeleteScheduleGroup``'s members."""

    name: str

    @classmethod
    def from_wire(cls, params: Mapping[str, Any]) -> GroupRef:
        return cls(params["Name"])


@dataclass(frozen=True)
class ListScheduleGroups:
    page: Page

    @classmethod
    def from_wire(cls, params: Mapping[str, Any]) -> ListScheduleGroups:
        return cls(Page.from_wire(params))


@dataclass(frozen=True)
class ResourceRef:
    """``ListTagsForResource``'s member: a schedule group's ARN."""

    arn: str

    @classmethod
    def from_wire(cls, params: Mapping[str, Any]) -> ResourceRef:
        return cls(params["ResourceArn"])


@dataclass(frozen=True)
class TagResource:
    arn: str
    tags: tuple[Tag, ...]

    @classmethod
    def from_wire(cls, params: Mapping[str, Any]) -> TagResource:
        return cls(params["ResourceArn"], _tags(params))


@dataclass(frozen=True)
class UntagResource:
    arn: str
    keys: frozenset[str]

    @classmethod
    def from_wire(cls, params: Mapping[str, Any]) -> UntagResource:
        return cls(params["ResourceArn"], frozenset(params["TagKeys"]))
