"""The EventBridge Scheduler API of the local runtime, through the service's real client: boto3's
``scheduler`` client, pointed at `make run`'s ``/scheduler`` (docs/eventbridge.md). Every call
below is botocore's own serialization, and every error is read back by botocore's own parser
into the exception classes of the service's model."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from local.moto_patches.sqs import THROTTLE_TAG
from tests.support.access_keys import issued_access_key
from tests.support.eventually import until
from tests.support.recordings import names, recording, source
from tests.support.runtime import Client

pytestmark = pytest.mark.e2e

QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:orders"
ROLE_ARN = "arn:aws:iam::123456789012:role/scheduler"


@pytest.fixture(scope="module")
def scheduler(sundial: Client) -> Any:
    key = issued_access_key(sundial)  # the default tenant's: the native API's calls below act as it
    return boto3.client(
        "scheduler",
        endpoint_url=sundial.base + "/scheduler",
        region_name="us-east-1",
        aws_access_key_id=key.access_key_id,
        aws_secret_access_key=key.secret_access_key,
        config=Config(retries={"mode": "standard", "max_attempts": 3}),
    )


def _schedule(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "Name": name,
        "ScheduleExpression": "cron(0 9 ? * MON-FRI *)",
        "ScheduleExpressionTimezone": "Asia/Shanghai",
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "Target": {"Arn": QUEUE_ARN, "RoleArn": ROLE_ARN, "Input": '{"order": 123}'},
        **extra,
    }


def _native(sundial: Client, name: str) -> dict[str, Any]:
    """The task the native API lists under ``name``."""

    def listed() -> dict[str, Any] | None:
        status, page = sundial.call("GET", f"/v1/tasks?limit=100&name_prefix={name}")
        assert status == 200, page
        return next((t for t in page["items"] if t.get("name") == name), None)

    task = until(listed)
    assert task is not None, f"{name} is not listed"
    return task


def _code(error: ClientError) -> str:
    return str(error.response["Error"]["Code"])


def _client_of(sundial: Client, key_id: str, secret: str, region: str = "us-east-1") -> Any:
    return boto3.client(
        "scheduler",
        endpoint_url=sundial.base + "/scheduler",
        region_name=region,
        aws_access_key_id=key_id,
        aws_secret_access_key=secret,
        config=Config(retries={"mode": "standard", "max_attempts": 1}),
    )


def test_the_runtime_verifies_signatures_as_the_stack_does(scheduler: Any, sundial: Client) -> None:
    """The suite's runtime verifies signatures (``scheduler_auth`` ``sigv4``): a key acts as its tenant,
    and a wrong secret, a key no one issued or another Region is refused with the service's codes."""
    other = issued_access_key(sundial, "sigv4-other")
    mine = _client_of(sundial, other.access_key_id, other.secret_access_key)
    mine.create_schedule(**_schedule("only-other-s"))
    with pytest.raises(ClientError) as missing:  # the default tenant's client does not see it
        scheduler.get_schedule(Name="only-other-s")
    assert _code(missing.value) == "ResourceNotFoundException"
    refusals = {
        "InvalidSignatureException": _client_of(sundial, other.access_key_id, other.secret_access_key + "x"),
        "UnrecognizedClientException": _client_of(sundial, "AKSDNOONEISSUEDTHIS0", other.secret_access_key),
    }
    for code, client in refusals.items():
        with pytest.raises(ClientError) as refused:
            client.get_schedule(Name="only-other-s")
        assert _code(refused.value) == code
        assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    elsewhere = _client_of(sundial, other.access_key_id, other.secret_access_key, region="eu-west-3")
    with pytest.raises(ClientError, match="scoped to a valid region") as wrong_region:
        elsewhere.get_schedule(Name="only-other-s")
    assert _code(wrong_region.value) == "InvalidSignatureException"
    mine.delete_schedule(Name="only-other-s")


def test_the_api_s_own_url_never_sees_a_signature(sundial: Client) -> None:
    """Through the local API Gateway (the stage's path, as the stack's API URL has it), a signed
    request reaches the API function without its ``Authorization``, as AWS hands it on
    (local/apigw.py): refused as unsigned, where the function URL's ``/scheduler`` verifies it."""
    key = issued_access_key(sundial)
    through_gateway = boto3.client(
        "scheduler",
        endpoint_url=sundial.base + "/prod/scheduler",
        region_name="us-east-1",
        aws_access_key_id=key.access_key_id,
        aws_secret_access_key=key.secret_access_key,
        config=Config(retries={"mode": "standard", "max_attempts": 1}),
    )
    with pytest.raises(ClientError) as refused:
        through_gateway.list_schedule_groups()
    assert _code(refused.value) == "MissingAuthenticationTokenException"
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert _client_of(sundial, key.access_key_id, key.secret_access_key).list_schedule_groups()["ScheduleGroups"]


