"""The EventBridge Scheduler API's answers held to AWS's own (docs/eventbridge.md): the requests
that LocalStack's AWS-validated tests sent, through boto3's ``scheduler`` client (botocore's own
serialization and parsing), answered by the scheduler service on moto, compared member by member
with what AWS answered (tests/data/aws/scheduler-*.json; placeholders match any value).

No signature is checked here: the client's requests are handed to the protocol and the service
directly (the stack's route, SigV4 included, is tests/integration/test_scheduler_sigv4.py's)."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from functions.api import common
from shared.api import scheduler_protocol as protocol
from shared.domain.errors import SchedulerApiError
from shared.domain.times import from_ms
from shared.services.scheduler_api import Place, SchedulerService
from shared.store.scheduler_api import DynamoSchedules
from tests.support.recordings import differences, recording, source

pytestmark = pytest.mark.integration

REGION, ACCOUNT = "us-east-1", "123456789012"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/scheduler"


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Any:
        yield self.data


def _client() -> Any:
    """boto3's client, answered by the scheduler service of the default tenant."""
    common.reset()
    service = common.scheduler(REGION, ACCOUNT)
    client = boto3.client(
        "scheduler",
        endpoint_url="https://sundial.example.com/scheduler",
        region_name=REGION,
        aws_access_key_id="AKSDAAAAAAAAAAAAAAAA",
        aws_secret_access_key="unchecked",
        config=boto3.session.Config(retries={"max_attempts": 1}),
    )

    def send(request: Any, **_: Any) -> AWSResponse:
        url = urlsplit(request.url)
        try:
            operation, members = protocol.route(request.method, url.path.removeprefix(protocol.PREFIX))
            bound = protocol.bind(operation, members, parse_qs(url.query), request.body or None)
            status, headers, body = protocol.answer(operation, service.call("default", operation, bound.params))
        except SchedulerApiError as error:
            status, headers, body = protocol.error_answer(error)
        return AWSResponse(request.url, status, headers, _Body(body))

    client.meta.events.register_first("before-send", send)  # before moto's own stub of every client
    return client


def test_get_schedule_answers_the_members_aws_answers_for_a_request_that_left_them_out(aws: None) -> None:
    """The schedule CloudFormation created and GetSchedule read back on AWS: its request gave no
    State, ActionAfterCompletion, time zone or retry policy, and AWS answered their defaults
    (``RetryPolicy`` 185 attempts and 86,400 s among them), and nothing for what was not given."""
    name = "scheduler-get-schedule-defaults"
    recorded, sent = recording(name), source(name)["request"]
    client = _client()
    client.create_schedule_group(Name="recorded-group")
    request = {
        **sent,
        "Name": "recorded-schedule",
        "GroupName": "recorded-group",
        "Target": {"Arn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:recorded-queue", "RoleArn": ROLE},
    }
    client.create_schedule(**request)
    answer = client.get_schedule(Name="recorded-schedule", GroupName="recorded-group")
    assert differences(recorded, answer) == []
    assert answer["Target"]["RetryPolicy"] == {"MaximumEventAgeInSeconds": 86400, "MaximumRetryAttempts": 185}


def test_the_defaults_fill_only_what_the_request_left_out(aws: None) -> None:
    client = _client()
    target = {"Arn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders", "RoleArn": ROLE}
    client.create_schedule(
        Name="partial",
        ScheduleExpression="rate(5 minutes)",
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={**target, "RetryPolicy": {"MaximumRetryAttempts": 3}},
        State="DISABLED",
        ActionAfterCompletion="DELETE",
        ScheduleExpressionTimezone="Asia/Shanghai",
    )
    answer = client.get_schedule(Name="partial")
    assert answer["Target"]["RetryPolicy"] == {"MaximumEventAgeInSeconds": 86400, "MaximumRetryAttempts": 3}
    assert (answer["State"], answer["ActionAfterCompletion"]) == ("DISABLED", "DELETE")
    assert answer["ScheduleExpressionTimezone"] == "Asia/Shanghai"
    for absent in ("Description", "StartDate", "EndDate", "KmsKeyArn"):
        assert absent not in answer
    assert "DeadLetterConfig" not in answer["Target"]
    assert "Input" not in answer["Target"]


def test_create_schedule_answers_its_arn_alone_even_for_an_at_long_past(aws: None) -> None:
    """AWS took an ``at()`` more than two years past, with a flexible window (the recording's
    request), and answered the schedule's ARN only."""
    recorded, sent = (
        recording("scheduler-create-schedule-past-at"),
        source("scheduler-create-schedule-past-at")["request"],
    )
    client = _client()
    request = {
        **sent,
        "Name": "long-past",
        "Target": {"Arn": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:never-created", "RoleArn": ROLE},
    }
    answer = client.create_schedule(**request)
    assert differences(recorded, answer) == []
    assert answer["ScheduleArn"] == f"arn:aws:scheduler:{REGION}:{ACCOUNT}:schedule/default/long-past"
    assert client.get_schedule(Name="long-past")["ScheduleExpression"] == "at(2022-12-31T23:59:59)"


def test_a_rate_without_a_start_fires_first_at_its_creation_however_late_the_task_s_clock_reads(aws: None) -> None:
    """The service starts a rate schedule without ``StartDate`` "immediately" ("Schedule types",
    https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html): its first
    occurrence is the creation's moment, not one period later, even when the task service reads
    its clock a few milliseconds after the scheduler service did (here 5 ms a read)."""
    common.reset()
    base = datetime(2026, 11, 27, 9, 0, 0, 123_000, tzinfo=UTC)
    reads = itertools.count()

    def ticking() -> datetime:
        return base + timedelta(milliseconds=5 * next(reads))

    tasks = replace(common.tasks(), clock=ticking)
    service = SchedulerService(tasks, DynamoSchedules(), Place(REGION, ACCOUNT), ticking)
    target = {"Arn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders", "RoleArn": ROLE}
    params = {"Name": "every-5", "ScheduleExpression": "rate(5 minutes)", "FlexibleTimeWindow": {"Mode": "OFF"}}
    service.call("default", "CreateSchedule", {**params, "Target": target})
    record = DynamoSchedules().name("default", "default", "every-5")
    assert record is not None
    task = tasks.get("default", record.task_id)
    assert task.due_at == from_ms(record.created_ms)  # at its creation
