"""Domain exceptions. The API maps each to one HTTP answer with a stable snake_case code."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class FieldError:
    field: str
    message: str


@dataclass
class SundialError(Exception):
    message: str
    details: list[FieldError] = field(default_factory=list)
    code = "internal_error"
    status = 500

    def __str__(self) -> str:
        return self.message


class ValidationFailed(SundialError):
    code = "validation_error"
    status = 400

    @classmethod
    def on(cls, field_name: str, message: str) -> ValidationFailed:
        return cls(f"{field_name}: {message}", [FieldError(field_name, message)])


class TaskNotFound(SundialError):
    code = "task_not_found"
    status = 404


class PayloadTooLarge(SundialError):
    code = "payload_too_large"
    status = 413


class InvalidTransition(SundialError):
    """A status change the task's state machine forbids (e.g. resuming a cancelled task)."""

    code = "invalid_state"
    status = 409


class ConcurrentUpdate(SundialError):
    code = "concurrent_update"
    status = 409


class StorageUnavailable(SundialError):
    code = "storage_unavailable"
    status = 503


class JobNotFound(SundialError):
    code = "job_not_found"
    status = 404


class JobFinished(SundialError):
    """A cancel of a job that has succeeded or failed, or whose post step has begun."""

    code = "job_finished"
    status = 409


class TooManyCommands(SundialError):
    """A command to a job that holds as many not yet taken as it may (shared/domain/job_commands.py)."""

    code = "too_many_commands"
    status = 409


class DeadLetterNotFound(SundialError):
    code = "dead_letter_not_found"
    status = 404


class IdempotencyKeyReused(SundialError):
    """The same ``Idempotency-Key`` came with a different request."""

    code = "idempotency_key_reused"
    status = 422


class IdempotencyInProgress(SundialError):
    """The first request with this ``Idempotency-Key`` is still being answered."""

    code = "idempotency_in_progress"
    status = 409


class VersionMismatch(SundialError):
    """``If-Match`` named a version the task no longer has."""

    code = "version_mismatch"
    status = 412


class TenantNotFound(SundialError):
    code = "tenant_not_found"
    status = 404


class KeyNotFound(SundialError):
    code = "key_not_found"
    status = 404


class TenantExists(SundialError):
    code = "tenant_exists"
    status = 409


class Unauthorized(SundialError):
    """No key, an unknown key or a revoked one."""

    code = "unauthorized"
    status = 401


class Forbidden(SundialError):
    """A tenant key on an admin route, or the admin key on a tenant route."""

    code = "forbidden"
    status = 403


class IdentityNotGranted(Forbidden):
    """An IAM route's caller (verified by API Gateway) is no role ``grant_register`` granted."""

    code = "identity_not_granted"


class IamRouteUnavailable(Forbidden):
    """An IAM route reached without API Gateway's IAM authorization: the local runtime's gateway,
    which verifies no SigV4 signature, or a request that did not come through the route's method."""

    code = "iam_route_unavailable"


@dataclass
class RateLimited(SundialError):
    """Over the tenant's requests_per_second (with burst): come back after ``retry_after_s``."""

    retry_after_s: int = 1
    code = "rate_limited"
    status = 429


class QuotaExceeded(SundialError):
    """Over the tenant's max_tasks (tasks that can still fire): nothing was stored."""

    code = "quota_exceeded"
    status = 429


class LimitNotFound(SundialError):
    code = "limit_not_found"
    status = 404


class OriginTaken(SundialError):
    """Another of the tenant's limits has this origin already (one limit per origin)."""

    code = "origin_taken"
    status = 409


class TooManyLimits(SundialError):
    """The tenant has MAX_LIMITS limits already: a new one waits until one is deleted."""

    code = "too_many_limits"
    status = 409


class WorkflowNotFound(SundialError):
    code = "workflow_not_found"
    status = 404


class WorkflowRunNotFound(SundialError):
    code = "workflow_run_not_found"
    status = 404


class SchedulerApiError(Exception):
    """An error the EventBridge Scheduler API answers (functions/api/scheduler.py), by the name of
    its shape in the service's model (``ValidationException``, ``ConflictException``...): not a
    :class:`SundialError`, whose codes and statuses are the native API's."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def scheduler_validation(message: str) -> SchedulerApiError:
    """The EventBridge Scheduler API's ``ValidationException``."""
    return SchedulerApiError("ValidationException", message)
