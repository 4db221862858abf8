"""The canonical JSON form of schedules and targets: what the API returns and the store keeps."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from shared.domain.calendars import Repeat, repeat_from_api, repeat_to_api
from shared.domain.retry import Backoff, RetryPolicy
from shared.domain.schedules import FROM_START, LINUX, After, At, Cron, Every, Flexible, Schedule, base
from shared.domain.tasks import (
    Alert,
    EcsTarget,
    EventBridgeTarget,
    HttpTarget,
    JobTarget,
    LambdaTarget,
    SnsTarget,
    SqsTarget,
    StepFunctionsTarget,
    Target,
    WorkflowTarget,
)
from shared.domain.times import iso


def _parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text)


FLEXIBLE_WINDOW = "flexible_window_s"
FLEXIBLE_SEED = "flexible_seed"


def schedule_to_dict(schedule: Schedule) -> dict[str, Any]:
    if isinstance(schedule, Flexible):
        return schedule_to_dict(schedule.inner) | {FLEXIBLE_WINDOW: schedule.window_s, FLEXIBLE_SEED: schedule.seed}
    if isinstance(schedule, At):
        return {"at": iso(schedule.at)}
    if isinstance(schedule, After):
        return {"after_seconds": schedule.seconds}
    if isinstance(schedule, Repeat):
        return {"repeat": repeat_to_api(schedule)}
    out: dict[str, Any]
    if isinstance(schedule, Cron):
        out = {"cron": schedule.expression, "timezone": schedule.timezone}
        if schedule.dialect != LINUX:
            out["dialect"] = schedule.dialect
        start = schedule.start
    else:
        out = {"every_seconds": schedule.seconds}
        if schedule.after != FROM_START:
            out["after"] = schedule.after
        start = schedule.start
    if start is not None:
        out["start"] = iso(start)
    if schedule.end is not None:
        out["end"] = iso(schedule.end)
    return out


def is_one_shot_spec(data: dict[str, Any]) -> bool:
    return "at" in data or "after_seconds" in data


def schedule_from_dict(data: dict[str, Any], anchor: datetime | None = None) -> Schedule:
    if FLEXIBLE_WINDOW in data:
        inner = {k: v for k, v in data.items() if k not in (FLEXIBLE_WINDOW, FLEXIBLE_SEED)}
        return Flexible(base(schedule_from_dict(inner, anchor)), int(data[FLEXIBLE_WINDOW]), data[FLEXIBLE_SEED])
    start = _parse_time(data["start"]) if data.get("start") else None
    end = _parse_time(data["end"]) if data.get("end") else None
    if "at" in data:
        return At(_parse_time(data["at"]))
    if "after_seconds" in data:
        return After(float(data["after_seconds"]), anchor)
    if "repeat" in data:
        return repeat_from_api(data["repeat"])
    if "cron" in data:
        return Cron(data["cron"], data.get("timezone", "UTC"), start, end, data.get("dialect", LINUX))
    return Every(float(data["every_seconds"]), start, end, anchor, data.get("after", FROM_START))


_TARGET_KINDS: dict[type, str] = {
    HttpTarget: "http",
    LambdaTarget: "lambda",
    SqsTarget: "sqs",
    SnsTarget: "sns",
    EventBridgeTarget: "eventbridge",
}


def target_to_dict(target: Target) -> dict[str, Any]:
    if isinstance(target, JobTarget):
        return {"job": json.loads(target.job)}
    if isinstance(target, WorkflowTarget):
        return {"workflow": {"id": target.workflow_id}}
    if isinstance(target, StepFunctionsTarget | EcsTarget):
        return _start_to_dict(target)
    kind = _TARGET_KINDS[type(target)]
    body = dict(vars(target))
    if isinstance(target, HttpTarget) and target.limit is None:
        del body["limit"]  # stored as before limits existed: a target without one says nothing
    if body.get("message_group_id", "") is None:  # only a queue target of the EventBridge Scheduler API
        del body["message_group_id"]
    return {kind: body}


def target_from_dict(data: dict[str, Any]) -> Target:
    (kind, body), *_ = data.items()
    if kind == "http":
        return HttpTarget(
            url=body["url"],
            method=body.get("method", "POST"),
            headers=dict(body.get("headers") or {}),
            timeout_seconds=float(body.get("timeout_seconds", 10)),
            limit=body.get("limit"),
        )
    # A target stored before the schedule's ARN was kept on the task alone may carry it as
    # ``schedule_arn``: read past it (the task's ``eventbridge`` has the same ARN).
    if kind == "lambda":
        return LambdaTarget(body["function_arn"])
    if kind == "sqs":
        return SqsTarget(body["queue_url"], body.get("message_group_id"))
    if kind == "sns":
        return SnsTarget(body["topic_arn"])
    if kind == "job":
        return JobTarget(canonical_job(body))
    if kind == "workflow":
        return WorkflowTarget(body["id"])
    if kind in ("stepfunctions", "ecs"):
        return _start_from_dict(kind, body)
    return EventBridgeTarget(body["event_bus"], body["source"], body["detail_type"])


def _start_to_dict(target: StepFunctionsTarget | EcsTarget) -> dict[str, Any]:
    """A ``stepfunctions`` or ``ecs`` target in the API's form (shared/domain/starts.py)."""
    if isinstance(target, StepFunctionsTarget):
        machine: dict[str, Any] = {"state_machine_arn": target.state_machine_arn}
        if target.input is not None:
            machine["input"] = json.loads(target.input)
        return {"stepfunctions": machine}
    body: dict[str, Any] = {
        "cluster_arn": target.cluster_arn,
        "task_definition_arn": target.task_definition_arn,
        "launch_type": target.launch_type,
        "network": {
            "subnets": list(target.subnets),
            "security_groups": list(target.security_groups),
            "assign_public_ip": target.assign_public_ip,
        },
    }
    if target.overrides is not None:
        body["overrides"] = json.loads(target.overrides)
    return {"ecs": body}


