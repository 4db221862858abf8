"""The wire forms of what the queues and events carry (shared/messages.py): each parsed once at
its function's edge, the staged occurrence's read and written as it always was, and a malformed
record refused with the field it got wrong."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from functions.records import MalformedEvent, MalformedRecord, parsed, parsed_event
from shared.domain.firing import Staged
from shared.domain.tasks import Priority
from shared.messages import (
    CanaryFire,
    CustomResourceRequest,
    ExecutionEnded,
    FailStep,
    PostStep,
    PreStep,
    ScanInvocation,
    ScanRequest,
    ShardStep,
    StagedMessage,
    StagedRecord,
    canary_event,
    job_event,
    staged_message,
)
from tests.support.cloudformation import REQUEST_TYPES, documented_request
from tests.support.recordings import recording, with_values

pytestmark = pytest.mark.unit

TASK, RUN = "01KA0000000000000000000000", "01KA0000000000000000000001"


RECORDED_TIMES = {"sent-timestamp": "1795751187682", "<approximate-first-receive-timestamp>": "1795751188499"}
"""Epoch milliseconds, as strings, where the recordings have placeholders."""


def sqs_record(body: str, message_id: str = "m-1", receives: int = 1, recorded: str = "sqs-event") -> dict[str, Any]:
    """A record of Lambda's SQS event as AWS recorded it (tests/data/aws/``recorded``.json), with
    this body, message id and receive count, its placeholder times filled."""
    [record] = with_values(recording(recorded), RECORDED_TIMES)["Records"]
    record.update(messageId=message_id, body=body)
    record["attributes"]["ApproximateReceiveCount"] = str(receives)
    return record


# --- staged occurrences: the delay queues' messages ---------------------------------------------


@pytest.mark.parametrize(
    ("staged", "wire"),
    [
        (Staged(TASK, 1_000, RUN), {"t": TASK, "d": 1_000, "r": RUN, "a": 1, "o": True}),
        (
            Staged(TASK, 1_000, RUN, 2, False, Priority.HIGH, start_ms=3_000, throttled_ms=40),
            {"t": TASK, "d": 1_000, "r": RUN, "a": 2, "o": False, "s": 3_000, "w": 40, "p": "high"},
        ),
        (
            Staged(TASK, 1_000, RUN, held=True, start_ms=5_000, booked=(("rate", 3),), ready_ms=1_500),
            {"t": TASK, "d": 1_000, "r": RUN, "a": 1, "o": True, "s": 5_000, "h": 1, "v": [["rate", 3]], "y": 1_500},
        ),
        (Staged(TASK, 1_000, RUN, writer_ms=900), {"t": TASK, "d": 1_000, "r": RUN, "a": 1, "o": True, "g": 900}),
    ],
)
def test_a_staged_occurrence_is_written_as_it_always_was_and_read_back(staged: Staged, wire: dict) -> None:
    assert staged_message(staged) == wire
    assert StagedMessage.model_validate(wire).staged() == staged


@given(
    attempt=st.integers(1, 100),
    one_shot=st.booleans(),
    priority=st.sampled_from(Priority),
    held=st.booleans(),
    start=st.none() | st.integers(0, 2**47),
    booked=st.lists(st.tuples(st.text(min_size=1, max_size=8), st.integers(0, 10**6)), max_size=3),
    ready=st.none() | st.integers(0, 2**47),
    throttled=st.integers(0, 10**9),
    writer=st.none() | st.integers(0, 2**47),
)
def test_every_staged_occurrence_survives_its_queue(
    attempt: int, one_shot: bool, priority: Priority, held: bool, start: int | None,
    booked: list[tuple[str, int]], ready: int | None, throttled: int, writer: int | None,
) -> None:  # fmt: skip
    staged = Staged(
        TASK, 1_000, RUN, attempt, one_shot, priority, held, start,
        tuple(booked) if held else (), ready if held else None, throttled, writer,
    )  # fmt: skip
    body = json.dumps(staged_message(staged))
    assert parsed(StagedRecord, sqs_record(body)).staged == staged


def test_a_message_written_before_priorities_and_limits_reads_as_a_normal_first_attempt() -> None:
    old = StagedMessage.model_validate({"t": TASK, "d": "1000", "r": RUN}).staged()
    assert old == Staged(TASK, 1_000, RUN, 1, True, Priority.NORMAL)


def test_a_dead_letters_body_is_its_staged_message_and_more() -> None:
    """The dead-letter queue's body (shared/adapters/queues.py) adds the task, the reason and the time."""
    body = {**staged_message(Staged(TASK, 1_000, RUN)), "task_id": TASK, "reason": "400", "failed_at": "x"}
    assert StagedMessage.model_validate(body).staged() == Staged(TASK, 1_000, RUN)


