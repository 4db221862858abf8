"""Jobs: every Lambda task state of the job state machine (infra/jobs.py) calls this function
with ``{"step": "pre" | "shard" | "post" | "fail", "job_id": ..., ...}`` (docs/jobs.md), and the
API with ``{"step": "notify", ...}`` for a threshold a progress report crossed, parsed
into one of the steps of ``shared.messages.JobStepCall``; the stack's rule on executions that
ended without their job calls it with Step Functions' status change (``ExecutionEnded``).

A processor failure worth retrying raises ``ProcessorRetryable``, whose name the state
machine's Retry blocks match; anything else (an event that is none of these among it) fails the
job through the ``fail`` step."""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.domain.jobs import JsonValue
from shared.messages import ExecutionEnded, FailStep, JobEvent, NotifyStep, PostStep, PreStep, ShardStep, job_event
from shared.observability import logger, tracer
from shared.services.factory import JobStepsFactory, build_job_steps
from shared.services.jobs import JobSteps
from shared.settings.environment import from_env


@cache
def factory() -> JobStepsFactory:
    return build_job_steps(from_env())


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, JsonValue]:
    return run(job_event(event))


def run(event: JobEvent) -> dict[str, JsonValue]:
    if isinstance(event, ExecutionEnded):
        return ended(event)
    logger.append_keys(job_id=event.job_id, step=event.step)
    steps = steps_of(event.job_id)
    match event:
        case PreStep():
            return steps.pre(event.job_id, event.attempt)
        case ShardStep():
            return steps.shard(event.job_id, event.level, event.shard, event.shard_count, event.attempt)
        case PostStep():
            return steps.post(event.job_id, event.attempt)
        case FailStep():
            return steps.fail(event.job_id, event.reason, event.cause_message)
        case NotifyStep():
            return steps.notify_items(event.job_id, event.threshold, event.done_items, event.total_items)


def ended(event: ExecutionEnded) -> dict[str, JsonValue]:
    """An execution (named after its job) ended FAILED, TIMED_OUT or ABORTED: its job, if still
    running, is recorded failed with what Step Functions said."""
    job_id = event.detail.name
    logger.append_keys(job_id=job_id, step="ended")
    return steps_of(job_id).fail(job_id, event.detail.reason, event.detail.cause_message)


def steps_of(job_id: str) -> JobSteps:
    return factory().for_job(job_id)