def test_schedule_groups(scheduler: Any) -> None:
    arn = scheduler.create_schedule_group(Name="billing", Tags=[{"Key": "team", "Value": "pay"}])["ScheduleGroupArn"]
    assert arn == "arn:aws:scheduler:us-east-1:123456789012:schedule-group/billing"
    with pytest.raises(scheduler.exceptions.ConflictException):
        scheduler.create_schedule_group(Name="billing")
    got = scheduler.get_schedule_group(Name="billing")
    assert (got["Name"], got["State"], got["Arn"]) == ("billing", "ACTIVE", arn)
    assert isinstance(got["CreationDate"], datetime)
    names = [g["Name"] for g in scheduler.list_schedule_groups()["ScheduleGroups"]]
    assert names[0] == "default"
    assert "billing" in names
    assert [g["Name"] for g in scheduler.list_schedule_groups(NamePrefix="bill")["ScheduleGroups"]] == ["billing"]

    assert scheduler.list_tags_for_resource(ResourceArn=arn)["Tags"] == [{"Key": "team", "Value": "pay"}]
    scheduler.tag_resource(ResourceArn=arn, Tags=[{"Key": "env", "Value": "dev"}])
    scheduler.untag_resource(ResourceArn=arn, TagKeys=["team"])
    assert scheduler.list_tags_for_resource(ResourceArn=arn)["Tags"] == [{"Key": "env", "Value": "dev"}]

    with pytest.raises(scheduler.exceptions.ValidationException):
        scheduler.delete_schedule_group(Name="default")
    scheduler.delete_schedule_group(Name="billing")
    with pytest.raises(scheduler.exceptions.ResourceNotFoundException):
        scheduler.get_schedule_group(Name="billing")


def test_a_schedule_s_life(scheduler: Any, sundial: Client) -> None:
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    start = today + timedelta(days=7 + (7 - today.weekday()) % 7)  # a Monday, a week or two ahead
    arn = scheduler.create_schedule(**_schedule("close-orders", StartDate=start, Description="weekday close"))[
        "ScheduleArn"
    ]
    assert arn == "arn:aws:scheduler:us-east-1:123456789012:schedule/default/close-orders"
    got = scheduler.get_schedule(Name="close-orders")
    assert got["ScheduleExpression"] == "cron(0 9 ? * MON-FRI *)"
    assert got["ScheduleExpressionTimezone"] == "Asia/Shanghai"
    assert got["StartDate"] == start
    assert got["State"] == "ENABLED"
    assert got["GroupName"] == "default"
    assert got["Target"]["Arn"] == QUEUE_ARN
    assert got["Description"] == "weekday close"

    # the schedule is a Sundial task: the native API lists it (a list is eventually consistent),
    # with its next time at second 0
    task = _native(sundial, "eventbridge:default/close-orders")
    day = start.date().isoformat()
    assert task["schedule"] == {
        "cron": "0 9 ? * MON-FRI *",
        "timezone": "Asia/Shanghai",
        "dialect": "eventbridge",
        "start": f"{day}T00:00:00.000Z",
    }
    assert task["next_fire_at"] == f"{day}T01:00:00.000Z"  # that Monday, 09:00 in Shanghai

    with pytest.raises(scheduler.exceptions.ConflictException):
        scheduler.create_schedule(**_schedule("close-orders"))

    scheduler.update_schedule(**_schedule("close-orders", State="DISABLED"))
    assert scheduler.get_schedule(Name="close-orders")["State"] == "DISABLED"
    assert sundial.call("GET", f"/v1/tasks/{task['id']}")[1]["status"] == "paused"
    assert [s["Name"] for s in scheduler.list_schedules(State="DISABLED")["Schedules"]] == ["close-orders"]

    scheduler.delete_schedule(Name="close-orders")
    with pytest.raises(scheduler.exceptions.ResourceNotFoundException):
        scheduler.get_schedule(Name="close-orders")
    assert sundial.call("GET", f"/v1/tasks/{task['id']}")[1]["status"] == "cancelled"


