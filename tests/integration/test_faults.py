"""AWS's faults as the local runtime injects them for `make chaos` (local/faults.py), each against
a moto server over HTTP (the runtime's own moto, not the in-process mock, which answers before
botocore sends): a throttled write is refused as DynamoDB refuses it, under botocore's retries,
and not applied; a duplicate is received again after its original was deleted; a lapsed message
is received again while its first receive still holds it; a stopped call has reached its
receiver and ends its invocation past any ``except Exception``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from local import sqs_lambda
from local.deadline import InvocationStopped, TimedOut
from local.faults import Faults, Injector, install
from local.moto_server import MotoServer
from local.settings import LocalSettings
from shared.delivery.envelope import Envelope
from shared.delivery.http import HttpDelivery
from shared.domain.tasks import HttpTarget
from tests.support.moto_process import client, moto_process
from tests.support.receiver import Receiver

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def moto() -> Iterator[MotoServer]:
    with moto_process() as server:
        yield server


@pytest.fixture
def table(moto: MotoServer) -> str:
    dynamodb = client(moto, "dynamodb")
    name = f"t{datetime.now(UTC).timestamp():.6f}".replace(".", "")
    dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


def notes(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_a_throttled_write_is_dynamodbs_error_retried_by_botocore_and_not_applied(moto, table, tmp_path) -> None:
    log = tmp_path / "faults.jsonl"
    undo = install(Injector(Faults(throttle=1.0), log))
    try:
        dynamodb = client(moto, "dynamodb", attempts=3)
        with pytest.raises(ClientError) as refused:
            dynamodb.put_item(TableName=table, Item={"pk": {"S": "a"}})
        error = refused.value.response["Error"]
        assert error["Code"] == "ProvisionedThroughputExceededException"
        assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
        # botocore saw it as a throttle and tried again: three sends, three injected refusals
        assert [n["operation"] for n in notes(log)] == ["PutItem"] * 3
        assert refused.value.response["ResponseMetadata"]["RetryAttempts"] == 2
        assert "Item" not in dynamodb.get_item(TableName=table, Key={"pk": {"S": "a"}})  # a read is not throttled
    finally:
        undo()
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "a"}})  # undone: the write lands
    assert dynamodb.get_item(TableName=table, Key={"pk": {"S": "a"}})["Item"] == {"pk": {"S": "a"}}


def test_a_write_throttled_now_and_then_lands_through_the_retries(moto, table, tmp_path) -> None:
    log = tmp_path / "faults.jsonl"
    undo = install(Injector(Faults(seed=3, throttle=0.5), log))
    try:
        dynamodb = client(moto, "dynamodb", attempts=10)
        for index in range(20):
            dynamodb.put_item(TableName=table, Item={"pk": {"S": f"k{index}"}})
    finally:
        undo()
    assert dynamodb.scan(TableName=table)["Count"] == 20
    assert 3 <= len(notes(log)) <= 60, notes(log)


@pytest.fixture
def queue(moto: MotoServer) -> str:
    sqs = client(moto, "sqs")
    return str(sqs.create_queue(QueueName=f"q{datetime.now(UTC).timestamp():.6f}".replace(".", ""))["QueueUrl"])


def test_a_duplicate_is_received_again_with_its_body_and_attributes_after_the_original_is_deleted(
    moto, queue, tmp_path
) -> None:
    sqs = client(moto, "sqs")
    attributes = {"lineage": {"DataType": "String", "StringValue": "trigger:1"}}
    sqs.send_message(QueueUrl=queue, MessageBody='{"run_id": "r1"}', MessageAttributes=attributes)
    log = tmp_path / "faults.jsonl"
    undo = install(Injector(Faults(duplicate=1.0), log))
    try:
        (first,) = sqs_lambda.receive(sqs, queue, wait_s=0)
    finally:
        undo()
    sqs.delete_message(QueueUrl=queue, ReceiptHandle=first["ReceiptHandle"])
    (again,) = sqs_lambda.receive(sqs, queue, wait_s=0)
    assert again["Body"] == first["Body"]
    assert again["MessageAttributes"]["lineage"]["StringValue"] == "trigger:1"
    assert [n["fault"] for n in notes(log)] == ["duplicate"]
    assert sqs_lambda.receive(sqs, queue, wait_s=0) == []  # one copy, not one per receive: undone


def test_a_lapsed_message_is_received_again_while_its_first_receive_holds_it(moto, queue, tmp_path) -> None:
    sqs = client(moto, "sqs")
    sqs.send_message(QueueUrl=queue, MessageBody="once")
    log = tmp_path / "faults.jsonl"
    undo = install(Injector(Faults(lapse=1.0), log))
    try:
        (first,) = sqs_lambda.receive(sqs, queue, wait_s=0)
    finally:
        undo()
    (again,) = sqs_lambda.receive(sqs, queue, wait_s=0)  # without the lapse: invisible for 30 s
    assert (again["MessageId"], again["Body"]) == (first["MessageId"], "once")
    assert int(again["Attributes"]["ApproximateReceiveCount"]) == 2
    assert [n["fault"] for n in notes(log)] == ["lapse"]


def test_a_stopped_call_reached_its_receiver_and_ends_past_except_exception(receiver: Receiver, tmp_path) -> None:
    log = tmp_path / "faults.jsonl"
    target = HttpTarget(url=receiver.script("/stopped", 200), timeout_seconds=5)
    now = datetime.now(UTC)
    envelope = Envelope(task_id="t1", run_id="r1", scheduled_for=now, fired_at=now, attempt=2)

    def as_the_trigger_calls() -> None:
        try:
            HttpDelivery(allow_loopback=True).call(target, envelope)
        except Exception:  # what the trigger's code catches: not this
            pytest.fail("a stopped invocation went on")

    undo = install(Injector(Faults(stop=1.0), log))
    try:
        with pytest.raises(InvocationStopped):
            as_the_trigger_calls()
    finally:
        undo()
    assert len(receiver.calls_to("/stopped")) == 1
    assert [(n["fault"], n["run_id"], n["attempt"], n["status"]) for n in notes(log)] == [("stop", "r1", 2, 200)]
    assert HttpDelivery(allow_loopback=True).call(target, envelope).status == 200  # undone


def test_the_faults_setting_takes_probabilities_and_refuses_anything_else() -> None:
    settings = LocalSettings.from_env({LocalSettings.setting_name("faults"): "seed=7,throttle=0.02,stop=0.5"})
    assert LocalSettings.from_env({}).faults == ""  # none unless asked for
    assert Faults.parse(settings.faults) == Faults(seed=7, throttle=0.02, stop=0.5)
    name = LocalSettings.setting_name("faults")
    for bad in ("throttle=2", "throttle=0.1,drop=0.5", "seed=x", "throttle"):
        with pytest.raises(ValueError, match=name):
            LocalSettings.from_env({name: bad})
        with pytest.raises(ValueError, match="faults"):
            Faults.parse(bad)
    assert not Faults.parse("").any


def test_a_stopped_timed_out_or_failed_invocation_is_noted_with_every_occurrence_of_its_batch(tmp_path) -> None:
    log = tmp_path / "faults.jsonl"
    injector = Injector(Faults(stop=1.0), log)
    event = {
        "Records": [
            {"body": json.dumps({"t": "t1", "d": 1, "r": "r1", "a": 2})},
            {"body": json.dumps({"t": "t2", "d": 1, "r": "r2"})},
            {"body": "not a staged occurrence"},
        ]
    }

    def stopped(event: dict, context: object) -> None:
        raise InvocationStopped("at its timeout")

    def failed(event: dict, context: object) -> None:
        raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException"}}, "UpdateItem")

    def timed_out(event: dict, context: object) -> None:
        raise TimedOut("stopped at its timeout")

    with pytest.raises(InvocationStopped):
        injector.invocation(stopped)(event, None)
    with pytest.raises(TimedOut):
        injector.invocation(timed_out)(event, None)
    with pytest.raises(ClientError):
        injector.invocation(failed)(event, None)
    assert injector.invocation(lambda event, context: "answered")(event, None) == "answered"
    assert [(n["ended"], n["error"], n["runs"]) for n in notes(log)] == [
        ("stopped", "InvocationStopped", [["r1", 2], ["r2", 1]]),
        ("timed out", "TimedOut", [["r1", 2], ["r2", 1]]),
        ("failed", "ClientError", [["r1", 2], ["r2", 1]]),
    ]
