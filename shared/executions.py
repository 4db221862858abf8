"""Step Functions: starting a job's execution (docs/jobs.md, section 4).

An adapter of the port ``ExecutionStarter`` (shared/services/ports.py), in the layer of
shared/store and shared/delivery (below the services: pyproject.toml's import contracts); kept
top-level because a state machine is neither the table nor a task's target."""

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


class SfnStarter:
    """Starts the job state machine once per job: the execution is named after the job, and
    Step Functions refuses a second execution of one name (a retried start is harmless)."""

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
