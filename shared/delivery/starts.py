"""Calling the targets that start something: a Step Functions execution (StartExecution) and a
container task on Fargate (ECS RunTask). Each success answers the ARN of what it started, which
the run records. The names and tokens that keep a repeated call from starting a second one are
shared/domain/starts.py's.

How their answers are read, beyond what every AWS target shares (shared/delivery/aws.py,
``classify_client_error``: throttling, 5xx and timeouts retried, any other error final):

* StartExecution's ``ExecutionAlreadyExists`` means an execution of this name exists: an
  earlier attempt (or copy) of the occurrence started it, so the call succeeded, and the
  execution's ARN is derived from its name. ``ExecutionLimitExceeded`` (the account's open
  executions are at their quota) is retried; ``StateMachineDoesNotExist``,
  ``StateMachineDeleting``, ``InvalidArn``, ``InvalidName``, ``InvalidExecutionInput``,
  ``ValidationException`` and the KMS errors but throttling are final
  (https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html, "Errors").
* RunTask's errors: ``ServerException`` (HTTP 500) and throttling are retried; ``ClientException``,
  ``InvalidParameterException``, ``AccessDeniedException``, ``ClusterNotFoundException``,
  ``PlatformUnknownException``, ``PlatformTaskDefinitionIncompatibilityException``,
  ``UnsupportedFeatureException``, ``BlockedException`` and ``ConflictException`` are final
  (https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_RunTask.html, "Errors"). A 200
  answer may start nothing and list why in ``failures``: capacity (``RESOURCE:*``, Fargate's
  "Capacity is unavailable at this time"), a disconnected ``AGENT`` and anything that says to
  try again are retried, the rest (``MISSING``, ``INACTIVE``, ``ATTRIBUTE``...) are final
  (https://docs.aws.amazon.com/AmazonECS/latest/developerguide/api_failures_messages.html).
* Before an attempt after the first, RunTask's caller lists the cluster's tasks started by this
  occurrence (``ListTasks`` by ``startedBy``, running then stopped): a task an earlier attempt
  started, whose answer was lost, is that attempt's success, not a reason to start another.
"""

from __future__ import annotations

from typing import Any

from shared.delivery.envelope import Envelope
from shared.delivery.outcome import Outcome
from shared.domain import starts
from shared.domain.tasks import EcsTarget, StepFunctionsTarget
from shared.domain.times import iso

START_EXECUTION = "states StartExecution"
RUN_TASK = "ecs RunTask"
RETRYABLE_START_CODES = frozenset({"ExecutionLimitExceeded"})
"""StartExecution's errors worth another attempt besides every AWS target's."""
RETRYABLE_FAILURES = ("RESOURCE:", "AGENT", "CAPACITY IS UNAVAILABLE", "TRY AGAIN", "THROTTL", "TIMEOUT")
"""RunTask ``failures`` reasons (upper-cased, as they begin or contain) worth another attempt."""


def _status(answer: dict[str, Any]) -> int | None:
    status = (answer.get("ResponseMetadata") or {}).get("HTTPStatusCode")
    return status if isinstance(status, int) else None


def error_code(exc: Exception) -> str:
    response = getattr(exc, "response", None) or {}
    return str((response.get("Error") or {}).get("Code") or "")


def start_execution(client: Any, target: StepFunctionsTarget, envelope: Envelope) -> Outcome:
    """Start the occurrence's execution; an execution of its name already there is a success.
    Raises botocore's errors for the caller to classify."""
    name = starts.execution_name(envelope.run_id, target)
    text = target.input if target.input is not None else envelope.text()
    try:
        answer = client.start_execution(stateMachineArn=target.state_machine_arn, name=name, input=text)
    except Exception as exc:
        if error_code(exc) == "ExecutionAlreadyExists":
            return Outcome.success(started=starts.execution_arn(target.state_machine_arn, name))
        raise
    return Outcome.success(_status(answer), started=str(answer["executionArn"]))


def run_task(client: Any, target: EcsTarget, envelope: Envelope) -> Outcome:
    """Run the occurrence's container task, unless an earlier attempt started it. Raises
    botocore's errors for the caller to classify."""
    by = starts.started_by(envelope.run_id, target)
    if envelope.attempt > 1 and (found := _started_before(client, target, by)) is not None:
        return Outcome.success(200, started=found)
    occurrence = starts.Occurrence(envelope.task_id, envelope.run_id, iso(envelope.scheduled_for))
    answer = client.run_task(
        cluster=target.cluster_arn,
        taskDefinition=target.task_definition_arn,
        launchType=target.launch_type,
        count=1,
        startedBy=by,
        clientToken=starts.client_token(envelope.run_id, target, envelope.attempt),
        networkConfiguration={
            "awsvpcConfiguration": {
                "subnets": list(target.subnets),
                "securityGroups": list(target.security_groups),
                "assignPublicIp": target.assign_public_ip,
            }
        },
        overrides=starts.run_task_overrides(target.overrides, occurrence),
    )
    tasks = answer.get("tasks") or []
    if tasks:
        return Outcome.success(_status(answer), started=str(tasks[0]["taskArn"]))
    return failures_outcome(answer.get("failures") or [], _status(answer))


def _started_before(client: Any, target: EcsTarget, by: str) -> str | None:
    """The task an earlier attempt of the occurrence started, if ECS still lists it (a stopped
    task is listed for about an hour after it stopped)."""
    for desired in ("RUNNING", "STOPPED"):
        arns = client.list_tasks(cluster=target.cluster_arn, startedBy=by, desiredStatus=desired).get("taskArns")
        if arns:
            return str(arns[0])
    return None


def failures_outcome(failures: list[dict[str, Any]], status: int | None) -> Outcome:
    """A RunTask answer that started no task: retried when every reason may pass, else final."""
    reasons = [str(f.get("reason") or "unknown") + (f": {f['detail']}" if f.get("detail") else "") for f in failures]
    text = f"{RUN_TASK} started no task: " + ("; ".join(reasons) if reasons else "no task and no failure listed")
    retryable = bool(reasons) and all(
        any(marker in reason.upper() for marker in RETRYABLE_FAILURES) for reason in reasons
    )
    return (Outcome.retry if retryable else Outcome.fail)(text, status=status)
