"""Step Functions' "Execution Status Change" event, which the stack's rule delivers to the job
function when a job's execution ends without it (infra/job_runner.py): built by the local
producer (local/stepfunctions.py, ``status_change_event``) from what moto's executions end as,
held to AWS's recording of the event (tests/data/aws/stepfunctions-execution-status-change.json),
and read by the job function's model (shared/messages.py, ``ExecutionEnded``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from local.stepfunctions import status_change_event
from shared.messages import ExecutionEnded, job_event
from tests.support.eventually import until
from tests.support.recordings import recording, same_shape
from tests.support.stepfunctions import StateMachineRunner, state_machine

pytestmark = pytest.mark.integration

RECORDED = "stepfunctions-execution-status-change"
DATES = ("detail.startDate", "detail.stopDate")
"""Placeholders in the recording ("start-date"): epoch milliseconds, numbers ("Automating Step
Functions event delivery with EventBridge", the Step Functions developer guide's examples:
https://docs.aws.amazon.com/step-functions/latest/dg/cw-events.html)."""
NOT_SUCCEEDED = (
    *DATES,
    "detail.output",
    "detail.outputDetails",
    "detail.redriveStatusReason",
    "detail.error",
    "detail.cause",
)
"""The recording is of an execution that succeeded: one that ended otherwise has no output
(``output`` and ``outputDetails`` null in the guide's example of a FAILED execution), its error
and cause if it failed (strings there), and is redrivable, so it has no reason it is not. AWS
has no recording of such an event."""

DEFINITION = json.dumps(
    {
        "StartAt": "Route",
        "States": {
            "Route": {
                "Type": "Choice",
                "Choices": [
                    {"Variable": "$$.Execution.Name", "StringEquals": "job-fail", "Next": "Fail"},
                    {"Variable": "$$.Execution.Name", "StringEquals": "job-wait", "Next": "Wait"},
                ],
                "Default": "Done",
            },
            "Wait": {"Type": "Wait", "Seconds": 600, "Next": "Done"},
            "Fail": {"Type": "Fail", "Error": "Lambda.Unknown", "Cause": "The fail step itself could not run"},
            "Done": {"Type": "Pass", "Result": {"Arg1": "argument1"}, "End": True},
        },
    }
)


@pytest.fixture
def machine() -> Iterator[StateMachineRunner]:
    with state_machine(DEFINITION, lambda event: None) as runner:
        yield runner


def ended(machine: StateMachineRunner, end: str) -> dict[str, Any]:
    """The DescribeExecution answer of the execution ``job-<end>`` (its input ``{}``, as the
    recording's), ended by the definition's route, or stopped while it waits (a cancel)."""
    arn = machine.client.start_execution(stateMachineArn=machine.arn, name=f"job-{end}", input="{}")["executionArn"]
    if end == "wait":
        waiting = until(lambda: any(e["type"] == "WaitStateEntered" for e in machine.history(arn)))
        assert waiting, "the execution never reached its wait"
        machine.client.stop_execution(executionArn=arn, cause="cancelled through the API")
    described = until(lambda: (d := machine.client.describe_execution(executionArn=arn))["status"] != "RUNNING" and d)
    assert described, "the execution never ended"
    return dict(described)


def test_a_succeeded_executions_event_is_the_one_aws_recorded(machine: StateMachineRunner) -> None:
    """Every key and type of the recording (before, the tests' event had version, source,
    detail-type and a detail of seven keys). Its dates are numbers and its input and output
    strings of JSON, which the recording cannot show (tests/support/recordings.py)."""
    event = status_change_event(ended(machine, "done"))
    assert same_shape(event, recording(RECORDED), ignore=DATES) == []
    detail = event["detail"]
    assert all(isinstance(detail[d], int) for d in ("startDate", "stopDate"))
    assert detail["stopDate"] >= detail["startDate"]
    assert (json.loads(detail["input"]), json.loads(detail["output"])) == ({}, {"Arg1": "argument1"})
    assert (detail["redriveStatus"], detail["redriveStatusReason"]) == (
        "NOT_REDRIVABLE",
        "Execution is SUCCEEDED and cannot be redriven",
    )


@pytest.mark.parametrize(("end", "status"), [("fail", "FAILED"), ("wait", "ABORTED")])
def test_the_events_the_rule_delivers_have_the_recorded_shape(
    machine: StateMachineRunner, end: str, status: str
) -> None:
    """A FAILED (its fail step failed too) and an ABORTED (a cancel) execution's events: the
    recorded keys and types but for what a succeeded execution alone has."""
    event = status_change_event(ended(machine, end))
    assert same_shape(event, recording(RECORDED), ignore=NOT_SUCCEEDED) == []
    detail = event["detail"]
    assert (detail["status"], detail["output"], detail["outputDetails"]) == (status, None, None)
    assert (detail["redriveStatus"], detail["redriveStatusReason"]) == ("REDRIVABLE", None)
    read = job_event(event)
    assert isinstance(read, ExecutionEnded)
    assert (read.detail.name, read.detail.status) == (f"job-{end}", status)
    if status == "FAILED":
        assert (read.detail.error, read.detail.cause_message) == (
            "Lambda.Unknown",
            "The fail step itself could not run",
        )


def test_the_job_function_reads_the_recorded_event() -> None:
    """The recording as it is (its detail's input and output parsed by the snapshot library, its
    name the test's own text): the job function's model takes it, and reads the execution's name
    and status."""
    recorded = recording(RECORDED)
    read = job_event(recorded)
    assert isinstance(read, ExecutionEnded)
    assert (read.detail.name, read.detail.status) == (recorded["detail"]["name"], "SUCCEEDED")
    assert read.detail.reason == "the job's execution ended succeeded"
