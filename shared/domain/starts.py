"""Targets that start something in AWS and answer its ARN: a Step Functions execution
(``stepfunctions``: StartExecution) and a container task on Fargate (``ecs``: RunTask). Pure:
the shapes the API takes, the names that keep a repeated call from starting a second one, and
the RunTask form of a target's overrides. The calls themselves are shared/delivery/starts.py's;
why they are made this way is docs/design.md, "Targets that start executions and containers".

AWS's rules relied on here:

* StartExecution's ``name`` is unique per state machine for 90 days: a second call with the
  name of an open execution and the same input answers that execution; with another input, or
  once the execution is closed, ``ExecutionAlreadyExists``. Names are 1 to 80 characters, no
  whitespace, brackets, wildcards or ``"#%\\^|~`$&,;:/`` (StartExecution, "name":
  https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html).
  Express state machines do not check names (the same page).
* An execution's input is at most 256 KiB
  (https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html); a target's
  ``input`` is held to a task payload's 32 KiB, as it lives in the task's item.
* RunTask's ``clientToken`` (up to 64 ASCII characters 33 to 126) makes a repeated request
  with the same parameters answer the first one's result, for 24 hours; the same token with
  other parameters is a ``ConflictException``
  (https://docs.aws.amazon.com/AmazonECS/latest/APIReference/ECS_Idempotency.html).
* RunTask's ``startedBy`` is up to 128 letters, numbers, hyphens, forward slashes and
  underscores, and ``ListTasks`` filters on it; its ``overrides`` are at most 8,192 characters,
  JSON formatting included
  (https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_RunTask.html).
* awsvpcConfiguration takes up to 16 subnets and 5 security groups, and ``assignPublicIp``
  ``ENABLED`` or ``DISABLED``
  (https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_AwsVpcConfiguration.html);
  a Fargate task needs it (the ``awsvpc`` network mode).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from shared.domain.tasks import EcsTarget, StepFunctionsTarget

STATE_MACHINE_ARN = (
    r"^arn:aws[a-z-]*:states:[a-z0-9-]+:[0-9]{12}:stateMachine:[A-Za-z0-9_-]{1,80}(:[A-Za-z0-9_-]{1,80})?$"
)
"""A state machine, or one of its versions (``:<number>``) or aliases (``:<name>``); names of
letters, digits, ``-`` and ``_`` (the characters CloudWatch Logs takes in a name)."""
CLUSTER_ARN = r"^arn:aws[a-z-]*:ecs:[a-z0-9-]+:[0-9]{12}:cluster/[A-Za-z0-9_-]{1,255}$"
TASK_DEFINITION_ARN = (
    r"^arn:aws[a-z-]*:ecs:[a-z0-9-]+:[0-9]{12}:task-definition/[A-Za-z0-9_-]{1,255}(:[1-9][0-9]{0,8})?$"
)
"""A task definition's family with a revision, or without (then its latest ACTIVE revision)."""
SUBNET = r"^subnet-([0-9a-f]{8}|[0-9a-f]{17})$"
SECURITY_GROUP = r"^sg-([0-9a-f]{8}|[0-9a-f]{17})$"
CONTAINER_NAME = r"^[A-Za-z0-9_-]{1,255}$"
VARIABLE_NAME = r"^(?!OCCURRENCE_)[A-Za-z_][A-Za-z0-9_]{0,254}$"
"""A variable a target sets: a shell's name, not one of Sundial's (:data:`OCCURRENCE_PREFIX`)."""
TASK_SIZE = r"^[1-9][0-9]{0,5}$"
"""A task-level ``cpu`` (units) or ``memory`` (MiB) override, as digits: which pairs Fargate
takes is checked by ECS (a refused pair fails the run for good)."""
MAX_SUBNETS = 16
MAX_SECURITY_GROUPS = 5
MAX_CONTAINER_OVERRIDES = 10
"""A task definition holds at most 10 containers (ECS quotas, "Containers per task definition")."""
MAX_COMMAND_ARGUMENTS = 50
MAX_VARIABLES = 50
MAX_TEXT_CHARS = 1024
"""A command argument or a variable's value, at most: with the counts above, what the document
allows of a container stays far below a request body's 128 KiB (the whole is held to RunTask's
8,192 characters anyway)."""
MAX_OVERRIDES_CHARS = 8192
"""RunTask's ``overrides``, as the SDK sends them (JSON with its spacing), at most."""
LAUNCH_TYPES = ("FARGATE",)
PUBLIC_IP = ("ENABLED", "DISABLED")

OCCURRENCE_PREFIX = "OCCURRENCE_"
"""The variables Sundial sets in each container the overrides name; a target may not set one."""
TASK_ID_VARIABLE = OCCURRENCE_PREFIX + "TASK_ID"
RUN_ID_VARIABLE = OCCURRENCE_PREFIX + "RUN_ID"
SCHEDULED_FOR_VARIABLE = OCCURRENCE_PREFIX + "SCHEDULED_FOR"
_LONGEST_OCCURRENCE = ("0" * 26, "0" * 26, "9999-12-31T23:59:59.999Z")
"""Values as long as any occurrence's (ids of 26 characters, an ISO time with milliseconds): what
a target's overrides are measured with at registration."""
DIGEST_CHARS = 12