def test_a_client_token_makes_a_creation_idempotent(scheduler: Any) -> None:
    first = scheduler.create_schedule(**_schedule("nightly", ClientToken="token-1"))
    again = scheduler.create_schedule(**_schedule("nightly", ClientToken="token-1"))
    assert first["ScheduleArn"] == again["ScheduleArn"]
    with pytest.raises(scheduler.exceptions.ConflictException):
        scheduler.create_schedule(**_schedule("nightly", ClientToken="token-1", ScheduleExpression="rate(5 minutes)"))
    scheduler.delete_schedule(Name="nightly")
    tags = [{"Key": "team", "Value": "orders"}]
    made = scheduler.create_schedule_group(Name="idempotent", ClientToken="group-1", Tags=tags)
    again = scheduler.create_schedule_group(Name="idempotent", ClientToken="group-1", Tags=tags)
    assert again["ScheduleGroupArn"] == made["ScheduleGroupArn"]
    with pytest.raises(scheduler.exceptions.ConflictException):  # the token with another request
        scheduler.create_schedule_group(Name="idempotent", ClientToken="group-1")
    with pytest.raises(scheduler.exceptions.ConflictException):  # the SDK draws a new token each call
        scheduler.create_schedule_group(Name="idempotent", Tags=tags)
    scheduler.delete_schedule_group(Name="idempotent")


def test_lists_page_and_filter(scheduler: Any) -> None:
    scheduler.create_schedule_group(Name="paged")
    for i in range(5):
        scheduler.create_schedule(**_schedule(f"job-{i}", GroupName="paged"))
    scheduler.create_schedule(**_schedule("other-0", GroupName="paged"))
    pages = scheduler.get_paginator("list_schedules").paginate(GroupName="paged", PaginationConfig={"PageSize": 2})
    names = [s["Name"] for page in pages for s in page["Schedules"]]
    assert names == ["job-0", "job-1", "job-2", "job-3", "job-4", "other-0"]
    prefixed = scheduler.list_schedules(GroupName="paged", NamePrefix="job-")["Schedules"]
    assert [s["Name"] for s in prefixed] == [f"job-{i}" for i in range(5)]
    assert all(s["Target"] == {"Arn": QUEUE_ARN} for s in prefixed)
    with pytest.raises(scheduler.exceptions.ResourceNotFoundException):
        scheduler.list_schedules(GroupName="nowhere")
    scheduler.delete_schedule_group(Name="paged")  # its schedules go with it
    assert scheduler.list_schedules(NamePrefix="job-")["Schedules"] == []


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"ScheduleExpression": "cron(0 9 * * * *)"}, "must be ?"),
        ({"ScheduleExpression": "rate(0 minutes)"}, "positive"),
        ({"ScheduleExpressionTimezone": "Mars/Olympus"}, "Mars/Olympus"),
        ({"Name": "bad name!"}, "Name"),
        ({"Target": {"Arn": "arn:aws:ecs:us-east-1:123456789012:cluster/x", "RoleArn": ROLE_ARN}}, "Target.Arn"),
        ({"FlexibleTimeWindow": {"Mode": "SOMETIMES"}}, "FlexibleTimeWindow.Mode"),
        (
            {"Target": {"Arn": QUEUE_ARN, "RoleArn": ROLE_ARN, "RetryPolicy": {"MaximumRetryAttempts": 186}}},
            "Target.RetryPolicy.MaximumRetryAttempts",
        ),
        ({"EndDate": datetime(2027, 1, 1, tzinfo=UTC), "StartDate": datetime(2027, 2, 1, tzinfo=UTC)}, "EndDate"),
        (
            {
                "Target": {
                    "Arn": "arn:aws:lambda:us-east-1:123456789012:function:f",
                    "RoleArn": ROLE_ARN,
                    "Input": "not json",
                }
            },
            "well-formed JSON",
        ),
        (  # Sundial's role calls its own account and Region only
            {"Target": {"Arn": "arn:aws:sqs:eu-west-1:123456789012:orders", "RoleArn": ROLE_ARN}},
            "own account and Region",
        ),
        (
            {
                "Target": {
                    "Arn": QUEUE_ARN,
                    "RoleArn": ROLE_ARN,
                    "DeadLetterConfig": {"Arn": "arn:aws:sqs:us-east-1:210987654321:dlq"},
                }
            },
            "Target.DeadLetterConfig.Arn",
        ),
    ],
)
def test_bad_input_is_a_validation_exception_that_is_not_retried(
    scheduler: Any, change: dict[str, Any], says: str
) -> None:
    with pytest.raises(ClientError) as refused:
        scheduler.create_schedule(**{**_schedule("refused"), **change})
    assert _code(refused.value) == "ValidationException"
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert refused.value.response["ResponseMetadata"]["RetryAttempts"] == 0
    assert says in refused.value.response["Error"]["Message"]
    with pytest.raises(scheduler.exceptions.ResourceNotFoundException):
        scheduler.get_schedule(Name="refused")


