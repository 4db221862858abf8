"""Step Functions: starting and stopping a job's execution (docs/jobs.md, sections 4 and 6).

An adapter of the port ``ExecutionStarter`` (shared/services/ports/jobs.py), in the adapters' layer
(shared/adapters/__init__.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from typing import Any

import boto3
from botocore.exceptions import ClientError


@cache
def _sfn() -> Any:
    return boto3.client("stepfunctions")


def execution_arn(state_machine_arn: str, job_id: str) -> str:
    """The ARN of the job's execution: ``arn:...:stateMachine:<machine>`` names its executions
    ``arn:...:execution:<machine>:<execution name>``, and the execution is named after the job."""
    head, marker, machine = state_machine_arn.rpartition(":stateMachine:")
    if not marker:
        raise ValueError(f"not a state machine ARN: {state_machine_arn}")
    return f"{head}:execution:{machine}:{job_id}"


class SfnStarter:
    """Starts the job state machine once per job: the execution is named after the job, and
    Step Functions refuses a second execution of one name (a retried start is harmless). Stops
    it when the job is cancelled."""

    def __init__(self, state_machine_arn: str, client: Callable[[], Any] = _sfn) -> None:
        self.state_machine_arn = state_machine_arn
        self._client = client

    def start(self, job_id: str) -> None:
        if not self.state_machine_arn:
            raise RuntimeError("this deployment has no job state machine (settings.job_state_machine_arn)")
        try:
            self._client().start_execution(
                stateMachineArn=self.state_machine_arn, name=job_id, input=json.dumps({"job_id": job_id})
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ExecutionAlreadyExists":
                raise

    def stop(self, job_id: str) -> None:
        if not self.state_machine_arn:
            raise RuntimeError("this deployment has no job state machine (settings.job_state_machine_arn)")
        try:
            self._client().stop_execution(
                executionArn=execution_arn(self.state_machine_arn, job_id), cause="cancelled through the API"
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ExecutionDoesNotExist":
                raise