@pytest.mark.parametrize("recorded", ["sqs-event", "sqs-event-batching-window", "sqs-event-message-attributes"])
def test_the_trigger_reads_every_record_aws_recorded(recorded: str) -> None:
    """Without message attributes, with them, and with ``md5OfMessageAttributes`` absent, null or
    set: the body is Sundial's own, the rest as recorded."""
    staged = Staged(TASK, 1_000, RUN)
    record = parsed(StagedRecord, sqs_record(json.dumps(staged_message(staged)), recorded=recorded))
    assert (record.staged, record.receives) == (staged, 1)


def test_the_trigger_reads_a_record_with_a_trace_header_and_a_dead_letter_source() -> None:
    """The attributes a message may carry beyond the recorded record's: its X-Ray trace header (no
    recording of the event has one: "Amazon SQS and AWS X-Ray", AWS X-Ray developer guide), and,
    should Lambda pass it on from a dead-letter queue, its source queue's ARN (recorded on
    ReceiveMessage: tests/data/aws/sqs-dead-letter-receive.json)."""
    received = recording("sqs-dead-letter-receive")["dlq-messages"][0]["Attributes"]
    record = sqs_record(json.dumps(staged_message(Staged(TASK, 1_000, RUN))), receives=6)
    record["attributes"].update(
        AWSTraceHeader=received["AWSTraceHeader"], DeadLetterQueueSourceArn="arn:aws:sqs:us-east-1:1:sundial-delay-0"
    )
    assert parsed(StagedRecord, record).receives == 6


def test_a_staged_record_says_how_often_it_was_received() -> None:
    body = json.dumps(staged_message(Staged(TASK, 1_000, RUN)))
    assert parsed(StagedRecord, sqs_record(body, receives=4)).receives == 4


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("not json", "body"),
        (json.dumps({"not": "a staged occurrence"}), "body.t"),
        (json.dumps({"t": TASK, "d": "soon", "r": RUN}), "body.d"),
        (json.dumps({"t": TASK, "d": 1, "r": RUN, "v": "rate"}), "body.v"),
    ],
)
def test_a_malformed_staged_record_is_refused_naming_its_message_and_field(body: str, field: str) -> None:
    with pytest.raises(MalformedRecord) as refused:
        parsed(StagedRecord, sqs_record(body, message_id="m-7"))
    assert "message m-7 is not a StagedRecord" in str(refused.value)
    assert f"{field}:" in str(refused.value)


# --- scan invocations -------------------------------------------------------------------------------


def test_a_scan_invocation_is_the_shards_the_tick_and_where_the_tick_found_each_clean() -> None:
    invocation = ScanInvocation(
        requests=[ScanRequest(shard=3, tick_ms=1_000, since_ms=900), ScanRequest(shard=5, tick_ms=1_000)]
    )
    event = json.loads(invocation.payload())
    assert event == {"requests": [{"shard": 3, "tick_ms": 1_000, "since_ms": 900}, {"shard": 5, "tick_ms": 1_000}]}
    assert parsed_event(ScanInvocation, event) == invocation
    assert parsed_event(ScanInvocation, {"requests": [{"shard": 2}]}).requests == [ScanRequest(shard=2)]


@pytest.mark.parametrize(
    ("event", "field"),
    [
        ({"requests": [{"shard": "x"}]}, "requests.0.shard"),
        ({"requests": [{"shard": 0}, {"shard": -1}]}, "requests.1.shard"),
        ({"requests": []}, "requests"),
        ({}, "requests"),
    ],
)
def test_a_malformed_scan_invocation_is_refused_naming_the_field(event: dict[str, Any], field: str) -> None:
    with pytest.raises(MalformedEvent) as refused:
        parsed_event(ScanInvocation, event)
    assert f"{field}:" in str(refused.value)


# --- the job function's events -----------------------------------------------------------------


def test_each_job_step_is_its_own_model() -> None:
    assert job_event({"step": "pre", "job_id": "j", "retry_count": 2}) == PreStep(step="pre", job_id="j", retry_count=2)
    shard = job_event({"step": "shard", "job_id": "j", "level": 1, "shard": 0, "shard_count": 2, "retry_count": 0})
    assert isinstance(shard, ShardStep)
    assert (shard.level, shard.shard, shard.shard_count, shard.attempt) == (1, 0, 2, 1)
    post = job_event({"step": "post", "job_id": "j"})
    assert isinstance(post, PostStep)
    assert post.attempt == 1


def test_the_fail_step_reads_a_lambda_errors_message_or_keeps_the_cause_as_it_came() -> None:
    cause = json.dumps({"errorType": "ProcessorFailed", "errorMessage": "job j does not exist"})
    fail = job_event({"step": "fail", "job_id": "j", "error": "ProcessorFailed", "cause": cause})
    assert isinstance(fail, FailStep)
    assert (fail.reason, fail.cause_message) == ("ProcessorFailed", "job j does not exist")
    bare = job_event({"step": "fail", "job_id": "j", "cause": "x" * 2_000})
    assert isinstance(bare, FailStep)
    assert (bare.reason, bare.cause_message) == ("failed", "x" * 1_000)
    assert FailStep(step="fail", job_id="j", cause=json.dumps([1])).cause_message == "[1]"
    assert FailStep(step="fail", job_id="j").cause_message is None


