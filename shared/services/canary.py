"""The canary's life as a CloudFormation custom resource (shared/domain/canary.py): registered when
the stack is created, kept through its updates, cancelled when the stack is deleted.

One stack's custom resource has one canary, whatever CloudFormation sends and however often: the
resource is named by its stack's id and logical id (``canary.resource_key``), which is its physical
id and the key of the item naming its task (:class:`CanaryResources`). So a request made again
(a retried invocation, a create rolled back and made anew) or an update and its rollback find the
canary registered before and keep it, rather than registering another; an answer never changes the
physical id, so CloudFormation never replaces the resource and never deletes a canary behind an
update. A stack deployed before the resource had that name keeps its physical id, the first canary
task's id, which an update adopts.

A create or an update that cannot register the canary fails (the deployment does not fire, and
should not pretend to); a delete never fails, so a stack can always be deleted: it cancels the
canary the resource names (and the task a physical id of the older kind is), and says in its reason
what it could not do.
"""

from __future__ import annotations

from collections.abc import Callable

from shared.adapters.custom_resource import Answer
from shared.domain import canary
from shared.domain.errors import InvalidTransition, TaskNotFound
from shared.domain.ids import parse_task_id
from shared.domain.states import TaskStatus
from shared.domain.tasks import Task
from shared.messages import CustomResourceRequest
from shared.observability import logger
from shared.services.ports.pipeline import CanaryResources
from shared.services.tasks import TaskService


def physical_id(stack_id: str, logical_resource_id: str, given: str | None) -> str:
    """The resource's physical id: the one CloudFormation has (every answer for a resource gives
    the same), else, on a create, its name."""
    return given or canary.resource_key(stack_id, logical_resource_id)


def _is_task_id(text: str) -> bool:
    try:
        parse_task_id(text)
    except ValueError:
        return False
    return True


def _task(service: TaskService, task_id: str) -> Task | None:
    try:
        return service.get(canary.TENANT, task_id)
    except TaskNotFound:
        return None


def _fires_at(task: Task, function_arn: str) -> bool:
    """Still the canary this resource asks for: scheduled, its one target the given function."""
    targets = [getattr(target, "function_arn", None) for target in task.targets]
    return task.status is TaskStatus.SCHEDULED and targets == [function_arn]


def handle_resource(
    service: TaskService,
    resources: CanaryResources,
    request: CustomResourceRequest,
    now_ms: Callable[[], int],
) -> Answer:
    """Create, update or delete the canary for a custom resource request."""
    key = canary.resource_key(request.stack_id, request.logical_resource_id)
    physical = physical_id(request.stack_id, request.logical_resource_id, request.physical_resource_id)
    if request.request_type == "Delete":
        return _delete(service, resources, key, physical)
    known = resources.task_of(key)
    # the resource's own item first; then a physical id of the older kind (the first task's id)
    candidates = [known] if known else []
    if physical != key and _is_task_id(physical) and physical != known:
        candidates.append(physical)
    wanted = request.properties.function_arn
    stale = []
    for task_id in candidates:
        task = _task(service, task_id)
        if task is None or task.status is not TaskStatus.SCHEDULED:
            continue
        if _fires_at(task, wanted):
            if task.id != known:
                resources.point(key, task.id, now_ms())
            return Answer("SUCCESS", physical, data={"TaskId": task.id})
        stale.append(task.id)  # another function: replaced below
    task = service.register(canary.TENANT, canary.spec(wanted), own_target=True)
    try:
        resources.point(key, task.id, now_ms())
    except Exception:
        _cancel(service, task.id)  # not named, it would never be cancelled
        raise
    problems = [problem for old in stale if (problem := _cancel(service, old))]
    return Answer("SUCCESS", physical, "; ".join(problems), data={"TaskId": task.id})


def _delete(service: TaskService, resources: CanaryResources, key: str, physical: str) -> Answer:
    known = resources.task_of(key)
    doomed = [task_id for task_id in (known, physical if _is_task_id(physical) else None) if task_id]
    problems = [problem for task_id in dict.fromkeys(doomed) if (problem := _cancel(service, task_id))]
    if known is not None and not problems:
        resources.forget(key)
    reason = "; ".join(problems)
    if reason:
        logger.warning("the canary was not cancelled", extra={"reason": reason})
    return Answer("SUCCESS", physical, reason, data={"TaskId": known or ""})


def _cancel(service: TaskService, task_id: str) -> str:
    """Cancel a canary task; what went wrong, or "" (a task gone or ended already is no problem)."""
    try:
        service.cancel(canary.TENANT, task_id)
    except (TaskNotFound, InvalidTransition):
        return ""  # gone already (expired, or the table was replaced), or ended
    except Exception as exc:
        return f"the canary task {task_id} was not cancelled: {type(exc).__name__}: {exc}"
    return ""