REFUSED = names("scheduler-invalid-expression-")


@pytest.mark.parametrize("name", REFUSED, ids=[source(r)["request"]["ScheduleExpression"] for r in REFUSED])
def test_an_expression_aws_refuses_is_refused_with_aws_s_code_and_message_first(scheduler: Any, name: str) -> None:
    """Each expression AWS refused (tests/data/aws/scheduler-invalid-expression-*.json), sent as the
    recorded test sent it: AWS's code, status and message, then Sundial's reason."""
    sent, recorded = source(name)["request"], recording(name)
    with pytest.raises(ClientError) as refused:
        scheduler.create_schedule(
            **_schedule(
                "refused-expression",
                ScheduleExpression=sent["ScheduleExpression"],
                FlexibleTimeWindow=sent["FlexibleTimeWindow"],
                Target={"Arn": "arn:aws:lambda:us-east-1:123456789012:function:dummy", "RoleArn": ROLE_ARN},
            )
        )
    answer = refused.value.response
    assert answer["Error"]["Code"] == recorded["Error"]["Code"]
    assert answer["ResponseMetadata"]["HTTPStatusCode"] == recorded["ResponseMetadata"]["HTTPStatusCode"]
    assert answer["Error"]["Message"].startswith(recorded["Error"]["Message"] + " ")
    assert answer["Message"].startswith(recorded["Message"] + " ")


@pytest.mark.parametrize("queue", ["sundial-dead-letters", "sundial-delay-0"])
def test_a_dead_letter_queue_of_sundial_s_own_is_refused_on_creation_and_update(scheduler: Any, queue: str) -> None:
    """Any tenant could otherwise put messages into the pipeline's queues (make run's are
    ``sundial-*``): refused as such a target is, naming the member."""
    ours = {
        "Arn": QUEUE_ARN,
        "RoleArn": ROLE_ARN,
        "DeadLetterConfig": {"Arn": f"arn:aws:sqs:us-east-1:123456789012:{queue}"},
    }
    with pytest.raises(ClientError) as refused:
        scheduler.create_schedule(**_schedule("dlq-ours", Target=ours))
    assert _code(refused.value) == "ValidationException"
    assert refused.value.response["Error"]["Message"].startswith("Target.DeadLetterConfig.Arn ")
    with pytest.raises(scheduler.exceptions.ResourceNotFoundException):
        scheduler.get_schedule(Name="dlq-ours")

    scheduler.create_schedule(**_schedule("dlq-theirs"))
    with pytest.raises(ClientError) as changed:
        scheduler.update_schedule(**_schedule("dlq-theirs", Target=ours))
    assert _code(changed.value) == "ValidationException"
    assert changed.value.response["Error"]["Message"].startswith("Target.DeadLetterConfig.Arn ")
    assert "DeadLetterConfig" not in scheduler.get_schedule(Name="dlq-theirs")["Target"]
    scheduler.delete_schedule(Name="dlq-theirs")


def test_a_missing_schedule_or_group(scheduler: Any) -> None:
    with pytest.raises(scheduler.exceptions.ResourceNotFoundException) as missing:
        scheduler.get_schedule(Name="never")
    assert missing.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    with pytest.raises(scheduler.exceptions.ResourceNotFoundException):
        scheduler.delete_schedule(Name="never")
    with pytest.raises(scheduler.exceptions.ResourceNotFoundException):
        scheduler.create_schedule(**_schedule("orphan", GroupName="no-such-group"))


def test_rate_and_at_schedules(scheduler: Any, sundial: Client) -> None:
    start = (datetime.now(UTC) + timedelta(days=2)).replace(microsecond=0)
    scheduler.create_schedule(**_schedule("every-5", ScheduleExpression="rate(5 minutes)", StartDate=start))
    day = (datetime.now(UTC) + timedelta(days=30)).date()
    scheduler.create_schedule(
        **_schedule(
            "once", ScheduleExpression=f"at({day.isoformat()}T10:00:30)", ScheduleExpressionTimezone="Europe/Paris"
        )
    )
    every = _native(sundial, "eventbridge:default/every-5")
    assert every["schedule"]["every_seconds"] == 300
    assert every["next_fire_at"] == start.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    once = _native(sundial, "eventbridge:default/once")
    paris = datetime.combine(day, time(10, 0, 30), tzinfo=ZoneInfo("Europe/Paris")).astimezone(UTC)
    assert once["next_fire_at"] == paris.isoformat(timespec="milliseconds").replace("+00:00", "Z")  # its second
    scheduler.delete_schedule(Name="every-5")
    scheduler.delete_schedule(Name="once")


