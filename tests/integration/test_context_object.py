"""The Step Functions context object (``$$``) of the jobs state machine (infra/jobs.py), held to
AWS's recordings of it (tests/data/aws/stepfunctions-*.json): every path the definition reads is
in the recorded context object with the type the job function's model takes, and moto's
interpreter, as the tests and the local runtime run it (local/stepfunctions.py,
``context_object_as_aws``), hands a state the context object AWS does."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from shared.domain.jobs import ProcessorFailed, ProcessorRetryable
from shared.messages import FailStep, PreStep, ShardStep, job_event
from tests.support.recordings import recording, same_shape
from tests.support.stepfunctions import FUNCTION_ARN, state_machine, sundial_definition

pytestmark = pytest.mark.integration

AWS_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
"""``2019-03-26T20:14:13.192Z``: the recordings have placeholders for the times; the form is the
Step Functions developer guide's ("Accessing execution data from the Context object in Step
Functions", https://docs.aws.amazon.com/step-functions/latest/dg/input-output-contextobject.html),
which LocalStack's test_execution_dateformat (tests/aws/services/stepfunctions/v2/base/test_base.py,
marked as validated against AWS; it records no snapshot) checks the start time against."""

READ_BY_THE_DEFINITION = {
    "$$.Execution.Input.job_id",
    "$$.State.RetryCount",
    "$$.Map.Item.Value",
    "$$.Map.Item.Value.level",
    "$$.Map.Item.Value.shard_count",
    "$$.Map.Item.Value.shards",
}


def context_paths(node: Any) -> set[str]:
    """Every ``$$`` path a definition reads (the values of its ``<key>.$`` fields)."""
    if isinstance(node, dict):
        found = {v for k, v in node.items() if k.endswith(".$") and isinstance(v, str) and v.startswith("$$")}
        return found.union(*(context_paths(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(context_paths(v) for v in node))
    return set()


def resolve(context: dict[str, Any], path: str) -> Any:
    value: Any = context
    for key in path.removeprefix("$$.").split("."):
        assert isinstance(value, dict), f"{path}: {key!r} under a value that is no object"
        assert key in value, f"{path}: no {key!r} in the recorded context object"
        value = value[key]
    return value


def recorded_context(job_input: dict[str, Any], item: Any) -> dict[str, Any]:
    """The context object of a Lambda task state in a Map's iteration, from the recordings: the
    execution and state machine as a state read them (2024), the state as a Task state's
    (``RetryCount``, 2023), the Map's item as an ItemSelector read it (2025); the recorded values
    that are the execution's own (its input, the iteration's item) are this job's."""
    context = recording("stepfunctions-context-object")
    task = recording("stepfunctions-context-object-task")
    selected = recording("stepfunctions-map-item-selected")
    assert selected["iteration_input_value"] == selected["original_input"]["shipped"][0]  # Value: the item as it is
    assert isinstance(context["Execution"]["Input"], dict)  # Input: the execution's input, parsed
    context["Execution"]["Input"] = job_input
    context["State"] = task["State"]
    context["Map"] = {"Item": {"Index": selected["iteration_index"], "Value": item}}
    return context


def test_every_context_path_the_definition_reads_is_recorded_with_the_type_the_job_function_takes() -> None:
    """A path added to the definition fails here until it is found in a recording."""
    definition = json.loads(sundial_definition())
    assert context_paths(definition) == READ_BY_THE_DEFINITION
    level = {"level": 0, "shard_count": 2, "shards": [0, 1]}
    levels = recorded_context({"job_id": "job-1"}, level)
    shard = recorded_context({"job_id": "job-1"}, 1)
    pre = {"step": "pre", "job_id": resolve(levels, "$$.Execution.Input.job_id")}
    assert job_event({**pre, "retry_count": resolve(levels, "$$.State.RetryCount")}) == PreStep(
        step="pre", job_id="job-1", retry_count=1
    )
    selected = {key: resolve(levels, f"$$.Map.Item.Value.{key}") for key in ("level", "shard_count", "shards")}
    assert selected == level
    assert resolve(levels, "$$.Map.Item.Value") == level
    step = {
        "step": "shard",
        "job_id": "job-1",
        "level": 0,
        "shard_count": 2,
        "shard": resolve(shard, "$$.Map.Item.Value"),
    }
    assert job_event(step) == ShardStep(step="shard", job_id="job-1", level=0, shard=1, shard_count=2)


