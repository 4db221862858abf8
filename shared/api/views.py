"""Domain objects as the API answers them (the models of :mod:`shared.api.responses`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, replace
from datetime import datetime
from typing import Any

from shared.api.models.alerts import alert_of
from shared.api.models.jobs import ShardingIn, processor_of
from shared.api.models.schedules import schedule_of
from shared.api.models.targets import target_of
from shared.api.responses import (
    BatchError,
    BatchOut,
    BatchTask,
    DeadLetterOut,
    DestinationLimitOut,
    ErrorBody,
    ErrorDetail,
    ErrorOut,
    JobFailure,
    JobLevel,
    JobOut,
    JobProgress,
    JobTimes,
    KeyOut,
    LimitsOut,
    NewKeyOut,
    NewSigningSecretOut,
    NewTenantOut,
    ParentOut,
    RedrivenRun,
    RedriveOut,
    RetryOut,
    RunOut,
    SigningSecretOut,
    TaskOut,
    TenantOut,
)
from shared.domain.codec import target_from_dict
from shared.domain.errors import SundialError
from shared.domain.jobs import JobStatus, JobStep, JobView, Span, StepFailure
from shared.domain.limits import Limit
from shared.domain.registration import notices
from shared.domain.retry import RetryPolicy
from shared.domain.secrets import redacted
from shared.domain.sharding import Sharding
from shared.domain.signing import NewSecret, SecretInfo
from shared.domain.tasks import Alert, DeadLetter, LastRun, Run, Target, Task
from shared.domain.tenants import KeyInfo, NewKey, Tenant
from shared.domain.times import from_ms
from shared.services.tasks import Redriven


def _targets(targets: tuple[Target, ...], multicast: bool) -> dict[str, object]:
    shown = [target_of(redacted(target)) for target in targets]  # secrets are write-only
    return {"targets": shown} if multicast else {"target": shown[0]}


def _alert(alert: Alert | None) -> dict[str, object]:
    return {} if alert is None else {"alert": alert_of(replace(alert, target=redacted(alert.target)))}


def _retry(retry: RetryPolicy) -> RetryOut:
    return RetryOut(max_attempts=retry.max_attempts, backoff=retry.backoff, interval_seconds=retry.interval_seconds)


def _last_run(run: LastRun | None) -> dict[str, Any] | None:
    if run is None:
        return None
    return {"run_id": run.run_id, "scheduled_for": run.scheduled_for, "status": run.status, "fired_at": run.fired_at}


def task_view(task: Task, *, scheduled_now: bool = False) -> TaskOut:
    """A task. ``scheduled_now``: the answer to the write that set its schedule, which carries
    the notices about it (an ``at`` already past fires at once)."""
    said = notices(task.schedule, task.updated_at) if scheduled_now else ()
    return TaskOut.model_validate(
        {
            "id": task.id,
            "name": task.name,
            "status": task.status,
            "last_run": _last_run(task.last_run),
            "schedule": schedule_of(task.schedule),
            **_targets(task.targets, task.multicast),
            "payload": task.payload,
            "retry": _retry(task.retry),
            "misfire": task.misfire,
            "priority": task.priority,
            "next_fire_at": task.next_fire_at,
            "created_at": task.created_at,
            "updated_at": task.updated_at,
            "version": task.version,
            **_alert(task.alert),
            "pause_after_failures": task.pause_after_failures,
            "paused_reason": task.paused_reason,
            "consecutive_failures": task.consecutive_failures,
            "on_success": list(task.on_success) or None,
            "on_failure": list(task.on_failure) or None,
            "notices": [{"field": n.field, "message": n.message} for n in said] or None,
        }
    )


def dead_letter_view(letter: DeadLetter) -> DeadLetterOut:
    return DeadLetterOut.model_validate(
        {
            "id": letter.id,
            "task_id": letter.task_id,
            "run_id": letter.run_id,
            "name": letter.name,
            "status": letter.status,
            "reason": letter.reason,
            "scheduled_for": letter.scheduled_for,
            "failed_at": letter.failed_at,
            "attempts": letter.attempts,
            **_targets(letter.targets, letter.multicast),
            "payload": letter.payload,
            "retry": _retry(letter.retry),
            "redriven_run_id": letter.redriven_run_id,
            "redriven_at": letter.redriven_at,
        }
    )


def run_view(run: Run) -> RunOut:
    return RunOut(
        run_id=run.run_id,
        task_id=run.task_id,
        scheduled_for=run.scheduled_for,
        fired_at=run.fired_at,
        status=run.status,
        attempts=run.attempts,
        lateness_ms=run.lateness_ms,
        last_error=run.last_error,
        throttled_ms=run.throttled_ms,
        parent=ParentOut(task_id=run.parent.task_id, run_id=run.parent.run_id, status=run.parent.status)
        if run.parent is not None
        else None,
    )


def error_body(error: SundialError) -> ErrorBody:
    details = [ErrorDetail(field=d.field, message=d.message) for d in error.details] or None
    return ErrorBody(code=error.code, message=error.message, details=details)


def error_view(error: SundialError) -> ErrorOut:
    return ErrorOut(error=error_body(error))


def job_view(job: JobView) -> JobOut:
    total = job.total_shards
    percent = (job.done_shards * 100 // total) if total else (100 if job.status is JobStatus.SUCCEEDED else 0)
    spans = job.level_spans()
    levels = (
        [
            JobLevel(
                level=level.level,
                total_shards=level.total_shards,
                done_shards=level.done_shards,
                started_at=_at(span.started_ms),
                finished_at=_at(span.finished_ms),
            )
            for level, span in zip(job.levels, spans, strict=True)
        ]
        if job.levels is not None
        else None
    )
    sharding = job.sharding or Sharding()
    return JobOut.model_validate(
        {
            "id": job.id,
            "name": job.name,
            "status": job.status,
            "processor": processor_of(redacted(target_from_dict(job.processor or {}))),  # secrets are write-only
            "sharding": ShardingIn.model_validate(vars(sharding)),
            "notify_every_percent": job.notify_every_percent,
            "progress": JobProgress(done_shards=job.done_shards, total_shards=total, percent=percent, level=job.level),
            "pre": _times(job.pre),
            "levels": levels,
            "post": _times(job.post),
            "result": job.result,
            "result_url": job.result_url,
            "result_bytes": job.result_bytes,
            "error": job.error,
            "failure": _failure(job.failure),
            "notify_failure": _failure(job.notify_failure),
            "created_at": from_ms(job.created_ms),
            "finished_at": _at(job.finished_ms),
        }
    )


def _at(ms: int | None) -> datetime | None:
    return from_ms(ms) if ms is not None else None


def _times(span: Span | None) -> JobTimes | None:
    return None if span is None else JobTimes(started_at=_at(span.started_ms), finished_at=_at(span.finished_ms))


def _failure(failure: StepFailure | None) -> JobFailure | None:
    if failure is None:
        return None
    data = failure.to_dict()
    del data["retryable"]
    if failure.step is not JobStep.NOTIFY:
        del data["threshold"]
    return JobFailure.model_validate(data)


def batch_view(answers: Sequence[Task | SundialError]) -> BatchOut:
    """``POST /v1/tasks:batch``: each spec's task or error, by its index."""
    return BatchOut(
        items=[
            BatchTask(index=i, task=task_view(a, scheduled_now=True))
            if isinstance(a, Task)
            else BatchError(index=i, error=error_body(a))
            for i, a in enumerate(answers)
        ]
    )