def _moto(sundial: Client) -> str:
    """The runtime's moto, as its start-up banner names it."""
    line = next(line for line in sundial.opening if line.strip().startswith("moto "))
    return line.split()[1]


def test_a_schedule_fires_its_input_into_an_sqs_queue(scheduler: Any, sundial: Client) -> None:
    sqs = boto3.client(
        "sqs", endpoint_url=_moto(sundial), region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    url = sqs.create_queue(QueueName="eb-fired")["QueueUrl"]
    due = (datetime.now(UTC) + timedelta(seconds=4)).replace(microsecond=0)
    template = (
        '{"order": 123, "at": "<aws.scheduler.scheduled-time>", "run": "<aws.scheduler.execution-id>", '
        '"attempt": <aws.scheduler.attempt-number>, "arn": "<aws.scheduler.schedule-arn>"}'
    )
    target = {"Arn": "arn:aws:sqs:us-east-1:123456789012:eb-fired", "RoleArn": ROLE_ARN, "Input": template}
    arn = scheduler.create_schedule(
        **_schedule(
            "fire-once",
            ScheduleExpression=f"at({due.strftime('%Y-%m-%dT%H:%M:%S')})",
            ScheduleExpressionTimezone="UTC",
            Target=target,
        )
    )["ScheduleArn"]
    deadline = datetime.now(UTC) + timedelta(seconds=30)
    messages: list[dict[str, Any]] = []
    while not messages and datetime.now(UTC) < deadline:
        messages = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5, MessageAttributeNames=["All"]).get(
            "Messages", []
        )
    assert len(messages) == 1, "the schedule did not fire"
    received = datetime.now(UTC)
    body = messages[0]["Body"]
    at = due.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert body.startswith(f'{{"order": 123, "at": "{at}", "run": "')  # the Input as given, not re-serialized
    import json

    sent = json.loads(body)
    assert (sent["attempt"], sent["arn"]) == (1, arn)
    assert "MessageAttributes" not in messages[0]  # Sundial adds none of its own
    assert received >= due
    # the occurrence's run, in the native API's history (the run id is the execution id)
    task = _native(sundial, "eventbridge:default/fire-once")
    runs = until(lambda: sundial.call("GET", f"/v1/tasks/{task['id']}/runs")[1]["items"])
    assert [run["run_id"] for run in runs] == [sent["run"]]
    scheduler.delete_schedule(Name="fire-once")


def test_an_at_long_past_is_taken_as_aws_takes_it_and_fires_once_at_once(scheduler: Any, sundial: Client) -> None:
    """The request AWS took (tests/data/aws/scheduler-create-schedule-past-at.json: at() more than
    two years past, a flexible window), into a moto queue: it fires once, at once, saying the
    time it was set for."""
    recorded = recording("scheduler-create-schedule-past-at")
    sent = source("scheduler-create-schedule-past-at")["request"]
    sqs = _aws(sundial, "sqs")
    url = sqs.create_queue(QueueName="eb-long-past")["QueueUrl"]
    target = {
        "Arn": "arn:aws:sqs:us-east-1:123456789012:eb-long-past",
        "RoleArn": ROLE_ARN,
        "Input": '{"at": "<aws.scheduler.scheduled-time>"}',
    }
    created = scheduler.create_schedule(
        Name="long-past",
        ScheduleExpression=sent["ScheduleExpression"],
        FlexibleTimeWindow=sent["FlexibleTimeWindow"],
        Target=target,
    )
    assert set(created) - {"ResponseMetadata"} == set(recorded) - {"ResponseMetadata"}  # its ARN alone
    messages = _received(sqs, url)
    assert [m["Body"] for m in messages] == ['{"at": "2022-12-31T23:59:59Z"}']
    task = _native(sundial, "eventbridge:default/long-past")
    runs = until(lambda: sundial.call("GET", f"/v1/tasks/{task['id']}/runs")[1]["items"])
    assert [r["status"] for r in runs] == ["succeeded"]  # one occurrence, and no other
    assert until(lambda: sundial.call("GET", f"/v1/tasks/{task['id']}")[1]["status"] == "completed")
    assert scheduler.get_schedule(Name="long-past")["ScheduleExpression"] == "at(2022-12-31T23:59:59)"
    scheduler.delete_schedule(Name="long-past")