def test_an_execution_that_ended_is_read_from_its_status_change() -> None:
    event = job_event({"source": "aws.states", "detail": {"name": "j", "status": "TIMED_OUT", "cause": None}})
    assert isinstance(event, ExecutionEnded)
    assert (event.detail.name, event.detail.reason, event.detail.cause_message) == (
        "j", "the job's execution ended timed out", None,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("event", "field"),
    [
        ({"step": "shard", "job_id": "j", "shard": 0, "shard_count": 1}, "level"),
        ({"step": "shard", "job_id": "j", "level": "one", "shard": 0, "shard_count": 1}, "level"),
        ({"step": "resume", "job_id": "j"}, "step"),
        ({"step": "pre"}, "job_id"),
    ],
)
def test_a_malformed_job_event_is_refused_naming_its_field(event: dict, field: str) -> None:
    with pytest.raises(ValidationError) as refused:
        job_event(event)
    assert field in str(refused.value)


# --- the canary function's events ---------------------------------------------------------------


def test_a_canary_fire_is_timed_from_its_body() -> None:
    fire = canary_event(
        {"task_id": "T", "scheduled_for": "2026-11-26T10:00:00.000Z", "fired_at": "2026-11-26T10:00:01.042Z"}
    )
    assert isinstance(fire, CanaryFire)
    assert fire.lateness_ms == 1_042


def test_a_custom_resource_request_is_read_for_what_the_canary_needs() -> None:
    request = canary_event(
        {
            "RequestType": "Delete",
            "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:canary",
            "ResponseURL": "https://cloudformation-custom-resource-response.s3.amazonaws.com/x",
            "StackId": "stack",
            "RequestId": "request",
            "LogicalResourceId": "CanaryTask",
            "PhysicalResourceId": "01KA0000000000000000000000",
            "ResourceType": "Custom::SundialCanary",
            "ResourceProperties": {"ServiceToken": "t", "FunctionArn": "arn:aws:lambda:us-east-1:1:function:c"},
        }
    )
    assert isinstance(request, CustomResourceRequest)
    assert (request.request_type, request.physical_resource_id) == ("Delete", "01KA0000000000000000000000")
    assert request.properties.function_arn == "arn:aws:lambda:us-east-1:1:function:c"


@pytest.mark.parametrize("request_type", REQUEST_TYPES)
def test_each_documented_custom_resource_request_is_read_whole(request_type: str) -> None:
    """CloudFormation's Create, Update and Delete requests as AWS documents them
    (tests/data/aws/cloudformation/): every member read, the update's old properties too."""
    event = documented_request(request_type)
    request = canary_event(event)
    assert isinstance(request, CustomResourceRequest)
    assert request.request_type == request_type
    assert (request.response_url, request.stack_id, request.request_id) == (
        event["ResponseURL"],
        event["StackId"],
        event["RequestId"],
    )
    assert (request.resource_type, request.logical_resource_id) == ("Custom::SundialCanary", event["LogicalResourceId"])
    assert request.physical_resource_id == event.get("PhysicalResourceId")
    assert request.properties.service_token == event["ResourceProperties"]["ServiceToken"]
    assert request.properties.function_arn == event["ResourceProperties"]["FunctionArn"]
    if request_type == "Update":
        assert request.old_properties is not None
        assert request.old_properties.function_arn == event["OldResourceProperties"]["FunctionArn"]
        assert request.old_properties.function_arn != request.properties.function_arn
    else:
        assert request.old_properties is None


def test_a_custom_resource_request_ignores_properties_that_are_not_the_canarys() -> None:
    """``ServiceTimeout`` is the template's, which CloudFormation may send with the others."""
    event = documented_request("Create")
    event["ResourceProperties"]["ServiceTimeout"] = "300"
    request = canary_event(event)
    assert isinstance(request, CustomResourceRequest)
    assert request.properties.function_arn == event["ResourceProperties"]["FunctionArn"]


@pytest.mark.parametrize(
    ("event", "field"),
    [
        ({"scheduled_for": "2026-11-26T10:00:00Z", "fired_at": "later"}, "fired_at"),
        ({"RequestType": "Replace", "ResourceProperties": {}}, "RequestType"),
    ],
)
def test_a_malformed_canary_event_is_refused_naming_its_field(event: dict, field: str) -> None:
    with pytest.raises(ValidationError) as refused:
        canary_event(event)
    assert field in str(refused.value)