@dataclass(frozen=True)
class Occurrence:
    """What a container is told of the occurrence that started it: the same on every attempt,
    so that a retried RunTask asks for exactly what the first did."""

    task_id: str
    run_id: str
    scheduled_for: str
    """ISO 8601 in UTC with milliseconds."""


def target_digest(target: StepFunctionsTarget | EcsTarget) -> str:
    """A short digest of the target as stored: two targets of one task never share a name. A
    change to the target (a PATCH, or a member added to its class) changes it: an attempt after
    one asks anew."""
    text = json.dumps(vars(target), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_CHARS]


def execution_name(run_id: str, target: StepFunctionsTarget) -> str:
    """The execution's name: the run's id and the target's digest (39 characters), so every
    attempt and copy of the occurrence asks for the same execution."""
    return f"{run_id}-{target_digest(target)}"


def execution_arn(state_machine_arn: str, name: str) -> str:
    """The ARN of the execution ``name`` of ``state_machine_arn`` (a version's or an alias's
    executions are the state machine's): ``arn:<partition>:states:<region>:<account>:execution:<machine>:<name>``."""
    parts = state_machine_arn.split(":")
    partition, region, account, machine = parts[1], parts[3], parts[4], parts[6]
    return f"arn:{partition}:states:{region}:{account}:execution:{machine}:{name}"


def started_by(run_id: str, target: EcsTarget) -> str:
    """The container task's ``startedBy``: the run's id and the target's digest, which a later
    attempt lists the cluster's tasks by (shared/delivery/starts.py)."""
    return f"{run_id}-{target_digest(target)}"


def client_token(run_id: str, target: EcsTarget, attempt: int) -> str:
    """RunTask's ``clientToken`` of one attempt: the SDK's own retries of the request start one
    task; the next attempt, which first looks for the task by ``startedBy``, asks anew (a token
    that answered "no capacity" would answer it again for a day)."""
    return f"{started_by(run_id, target)}-{attempt}"


def run_task_overrides(overrides: str | None, occurrence: Occurrence) -> dict[str, Any]:
    """RunTask's ``overrides`` from a target's (the API's form, canonical JSON): each container
    named gets its command and variables, and the occurrence's ``OCCURRENCE_*`` variables."""
    given: dict[str, Any] = json.loads(overrides) if overrides else {}
    occurrence_variables = [
        {"name": TASK_ID_VARIABLE, "value": occurrence.task_id},
        {"name": RUN_ID_VARIABLE, "value": occurrence.run_id},
        {"name": SCHEDULED_FOR_VARIABLE, "value": occurrence.scheduled_for},
    ]
    containers = []
    for container in given.get("containers") or []:
        out: dict[str, Any] = {"name": container["name"]}
        if container.get("command") is not None:
            out["command"] = list(container["command"])
        variables = [{"name": k, "value": v} for k, v in sorted((container.get("environment") or {}).items())]
        out["environment"] = variables + occurrence_variables
        containers.append(out)
    result: dict[str, Any] = {"containerOverrides": containers}
    for member in ("cpu", "memory"):
        if given.get(member) is not None:
            result[member] = str(given[member])
    return result


def overrides_chars(overrides: str | None) -> int:
    """The length of the RunTask ``overrides`` a target's make, as the SDK writes them, at their
    longest (the occurrence's values as long as any)."""
    longest = Occurrence(*_LONGEST_OCCURRENCE)
    return len(json.dumps(run_task_overrides(overrides, longest)))


def overrides_problem(overrides: str | None) -> tuple[str, str] | None:
    """(the member at fault, why) when a target's overrides break a rule no single member's
    shape says; None when they are fine."""
    given: dict[str, Any] = json.loads(overrides) if overrides else {}
    names = [c["name"] for c in given.get("containers") or []]
    for index, name in enumerate(names):
        if name in names[:index]:
            return f"containers[{index}].name", f"names the container {name!r} twice"
    for index, container in enumerate(given.get("containers") or []):
        for variable in container.get("environment") or {}:
            if variable.startswith(OCCURRENCE_PREFIX):
                return (
                    f"containers[{index}].environment",
                    f"sets {variable}: variables starting with {OCCURRENCE_PREFIX} are Sundial's "
                    "(the occurrence's task id, run id and time)",
                )
    chars = overrides_chars(overrides)
    if chars > MAX_OVERRIDES_CHARS:
        return "", (
            f"come to {chars} characters as RunTask takes them (with the occurrence's variables); "
            f"the limit is {MAX_OVERRIDES_CHARS}"
        )
    return None


def arn_region(arn: str) -> str:
    """The Region an ARN names (its fourth part)."""
    return arn.split(":")[3]


def arn_account(arn: str) -> str:
    return arn.split(":")[4]