def test_a_fifo_queue_gets_the_schedule_s_message_group(scheduler: Any, sundial: Client) -> None:
    sqs = boto3.client(
        "sqs", endpoint_url=_moto(sundial), region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    url = sqs.create_queue(QueueName="eb-orders.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    arn = "arn:aws:sqs:us-east-1:123456789012:eb-orders.fifo"
    fifo = {"Arn": arn, "RoleArn": ROLE_ARN, "Input": '{"fifo": true}'}
    with pytest.raises(scheduler.exceptions.ValidationException) as ungrouped:
        scheduler.create_schedule(**_schedule("fifo-none", Target=fifo))
    assert "MessageGroupId" in ungrouped.value.response["Error"]["Message"]

    due = (datetime.now(UTC) + timedelta(seconds=3)).replace(microsecond=0)
    scheduler.create_schedule(
        **_schedule(
            "fifo-once",
            ScheduleExpression=f"at({due.strftime('%Y-%m-%dT%H:%M:%S')})",
            ScheduleExpressionTimezone="UTC",
            Target={**fifo, "SqsParameters": {"MessageGroupId": "orders-eu"}},
        )
    )
    deadline = datetime.now(UTC) + timedelta(seconds=30)
    messages: list[dict[str, Any]] = []
    while not messages and datetime.now(UTC) < deadline:
        messages = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5, AttributeNames=["All"]).get("Messages", [])
    assert len(messages) == 1, "the schedule did not fire"
    assert messages[0]["Body"] == '{"fifo": true}'
    assert messages[0]["Attributes"]["MessageGroupId"] == "orders-eu"
    scheduler.delete_schedule(Name="fifo-once")


def _aws(sundial: Client, service: str) -> Any:
    """A client of the runtime's moto (where the targets live)."""
    return boto3.client(
        service, endpoint_url=_moto(sundial), region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )


def _received(sqs: Any, url: str, timeout_s: float = 30) -> list[dict[str, Any]]:
    deadline = datetime.now(UTC) + timedelta(seconds=timeout_s)
    messages: list[dict[str, Any]] = []
    while not messages and datetime.now(UTC) < deadline:
        messages = sqs.receive_message(
            QueueUrl=url, WaitTimeSeconds=5, MessageAttributeNames=["All"], AttributeNames=["All"]
        ).get("Messages", [])
    return messages


def _listed(sundial: Client, prefix: str) -> list[dict[str, Any]]:
    """Every task the native API lists under the name prefix, page after page."""
    items, cursor = [], ""
    while True:
        status, page = sundial.call("GET", f"/v1/tasks?limit=100&name_prefix={prefix}{cursor}")
        assert status == 200, page
        items.extend(page["items"])
        if not page.get("next_cursor"):
            return items
        cursor = f"&cursor={page['next_cursor']}"


def _at(due: datetime) -> str:
    return f"at({due.strftime('%Y-%m-%dT%H:%M:%S')})"


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_a_failed_occurrence_goes_to_the_schedule_s_dead_letter_queue(scheduler: Any, sundial: Client) -> None:
    sqs = _aws(sundial, "sqs")
    dlq = sqs.create_queue(QueueName="eb-dlq")["QueueUrl"]
    with pytest.raises(scheduler.exceptions.ValidationException):  # the service takes no FIFO dead-letter queue
        scheduler.create_schedule(
            **_schedule(
                "dlq-fifo",
                Target={
                    "Arn": QUEUE_ARN,
                    "RoleArn": ROLE_ARN,
                    "DeadLetterConfig": {"Arn": "arn:aws:sqs:us-east-1:123456789012:dlq.fifo"},
                },
            )
        )
    due = (datetime.now(UTC) + timedelta(seconds=3)).replace(microsecond=0)
    missing = "arn:aws:sqs:us-east-1:123456789012:eb-no-such-queue"
    arn = scheduler.create_schedule(
        **_schedule(
            "dlq-once",
            ScheduleExpression=_at(due),
            ScheduleExpressionTimezone="UTC",
            Target={
                "Arn": missing,
                "RoleArn": ROLE_ARN,
                "Input": '{"run": "<aws.scheduler.execution-id>"}',
                "RetryPolicy": {"MaximumRetryAttempts": 3, "MaximumEventAgeInSeconds": 120},
                "DeadLetterConfig": {"Arn": "arn:aws:sqs:us-east-1:123456789012:eb-dlq"},
            },
        )
    )["ScheduleArn"]
    messages = _received(sqs, dlq)
    assert len(messages) == 1, "no dead-letter event"
    attributes = {k: v["StringValue"] for k, v in messages[0]["MessageAttributes"].items()}
    # a queue that does not exist is a final failure: not retried, dead-lettered at once, as the
    # service does for a missing resource
    assert attributes["ERROR_CODE"] == "AWS.SimpleQueueService.NonExistentQueue"
    assert attributes["RETRY_ATTEMPTS"] == "0"
    assert "EXHAUSTED_RETRY_CONDITION" not in attributes
    assert (attributes["SCHEDULE_ARN"], attributes["TARGET_ARN"]) == (arn, missing)
    assert attributes["SCHEDULED_TIME"] == due.strftime("%Y-%m-%dT%H:%M:%SZ")
    run_id = attributes["EXECUTION_ID"]
    assert messages[0]["Body"] == f'{{"run": "{run_id}"}}'  # the Input the target was sent
    task = _native(sundial, "eventbridge:default/dlq-once")
    assert task["eventbridge"] == {
        "schedule_arn": arn,
        "dead_letter_arn": "arn:aws:sqs:us-east-1:123456789012:eb-dlq",
        "delete_after_completion": False,
        "flexible_window_seconds": None,
    }
    runs = until(lambda: sundial.call("GET", f"/v1/tasks/{task['id']}/runs")[1]["items"])
    assert [(r["run_id"], r["status"]) for r in runs] == [(run_id, "failed")]  # and in Sundial's history
    scheduler.delete_schedule(Name="dlq-once")


def test_a_throttled_target_is_retried_then_dead_lettered_with_the_exhausted_condition(
    scheduler: Any, sundial: Client
) -> None:
    sqs = _aws(sundial, "sqs")
    dlq = sqs.create_queue(QueueName="eb-retry-dlq")["QueueUrl"]
    # make run's moto refuses this queue's next sends as SQS does past its rate (local/moto_patches/sqs.py)
    sqs.create_queue(QueueName="eb-throttled", tags={THROTTLE_TAG: "1000"})
    due = (datetime.now(UTC) + timedelta(seconds=2)).replace(microsecond=0)
    scheduler.create_schedule(
        **_schedule(
            "retried",
            ScheduleExpression=_at(due),
            ScheduleExpressionTimezone="UTC",
            Target={
                "Arn": "arn:aws:sqs:us-east-1:123456789012:eb-throttled",
                "RoleArn": ROLE_ARN,
                "Input": '{"attempt": "<aws.scheduler.attempt-number>"}',
                "RetryPolicy": {"MaximumRetryAttempts": 2},
                "DeadLetterConfig": {"Arn": "arn:aws:sqs:us-east-1:123456789012:eb-retry-dlq"},
            },
        )
    )
    messages = _received(sqs, dlq, 40)
    assert len(messages) == 1, "no dead-letter event"
    attributes = {k: v["StringValue"] for k, v in messages[0]["MessageAttributes"].items()}
    assert attributes["ERROR_CODE"] == "RequestThrottled"
    assert (attributes["EXHAUSTED_RETRY_CONDITION"], attributes["RETRY_ATTEMPTS"]) == ("MaximumRetryAttempts", "2")
    assert messages[0]["Body"] == '{"attempt": "3"}'  # the third attempt's Input
    task = _native(sundial, "eventbridge:default/retried")
    runs = until(lambda: sundial.call("GET", f"/v1/tasks/{task['id']}/runs")[1]["items"])
    assert [(r["status"], r["attempts"]) for r in runs] == [("dead_lettered", 3)]
    scheduler.delete_schedule(Name="retried")


def test_a_completed_schedule_is_deleted_when_it_asks(scheduler: Any, sundial: Client) -> None:
    sqs = _aws(sundial, "sqs")
    url = sqs.create_queue(QueueName="eb-completion")["QueueUrl"]
    due = (datetime.now(UTC) + timedelta(seconds=3)).replace(microsecond=0)
    target = {"Arn": "arn:aws:sqs:us-east-1:123456789012:eb-completion", "RoleArn": ROLE_ARN, "Input": "{}"}
    for name, action in (("done-delete", "DELETE"), ("done-keep", "NONE")):
        scheduler.create_schedule(
            **_schedule(
                name,
                ScheduleExpression=_at(due),
                ScheduleExpressionTimezone="UTC",
                Target=target,
                ActionAfterCompletion=action,
            )
        )
    fired: list[dict[str, Any]] = []
    deadline = datetime.now(UTC) + timedelta(seconds=30)
    while len(fired) < 2 and datetime.now(UTC) < deadline:
        fired.extend(_received(sqs, url, 5))
    assert len(fired) == 2

    def gone() -> bool:
        try:
            scheduler.get_schedule(Name="done-delete")
        except scheduler.exceptions.ResourceNotFoundException:
            return True
        return False

    assert until(gone, 15)
    assert scheduler.get_schedule(Name="done-keep")["ActionAfterCompletion"] == "NONE"
    # the deleted schedule's task and its run stay, as history
    task = _native(sundial, "eventbridge:default/done-delete")
    assert task["status"] == "completed"
    scheduler.delete_schedule(Name="done-keep")


def test_a_flexible_window_fires_each_schedule_at_its_own_moment_in_it(scheduler: Any, sundial: Client) -> None:
    sqs = _aws(sundial, "sqs")
    url = sqs.create_queue(QueueName="eb-flexible")["QueueUrl"]
    window = {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 1}
    with pytest.raises(scheduler.exceptions.ValidationException):
        scheduler.create_schedule(**_schedule("flex-bad", FlexibleTimeWindow={"Mode": "FLEXIBLE"}))
    # far enough ahead that thirty creations and the listing are done before the first moment, on
    # a loaded machine too (a run that took longer listed some already fired: no next_fire_at)
    due = (datetime.now(UTC) + timedelta(seconds=20)).replace(microsecond=0)
    for i in range(30):
        target = {
            "Arn": "arn:aws:sqs:us-east-1:123456789012:eb-flexible",
            "RoleArn": ROLE_ARN,
            "Input": f'{{"name": "flex-{i}", "at": "<aws.scheduler.scheduled-time>"}}',
        }
        scheduler.create_schedule(
            **_schedule(
                f"flex-{i}",
                ScheduleExpression=_at(due),
                ScheduleExpressionTimezone="UTC",
                FlexibleTimeWindow=window,
                Target=target,
            )
        )

    def all_listed() -> list[dict[str, Any]] | None:
        found = _listed(sundial, "eventbridge:default/flex-")
        return found if len(found) == 30 else None

    listed = until(all_listed)
    assert listed is not None, "the listing index did not catch up"  # an index: eventually consistent
    drawn = {t["name"].rsplit("/", 1)[1]: _instant(t["next_fire_at"]) for t in listed}
    assert {t["eventbridge"]["flexible_window_seconds"] for t in listed} == {60}  # the native view says so
    offsets = sorted((at - due).total_seconds() for at in drawn.values())
    assert all(0 <= o < 60 for o in offsets), offsets  # in the window
    assert len(set(offsets)) >= 20, offsets  # each its own moment
    earliest = min(drawn, key=lambda n: drawn[n])
    for name in drawn:
        if name != earliest:
            scheduler.delete_schedule(Name=name)  # a later one deleted before its moment never fires
    deadline = datetime.now(UTC) + timedelta(seconds=75)
    mine: list[dict[str, Any]] = []
    while not mine and datetime.now(UTC) < deadline:
        mine = [m for m in _received(sqs, url, 5) if f'"name": "{earliest}"' in m["Body"]]
    assert len(mine) == 1, "the schedule did not fire"
    sent_ms = int(mine[0]["Attributes"]["SentTimestamp"])
    assert sent_ms >= int(drawn[earliest].timestamp() * 1000)  # at its drawn moment, not before
    # the context attribute names the time the schedule was set for, not the drawn moment
    assert mine[0]["Body"] == f'{{"name": "{earliest}", "at": "{due.strftime("%Y-%m-%dT%H:%M:%SZ")}"}}'
    scheduler.delete_schedule(Name=earliest)


def test_a_schedule_invokes_a_lambda_function(scheduler: Any, sundial: Client) -> None:
    import io
    import zipfile

    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("index.py", "def handler(event, context):\n    print(event)\n")
    role = _aws(sundial, "iam").create_role(RoleName="eb-fn", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    function = _aws(sundial, "lambda").create_function(
        FunctionName="eb-fn",
        Runtime="python3.12",
        Role=role,
        Handler="index.handler",
        Code={"ZipFile": code.getvalue()},
    )["FunctionArn"]
    due = (datetime.now(UTC) + timedelta(seconds=3)).replace(microsecond=0)
    scheduler.create_schedule(
        **_schedule(
            "to-lambda",
            ScheduleExpression=_at(due),
            ScheduleExpressionTimezone="UTC",
            Target={"Arn": function, "RoleArn": ROLE_ARN, "Input": '{"job": "<aws.scheduler.attempt-number>"}'},
        )
    )
    logs = _aws(sundial, "logs")

    def logged() -> list[str]:
        try:
            events = logs.filter_log_events(logGroupName="/aws/lambda/eb-fn")["events"]
        except logs.exceptions.ResourceNotFoundException:
            return []
        return [e["message"] for e in events]

    # make run does not run a function's code: each invocation's event goes to its log group
    assert until(logged, 30) == ['{"job": "1"}']
    scheduler.delete_schedule(Name="to-lambda")
