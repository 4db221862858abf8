"""Calling a task's targets when an occurrence fires.

Pure of Sundial's storage: no table, no environment variables. The trigger builds one
:class:`Deliverer` per process (its settings passed in) and calls :meth:`Deliverer.deliver` for
each target, from as many threads as it likes; the answer is an :class:`Outcome` that says
whether the call succeeded and, when not, whether the task's retry policy should try again.
"""

from __future__ import annotations

from typing import Protocol

from shared.delivery.aws import AwsDelivery, ClientFactory
from shared.delivery.envelope import AlertEnvelope, Envelope
from shared.delivery.http import HttpDelivery
from shared.delivery.outcome import Outcome
from shared.domain.tasks import (
    EcsTarget,
    EventBridgeTarget,
    HttpTarget,
    JobTarget,
    LambdaTarget,
    SnsTarget,
    SqsTarget,
    StepFunctionsTarget,
    Target,
    WorkflowTarget,
)

__all__ = [
    "AlertEnvelope",
    "AwsDelivery",
    "ClientFactory",
    "Deliverer",
    "Envelope",
    "HttpDelivery",
    "Outcome",
]


class JobStarter(Protocol):
    def start_for(self, job_json: str, run_id: str, tenant: str) -> tuple[bool, str | None]:
        """Start the job of a ``job`` target for the run ``run_id``, as ``tenant``'s: (started, why not)."""


class WorkflowStarter(Protocol):
    def start_for(self, workflow_id: str, run_id: str, tenant: str) -> tuple[bool, str | None]:
        """Start the run ``run_id`` of the tenant's workflow: (started, why not)."""


class Deliverer:
    """Sends an envelope to any kind of target."""

    def __init__(
        self,
        http: HttpDelivery | None = None,
        aws: AwsDelivery | None = None,
        jobs: JobStarter | None = None,
        workflows: WorkflowStarter | None = None,
    ) -> None:
        self.http = http if http is not None else HttpDelivery()
        self.aws = aws if aws is not None else AwsDelivery()
        self.jobs = jobs
        self.workflows = workflows

    def deliver(self, target: Target, envelope: Envelope) -> Outcome:
        """Call ``target`` once; never raises for a failed call (the outcome says why)."""
        if isinstance(target, HttpTarget):
            return self.http.call(target, envelope)
        if isinstance(
            target, LambdaTarget | SqsTarget | SnsTarget | EventBridgeTarget | StepFunctionsTarget | EcsTarget
        ):
            return self.aws.call(target, envelope)
        if isinstance(target, JobTarget):
            if self.jobs is None:
                return Outcome.fail("this deployment does not run jobs")
            started, why = self.jobs.start_for(target.job, envelope.run_id, envelope.tenant)
            return Outcome.success() if started else Outcome.retry(why or "the job could not be started")
        if isinstance(target, WorkflowTarget):
            if self.workflows is None:
                return Outcome.fail("this deployment does not run workflows")
            started, why = self.workflows.start_for(target.workflow_id, envelope.run_id, envelope.tenant)
            return Outcome.success() if started else Outcome.retry(why or "the workflow run could not be started")
        raise TypeError(f"unknown target type: {type(target).__name__}")