def redrive_view(done: Redriven) -> RedriveOut:
    runs = [RedrivenRun(id=letter.id, task_id=letter.task_id, run_id=run_id) for letter, run_id in done.runs]
    return RedriveOut(redriven=len(runs), runs=runs, next_cursor=done.next_cursor)


def signing_secret_view(info: SecretInfo) -> SigningSecretOut:
    expires = from_ms(info.expires_ms) if info.expires_ms is not None else None
    return SigningSecretOut(id=info.id, created_at=from_ms(info.created_ms), expires_at=expires)


def new_signing_secret_view(created: NewSecret) -> NewSigningSecretOut:
    return NewSigningSecretOut(id=created.info.id, secret=created.secret, created_at=from_ms(created.info.created_ms))


def tenant_view(tenant: Tenant) -> TenantOut:
    return TenantOut(
        id=tenant.id,
        created_at=tenant.created_at,
        limits=LimitsOut(**asdict(tenant.limits)),
        live_tasks=tenant.live_tasks,
    )


def new_key_view(key: NewKey) -> NewKeyOut:
    return NewKeyOut(id=key.id, secret=key.secret, created_at=key.created_at)


def new_tenant_view(tenant: Tenant, key: NewKey, signing_secret: NewSecret) -> NewTenantOut:
    return NewTenantOut(
        **tenant_view(tenant).model_dump(),
        key=new_key_view(key),
        signing_secret=new_signing_secret_view(signing_secret),
    )


def key_view(key: KeyInfo) -> KeyOut:
    return KeyOut(id=key.id, created_at=key.created_at, revoked_at=key.revoked_at)


def limit_view(limit: Limit) -> DestinationLimitOut:
    assert limit.created_at is not None, "a stored limit has both times"
    assert limit.updated_at is not None, "a stored limit has both times"
    return DestinationLimitOut(
        name=limit.name,
        origin=limit.origin,
        per_second=limit.per_second,
        burst=limit.burst,
        max_in_flight=limit.max_in_flight,
        version=limit.version,
        created_at=limit.created_at,
        updated_at=limit.updated_at,
    )