def _start_from_dict(kind: str, body: dict[str, Any]) -> StepFunctionsTarget | EcsTarget:
    if kind == "stepfunctions":
        given = body.get("input")
        return StepFunctionsTarget(body["state_machine_arn"], compact_json(given) if given is not None else None)
    network = body["network"]
    overrides = body.get("overrides")
    return EcsTarget(
        cluster_arn=body["cluster_arn"],
        task_definition_arn=body["task_definition_arn"],
        subnets=tuple(network["subnets"]),
        security_groups=tuple(network.get("security_groups") or ()),
        assign_public_ip=network.get("assign_public_ip", "DISABLED"),
        overrides=compact_json(overrides, sort_keys=True) if overrides is not None else None,
        launch_type=body.get("launch_type", "FARGATE"),
    )


def alert_to_dict(alert: Alert) -> dict[str, Any]:
    out: dict[str, Any] = {"target": target_to_dict(alert.target)}
    if alert.after_consecutive_failures is not None:
        out["after_consecutive_failures"] = alert.after_consecutive_failures
    return out


def alert_from_dict(data: dict[str, Any]) -> Alert:
    after = data.get("after_consecutive_failures")
    return Alert(target_from_dict(data["target"]), int(after) if after is not None else None)


def compact_json(value: Any, *, sort_keys: bool = False) -> str:
    """JSON without spaces, text as it is (not escaped): how items, objects and bodies keep it."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=sort_keys)


def canonical_job(body: dict[str, Any]) -> str:
    return compact_json(body, sort_keys=True)


def retry_to_dict(retry: RetryPolicy) -> dict[str, Any]:
    out: dict[str, Any] = {
        "max_attempts": retry.max_attempts,
        "backoff": retry.backoff.value,
        "interval_seconds": retry.interval_seconds,
    }
    if retry.max_age_seconds is not None:
        out["max_age_seconds"] = retry.max_age_seconds
    return out


def retry_from_dict(data: dict[str, Any]) -> RetryPolicy:
    age = data.get("max_age_seconds")
    return RetryPolicy(
        max_attempts=int(data["max_attempts"]),
        backoff=Backoff(data["backoff"]),
        interval_seconds=float(data["interval_seconds"]),
        max_age_seconds=int(age) if age is not None else None,
    )