DUMP = json.dumps(
    {
        "StartAt": "Read",
        "States": {
            "Read": {"Type": "Pass", "Parameters": {"context.$": "$$"}, "ResultPath": "$.read", "Next": "Call"},
            "Call": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": FUNCTION_ARN, "Payload": {"context.$": "$$"}},
                "Retry": [{"ErrorEquals": ["ProcessorRetryable"], "IntervalSeconds": 1, "MaxAttempts": 1}],
                "ResultPath": None,
                "Next": "Start",
            },
            "Start": {"Type": "Pass", "Parameters": {"start.$": "$$.Execution.StartTime"}, "End": True},
        },
    }
)


@pytest.fixture
def dumped() -> Iterator[tuple[Any, list[dict[str, Any]], list[dict[str, Any]]]]:
    """One execution of a definition that reads ``$$`` in a Pass state and a Lambda task (which
    fails once, so that it is retried), and ends with its start time: (how it finished, the Pass
    state's context object, the task's on each attempt)."""
    payloads: list[dict[str, Any]] = []

    def task(event: dict[str, Any]) -> None:
        payloads.append(event["context"])
        if len(payloads) == 1:
            raise ProcessorRetryable("once")

    with state_machine(DUMP, task) as runner:
        finished = runner.run(recording("stepfunctions-context-object")["Execution"]["Input"])  # the recorded input
        exited = [e for e in runner.history(finished.arn) if e["type"] == "PassStateExited"]
        read = json.loads(exited[0]["stateExitedEventDetails"]["output"])["read"]["context"]
        yield finished, [read], payloads


def test_a_state_is_handed_the_context_object_aws_records(dumped: Any) -> None:
    """moto had no ``Execution.RedriveCount`` (AWS's recording of 2024 has it), and its times
    were not AWS's form."""
    finished, [read], _ = dumped
    assert finished.status == "SUCCEEDED"
    assert same_shape(read, recording("stepfunctions-context-object")) == []
    assert AWS_TIME.fullmatch(read["Execution"]["StartTime"]), read["Execution"]["StartTime"]
    assert AWS_TIME.fullmatch(read["State"]["EnteredTime"]), read["State"]["EnteredTime"]
    assert read["Execution"]["Input"] == {"message": "TestMessage"}  # the input, parsed
    assert read["Execution"]["Id"] == finished.arn  # the execution's ARN
    assert read["Execution"]["Name"] == finished.arn.rsplit(":", 1)[-1]


def test_a_lambda_task_is_handed_the_context_object_aws_records_and_its_retry_count(dumped: Any) -> None:
    """The recorded task state's context object (2023) is older than ``RedriveCount``: its state
    is held to that recording, the execution to the 2024 one."""
    _, [read], payloads = dumped
    task = recording("stepfunctions-context-object-task")
    assert [p["State"]["RetryCount"] for p in payloads] == [0, 1]
    for payload in payloads:
        assert set(payload) == set(task)
        assert same_shape(payload["State"], task["State"]) == []
        assert same_shape(payload["StateMachine"], task["StateMachine"]) == []
        assert same_shape(payload["Execution"], recording("stepfunctions-context-object")["Execution"]) == []
        assert payload["Execution"] == read["Execution"]


def test_an_execution_whose_output_holds_its_start_time_can_be_described(dumped: Any) -> None:
    """moto's context object held the start as a ``datetime``: the execution's output carried it
    and DescribeExecution failed to serialize it. AWS's start time is the execution's startDate
    to the millisecond (LocalStack's test_execution_dateformat, marked as validated against AWS)."""
    finished, _, _ = dumped
    assert AWS_TIME.fullmatch(finished.output["start"])


def test_the_fail_step_reads_the_message_of_a_caught_lambda_error_as_aws_records_it() -> None:
    """What the definition's Catch hands the fail step (``$.error.Error``, ``$.error.Cause``),
    recorded: the function's error payload as a string of JSON, whose ``errorMessage`` the step
    records. The local runtime's payload has the keys AWS's has (``requestId`` was missing)."""
    caught = recording("stepfunctions-lambda-error-caught")
    step = job_event({"step": "fail", "job_id": "job-1", "error": caught["Error"], "cause": caught["Cause"]})
    assert isinstance(step, FailStep)
    assert (step.reason, step.cause_message) == ("Exception", "Some exception was raised.")
    events: list[dict[str, Any]] = []

    def steps(event: dict[str, Any]) -> dict[str, Any]:
        events.append(event)
        if event["step"] == "pre":
            raise ProcessorFailed("pre answered garbage")
        return {}

    with state_machine(sundial_definition(), steps) as runner:
        assert runner.run({"job_id": "job-1"}).status == "FAILED"
    [fail] = [e for e in events if e["step"] == "fail"]
    assert fail["error"] == "ProcessorFailed"
    assert same_shape(json.loads(fail["cause"]), json.loads(caught["Cause"])) == []
    assert FailStep.model_validate(fail).cause_message == "pre answered garbage"
