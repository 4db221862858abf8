"""``/v1/jobs``: a job, its progress and its steps' times."""

from __future__ import annotations

from datetime import datetime

from shared.api.models.jobs import CommandOut, ShardingIn
from shared.api.responses import JobFailure, JobLevel, JobOut, JobProgress, JobTimes
from shared.api.views.forms import processor_of
from shared.domain.codec import target_from_dict
from shared.domain.job_commands import JobCommand
from shared.domain.jobs import JobStatus, JobStep, JobView, Span, StepFailure
from shared.domain.secrets import redacted
from shared.domain.sharding import Sharding
from shared.domain.times import from_ms


def command_view(command: JobCommand) -> CommandOut:
    return CommandOut(id=command.id, command=command.command, args=command.args, sent_at=from_ms(command.sent_ms))


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
            "progress": JobProgress(
                done_shards=job.done_shards,
                total_shards=total,
                percent=percent,
                level=job.level,
                done_items=job.done_items,
                total_items=job.total_items,
            ),
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
