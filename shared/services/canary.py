"""The canary's life as a CloudFormation custom resource (shared/domain/canary.py): registered when
the stack is created, registered anew when its properties change (CloudFormation then deletes the
old one: the physical id is the task's id), cancelled when the stack is deleted."""

from __future__ import annotations

from dataclasses import dataclass

from shared.domain import canary
from shared.domain.errors import TaskNotFound
from shared.messages import CustomResourceRequest
from shared.services.tasks import TaskService


@dataclass(frozen=True)
class ResourceAnswer:
    """What the custom resource tells CloudFormation."""

    status: str
    """``SUCCESS`` or ``FAILED``."""
    physical_id: str
    reason: str = ""


NO_TASK = "no-canary-task"
"""The physical id of a canary that was never registered (a failed create)."""


def handle_resource(service: TaskService, request: CustomResourceRequest) -> ResourceAnswer:
    """Create, update or delete the canary task for a custom resource request. A create or an update
    that cannot register it fails (the deployment does not fire, and should not pretend to); a
    delete never fails, so a stack can always be deleted."""
    physical = request.physical_resource_id or NO_TASK
    if request.request_type == "Delete":
        if physical != NO_TASK:
            try:
                service.cancel(canary.TENANT, physical)
            except TaskNotFound:
                pass  # gone already (expired, or the table was replaced)
            except Exception as exc:
                return ResourceAnswer("SUCCESS", physical, f"the canary was not cancelled: {exc}")
        return ResourceAnswer("SUCCESS", physical)
    try:
        task = service.register(canary.TENANT, canary.spec(request.properties.function_arn), own_target=True)
    except Exception as exc:
        return ResourceAnswer("FAILED", physical, f"the canary task was not registered: {type(exc).__name__}: {exc}")
    return ResourceAnswer("SUCCESS", task.id)
