"""moto's state saved and loaded again (local/moto_host/persist.py: `make run`'s data folder, see
docs/devserver.md): what the runtime keeps in moto comes back whole, and what moto times comes
back right after a downtime (a downtime is moto's clock moved on between the save and the load)."""

from __future__ import annotations

import hashlib
import pickle
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from moto import mock_aws
from moto.core.base_backend import BackendDict

from local.moto_host import persist as moto_persist
from local.moto_host.persist import SNAPSHOT, SnapshotMismatch, Snapshots, dump, load

pytestmark = pytest.mark.integration

DOWNTIME_S = 600
"""How long moto is down between the save and the load."""
TTL_AT = 4_102_444_800


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws():
        yield


def restart(path: Path, monkeypatch: pytest.MonkeyPatch | None = None, *, restore: bool = True) -> None:
    """moto's process stopped (its state saved to ``path`` and forgotten), down ``DOWNTIME_S``
    (SQS's clock moved on) and started again, its state loaded unless ``restore`` is False."""
    dump(path)
    BackendDict.reset()
    if monkeypatch is not None:
        from moto.core import utils
        from moto.sqs import models

        monkeypatch.setattr(models, "unix_time_millis", lambda: utils.unix_time_millis() + DOWNTIME_S * 1000)
        monkeypatch.setattr(models, "unix_time", lambda: utils.unix_time() + DOWNTIME_S)
    if restore:
        load(path)


