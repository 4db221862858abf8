"""Jobs: every Lambda task state of the job state machine (infra/jobs.py) calls this function
with ``{"step": "pre" | "shard" | "post" | "fail", "job_id": ..., ...}`` (docs/jobs.md).

A processor failure worth retrying raises ``ProcessorRetryable``, whose name the state
machine's Retry blocks match; anything else fails the job through the ``fail`` step."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.observability import logger, tracer
from shared.services.factory import JobStepsFactory, build_job_steps
from shared.services.jobs import JobSteps
from shared.settings import from_env


@cache
def factory() -> JobStepsFactory:
    return build_job_steps(from_env())


MAX_CAUSE_CHARS = 4000
"""Of a failed step's errorMessage: a processor's failure, as JSON, is well under it."""


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if event.get("source") == "aws.states":  # an execution ended without its job (infra/job_runner.py)
        return ended(event["detail"])
    step, job_id = event["step"], str(event["job_id"])
    logger.append_keys(job_id=job_id, step=step)
    steps = steps_of(job_id)
    attempt = int(event.get("retry_count") or 0) + 1  # the state's $$.State.RetryCount: 0 on its first attempt
    if step == "pre":
        return steps.pre(job_id, attempt)
    if step == "shard":
        return steps.shard(job_id, int(event["level"]), int(event["shard"]), int(event["shard_count"]), attempt)
    if step == "post":
        return steps.post(job_id, attempt)
    if step == "fail":
        return steps.fail(job_id, str(event.get("error") or "failed"), _cause(event.get("cause")))
    raise ValueError(f"unknown job step {step!r}")


def ended(detail: dict[str, Any]) -> dict[str, Any]:
    """An execution (named after its job) ended FAILED, TIMED_OUT or ABORTED: its job, if still
    running, is recorded failed with what Step Functions said."""
    job_id = str(detail["name"])
    logger.append_keys(job_id=job_id, step="ended")
    error = f"the job's execution ended {str(detail.get('status', 'FAILED')).lower().replace('_', ' ')}"
    return steps_of(job_id).fail(job_id, error, _cause(detail.get("cause") or detail.get("error")))


def steps_of(job_id: str) -> JobSteps:
    return factory().for_job(job_id)


def _cause(cause: Any) -> str | None:
    """Step Functions hands a failed Lambda's cause over as JSON text with an errorMessage (a
    processor's failure: ``StepFailure.message()``, about 1 KB, read whole)."""
    if not isinstance(cause, str):
        return None
    try:
        parsed = json.loads(cause)
    except ValueError:
        return cause[:1000]
    if isinstance(parsed, dict) and "errorMessage" in parsed:
        return str(parsed["errorMessage"])[:MAX_CAUSE_CHARS]
    return cause[:1000]