def table() -> object:
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    dynamodb.create_table(
        TableName="kept",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": name, "AttributeType": "S"} for name in ("pk", "sk", "tenant", "due")],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by_tenant",
                "KeySchema": [
                    {"AttributeName": "tenant", "KeyType": "HASH"},
                    {"AttributeName": "due", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    dynamodb.update_time_to_live(
        TableName="kept", TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires"}
    )
    for i in range(3):
        dynamodb.put_item(
            TableName="kept",
            Item={
                "pk": {"S": f"T#{i}"},
                "sk": {"S": "T"},
                "tenant": {"S": "acme"},
                "due": {"S": f"2030-01-0{i + 1}"},
                "expires": {"N": str(TTL_AT)},
                "payload": {"M": {"n": {"N": str(i)}, "tags": {"SS": ["a", "b"]}}},
            },
        )
    return dynamodb


def test_dynamodb_items_their_index_and_ttl_come_back(aws, tmp_path: Path) -> None:
    dynamodb = table()
    before = dynamodb.scan(TableName="kept")["Items"]
    restart(tmp_path / "moto.pickle")
    assert sorted(dynamodb.scan(TableName="kept")["Items"], key=lambda i: i["pk"]["S"]) == sorted(
        before, key=lambda i: i["pk"]["S"]
    )
    listed = dynamodb.query(
        TableName="kept",
        IndexName="by_tenant",
        KeyConditionExpression="tenant = :t AND due >= :d",
        ExpressionAttributeValues={":t": {"S": "acme"}, ":d": {"S": "2030-01-02"}},
    )["Items"]
    assert [item["pk"]["S"] for item in listed] == ["T#1", "T#2"]
    ttl = dynamodb.describe_time_to_live(TableName="kept")["TimeToLiveDescription"]
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": "expires"}
    item = dynamodb.get_item(TableName="kept", Key={"pk": {"S": "T#0"}, "sk": {"S": "T"}})["Item"]
    assert item["expires"] == {"N": str(TTL_AT)}
    # and it is a table moto serves as before: a conditional write still refuses
    with pytest.raises(dynamodb.exceptions.ConditionalCheckFailedException):
        dynamodb.put_item(TableName="kept", Item=item, ConditionExpression="attribute_not_exists(pk)")


def test_a_load_puts_items_without_their_size_check_and_leaves_the_check_on(aws, tmp_path: Path) -> None:
    """The load sets an item's attributes as a dict does (each passed DynamoDB's 400 KB check when
    written; checked again one by one, a load of 10,000 tasks took 2 s, not 0.5), and a write after
    it is checked as before."""
    from moto.dynamodb.models.dynamo_type import LimitedSizeDict

    checked = LimitedSizeDict.__setitem__
    dynamodb = table()
    restart(tmp_path / "moto.pickle")
    assert LimitedSizeDict.__setitem__ is checked
    item = dynamodb.get_item(TableName="kept", Key={"pk": {"S": "T#1"}, "sk": {"S": "T"}})["Item"]
    assert item["payload"] == {"M": {"n": {"N": "1"}, "tags": {"SS": ["a", "b"]}}}
    with pytest.raises(dynamodb.exceptions.ClientError, match="Item size has exceeded the maximum allowed size"):
        dynamodb.put_item(TableName="kept", Item={**item, "big": {"S": "x" * 410_000}})


def test_without_the_load_a_restart_forgets_everything(aws, tmp_path: Path) -> None:
    dynamodb = table()
    restart(tmp_path / "moto.pickle", restore=False)
    with pytest.raises(dynamodb.exceptions.ResourceNotFoundException):
        dynamodb.scan(TableName="kept")


def test_sqs_messages_come_back_visible_delayed_or_in_flight_as_the_clock_says(
    aws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sqs = boto3.client("sqs", region_name="us-east-1")
    url = sqs.create_queue(QueueName="kept", Attributes={"VisibilityTimeout": "900"})["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="visible")
    sqs.send_message(QueueUrl=url, MessageBody="in flight")
    (received,) = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)["Messages"]
    assert received["Body"] == "visible"  # received: in flight for 900 s, past the downtime
    sqs.send_message(QueueUrl=url, MessageBody="due in the downtime", DelaySeconds=60)
    sqs.send_message(QueueUrl=url, MessageBody="due after it", DelaySeconds=900)
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=received["ReceiptHandle"], VisibilityTimeout=900)
    other = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert [m["Body"] for m in other] == ["in flight"]
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=other[0]["ReceiptHandle"], VisibilityTimeout=60)

    restart(tmp_path / "moto.pickle", monkeypatch)  # 600 s later
    bodies = sorted(m["Body"] for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"])
    # the delay and the visibility timeout that ran out meanwhile: receivable at once; the 900 s
    # ones still have 300 s to go
    assert bodies == ["due in the downtime", "in flight"]
    counts = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert counts["ApproximateNumberOfMessagesDelayed"] == "1"
    # and a new message is received by a long poll as before (the queue's condition made anew)
    sqs.send_message(QueueUrl=url, MessageBody="new")
    assert [m["Body"] for m in sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)["Messages"]] == ["new"]


def test_kms_encrypted_values_and_signing_keys_and_ssm_parameters_come_back(aws, tmp_path: Path) -> None:
    kms = boto3.client("kms", region_name="us-east-1")
    symmetric = kms.create_key(KeyUsage="ENCRYPT_DECRYPT")["KeyMetadata"]["Arn"]
    kms.create_alias(AliasName="alias/kept", TargetKeyId=symmetric)
    context = {"sundial:tenant": "acme"}
    blob = kms.encrypt(KeyId=symmetric, Plaintext=b"whsec_kept", EncryptionContext=context)["CiphertextBlob"]
    signing = kms.create_key(KeyUsage="SIGN_VERIFY", KeySpec="ECC_NIST_P256")["KeyMetadata"]["Arn"]
    digest = hashlib.sha256(b"message").digest()
    signature = kms.sign(KeyId=signing, Message=digest, MessageType="DIGEST", SigningAlgorithm="ECDSA_SHA_256")[
        "Signature"
    ]
    ssm = boto3.client("ssm", region_name="us-east-1")
    ssm.put_parameter(Name="/sundial-local/admin-key", Value="sk_admin_kept", Type="SecureString")
    ssm.add_tags_to_resource(
        ResourceType="Parameter", ResourceId="/sundial-local/admin-key", Tags=[{"Key": "k", "Value": "v"}]
    )

    restart(tmp_path / "moto.pickle")
    assert kms.decrypt(CiphertextBlob=blob, EncryptionContext=context)["Plaintext"] == b"whsec_kept"
    assert kms.describe_key(KeyId="alias/kept")["KeyMetadata"]["Arn"] == symmetric
    verified = kms.verify(
        KeyId=signing, Message=digest, MessageType="DIGEST", Signature=signature, SigningAlgorithm="ECDSA_SHA_256"
    )
    assert verified["SignatureValid"]
    parameter = ssm.get_parameter(Name="/sundial-local/admin-key", WithDecryption=True)["Parameter"]
    assert parameter["Value"] == "sk_admin_kept"
    tags = ssm.list_tags_for_resource(ResourceType="Parameter", ResourceId="/sundial-local/admin-key")["TagList"]
    assert tags == [{"Key": "k", "Value": "v"}]
    # a new parameter's tags: the tags' defaultdict, made again, makes their table as before
    ssm.put_parameter(Name="/other", Value="x", Type="String")
    ssm.add_tags_to_resource(ResourceType="Parameter", ResourceId="/other", Tags=[{"Key": "a", "Value": "b"}])
    assert ssm.list_tags_for_resource(ResourceType="Parameter", ResourceId="/other")["TagList"] == [
        {"Key": "a", "Value": "b"}
    ]


def test_s3_objects_and_step_functions_state_machines_come_back(aws, tmp_path: Path) -> None:
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="sundial-jobs")
    s3.put_object(Bucket="sundial-jobs", Key="jobs/1/input.json", Body=b'{"n": 1}')
    stepfunctions = boto3.client("stepfunctions", region_name="us-east-1")
    definition = '{"StartAt": "a", "States": {"a": {"Type": "Pass", "End": true}}}'
    arn = stepfunctions.create_state_machine(
        name="sundial-jobs", definition=definition, roleArn="arn:aws:iam::123456789012:role/sundial"
    )["stateMachineArn"]

    restart(tmp_path / "moto.pickle")
    assert s3.get_object(Bucket="sundial-jobs", Key="jobs/1/input.json")["Body"].read() == b'{"n": 1}'
    assert stepfunctions.describe_state_machine(stateMachineArn=arn)["definition"] == definition


def test_a_snapshot_of_another_moto_is_refused(aws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table()
    path = tmp_path / "moto.pickle"
    dump(path)
    monkeypatch.setattr(moto_persist, "_header", lambda: {"format": moto_persist.FORMAT, "moto": "0.0.0"})
    with pytest.raises(SnapshotMismatch):
        load(path)


def test_a_snapshot_written_before_this_module_moved_loads_as_it_did(aws, tmp_path: Path) -> None:
    """A data folder's snapshot written before local/moto_host/persist.py moved there names its
    rebuilds (SSM's defaultdicts, KMS's private keys) by the module's old name: it loads."""
    old_name = "local.moto_persist"  # old-name
    kms = boto3.client("kms", region_name="us-east-1")
    key = kms.create_key(KeyUsage="ENCRYPT_DECRYPT")["KeyMetadata"]["Arn"]
    blob = kms.encrypt(KeyId=key, Plaintext=b"kept")["CiphertextBlob"]
    ssm = boto3.client("ssm", region_name="us-east-1")
    ssm.put_parameter(Name="/kept", Value="v", Type="String")
    ssm.add_tags_to_resource(ResourceType="Parameter", ResourceId="/kept", Tags=[{"Key": "k", "Value": "v"}])
    path = tmp_path / "moto.pickle"
    with pytest.MonkeyPatch.context() as old:  # the module under its old name, as it pickled then
        old.setitem(sys.modules, old_name, moto_persist)
        for rebuild in (moto_persist._defaultdict, moto_persist._nested_tags, moto_persist._private_key):
            old.setattr(rebuild, "__module__", old_name)
        dump(path)
    assert old_name.encode() in path.read_bytes()
    assert b"local.moto_host" not in path.read_bytes()
    BackendDict.reset()
    load(path)
    assert kms.decrypt(CiphertextBlob=blob)["Plaintext"] == b"kept"
    assert ssm.get_parameter(Name="/kept")["Parameter"]["Value"] == "v"
    tags = ssm.list_tags_for_resource(ResourceType="Parameter", ResourceId="/kept")["TagList"]
    assert tags == [{"Key": "k", "Value": "v"}]


def test_a_lambda_default_factory_moto_has_not_been_taught_is_refused_when_saved(aws, tmp_path: Path) -> None:
    from collections import defaultdict

    from moto.sqs.models import sqs_backends

    boto3.client("sqs", region_name="us-east-1").create_queue(QueueName="q")
    backend = sqs_backends["123456789012"]["us-east-1"]
    backend.unknown = defaultdict(lambda: 0)  # type: ignore[attr-defined]
    with pytest.raises(pickle.PicklingError, match="no rebuild known"):
        dump(tmp_path / "moto.pickle")
    assert not list(tmp_path.iterdir())  # no partial snapshot left behind


def test_a_snapshot_is_taken_by_a_forked_copy_only_when_requests_came(aws, tmp_path: Path) -> None:
    dynamodb = table()
    snapshots = Snapshots(tmp_path, period_s=60)
    assert not snapshots.take()  # no request counted yet: nothing to write
    snapshots.requests += 2
    assert snapshots.take()
    assert not snapshots.take()  # nothing since
    BackendDict.reset()
    load(tmp_path / SNAPSHOT)  # what the copy wrote
    assert len(dynamodb.scan(TableName="kept")["Items"]) == 3


def test_a_snapshot_whose_copy_hangs_is_ended_and_the_last_one_is_kept(
    aws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / SNAPSHOT).write_bytes(b"the last snapshot")
    monkeypatch.setattr(moto_persist, "SNAPSHOT_TIMEOUT_S", 0.5)
    monkeypatch.setattr(moto_persist, "dump", lambda path: time.sleep(60))  # a lock held for ever, in the copy
    snapshots = Snapshots(tmp_path, period_s=60)
    snapshots.requests += 1
    started = time.monotonic()
    assert not snapshots.take()
    assert time.monotonic() - started < 10
    assert (tmp_path / SNAPSHOT).read_bytes() == b"the last snapshot"


def test_reads_and_receives_leave_no_snapshot_due_and_writes_do() -> None:
    """An idle runtime's tick and pollers read every second: only what changes state makes a
    snapshot due (a receive's visibility need not survive a crash: SQS may deliver twice)."""
    from local.moto_host.persist import reads_only

    def target(action: str) -> dict[str, str]:
        return {"HTTP_X_AMZ_TARGET": action}

    for read in ("DynamoDB_20120810.Query", "DynamoDB_20120810.BatchGetItem", "AmazonSQS.ReceiveMessage"):
        assert reads_only(target(read)), read
    for write in (
        "DynamoDB_20120810.UpdateItem",
        "DynamoDB_20120810.TransactWriteItems",
        "AmazonSQS.SendMessageBatch",
        "AmazonSQS.DeleteMessage",
        "AmazonSQS.ChangeMessageVisibility",
    ):
        assert not reads_only(target(write)), write
    assert not reads_only({"PATH_INFO": "/bucket/key", "REQUEST_METHOD": "PUT"})  # no target: counted
