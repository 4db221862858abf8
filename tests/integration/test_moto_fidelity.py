"""moto stands in for AWS locally and in the tests; where it differed in a way Sundial relies on,
local/moto_patches/ patches it (tests/conftest.py applies the patches). These tests pin that behaviour."""

from __future__ import annotations

import copy
import inspect
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws

pytestmark = pytest.mark.integration


@contextmanager
def counted(owner: Any, name: str) -> Iterator[list[int]]:
    """Counts the uses of ``owner.name`` (a function, method, classmethod or property) while the
    block runs: ``uses[0]``. What an unpatched moto does too often, each test counts."""
    uses = [0]
    original = inspect.getattr_static(owner, name)
    own = name in vars(owner)
    replacement: Any
    if isinstance(original, property):
        getter = original.fget
        assert getter is not None

        def get(self: Any) -> Any:
            uses[0] += 1
            return getter(self)

        replacement = property(get)
    else:
        wrapped = original.__func__ if isinstance(original, classmethod) else original

        def call(*args: Any, **kwargs: Any) -> Any:
            uses[0] += 1
            return wrapped(*args, **kwargs)

        replacement = classmethod(call) if isinstance(original, classmethod) else call
    setattr(owner, name, replacement)
    try:
        yield uses
    finally:
        if own:
            setattr(owner, name, original)
        else:
            delattr(owner, name)


@pytest.fixture
def queue() -> tuple[object, str]:
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        yield sqs, sqs.create_queue(QueueName="fidelity")["QueueUrl"]


@dataclass(frozen=True)
class Wait:
    """One wait of a long poll inside moto (``Queue.wait_for_messages``)."""

    planned_s: float
    """How long it meant to wait at most."""
    until_visible_s: float | None
    """How long until the queue's next message became visible, as the wait began (None: none)."""
    woken: bool
    """Whether it ended with a message to return (False: it ran out)."""


@contextmanager
def recorded_waits(queue_name: str) -> Iterator[tuple[list[Wait], threading.Event]]:
    """The waits of every long poll on ``queue_name`` while the block runs, and an event set as
    each begins: what the polls plan and what ends them, read from moto's queue rather than
    timed on the wall clock (``make bench ARGS=--long-polls`` times them)."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.core.utils import unix_time_millis
    from moto.sqs.models import sqs_backends

    queue = sqs_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].queues[queue_name]
    condition = queue._messages_lock
    real_wait_for = condition.wait_for
    waits: list[Wait] = []
    waiting = threading.Event()

    def wait_for(predicate: Any, timeout: float | None = None) -> Any:
        now = unix_time_millis()
        pending = [at - now for m in list(queue._messages) if (at := max(m.delayed_until, m.visible_at)) > now]
        waiting.set()
        woken = real_wait_for(predicate, timeout)
        assert timeout is not None
        waits.append(Wait(timeout, min(pending) / 1000 if pending else None, bool(woken)))
        return woken

    condition.wait_for = wait_for  # type: ignore[method-assign]
    try:
        yield waits, waiting
    finally:
        del condition.wait_for


def _shift(queue_name: str, ms: int) -> None:
    """Bring every message's delay and invisibility ``ms`` nearer: a poll that starts now starts
    that far into them (as one started a while after the send would), with no sleep."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.sqs.models import sqs_backends

    for message in sqs_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].queues[queue_name]._messages:
        message.delayed_until = max(0, message.delayed_until - ms)
        message.visible_at = max(0, message.visible_at - ms)


ROUND_S = 1
"""moto's long poll looks again once a second (``wait_for_messages(1)``) when nothing woke it:
unpatched, a message that became visible mid-way waited for the next look."""


def test_a_long_poll_returns_when_a_delayed_message_becomes_visible(queue: tuple[object, str]) -> None:
    sqs, url = queue
    sqs.send_message(QueueUrl=url, MessageBody="x", DelaySeconds=1)  # type: ignore[attr-defined]
    _shift("fidelity", 300)  # the poll starts 0.3 s into the delay: unpatched moto looked at 1.3 s
    with recorded_waits("fidelity") as (waits, _):
        answer = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5)  # type: ignore[attr-defined]
    assert [m["Body"] for m in answer["Messages"]] == ["x"]
    (wait,) = waits  # one wait, planned to end as the message became visible, not at moto's next look
    assert wait.until_visible_s is not None
    assert wait.until_visible_s <= wait.planned_s < wait.until_visible_s + 0.1 < ROUND_S


def test_a_long_poll_returns_when_a_visibility_timeout_runs_out(queue: tuple[object, str]) -> None:
    sqs, url = queue
    sqs.send_message(QueueUrl=url, MessageBody="x")  # type: ignore[attr-defined]
    first = sqs.receive_message(QueueUrl=url, VisibilityTimeout=1)  # type: ignore[attr-defined]
    assert len(first["Messages"]) == 1
    _shift("fidelity", 300)
    with recorded_waits("fidelity") as (waits, _):
        again = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5)  # type: ignore[attr-defined]
    assert len(again["Messages"]) == 1
    (wait,) = waits
    assert wait.until_visible_s is not None
    assert wait.until_visible_s <= wait.planned_s < wait.until_visible_s + 0.1 < ROUND_S


def test_a_long_poll_still_wakes_for_a_new_message_and_times_out_when_empty(queue: tuple[object, str]) -> None:
    sqs, url = queue
    answers: list[Any] = []
    with recorded_waits("fidelity") as (waits, waiting):
        poll = threading.Thread(target=lambda: answers.append(sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5)))  # type: ignore[attr-defined]
        poll.start()
        assert waiting.wait(10)  # the poll waits on an empty queue
        sqs.send_message(QueueUrl=url, MessageBody="y")  # type: ignore[attr-defined]
        poll.join(10)
    assert [m["Body"] for m in answers[0]["Messages"]] == ["y"]
    assert [(w.until_visible_s, w.woken) for w in waits] == [(None, True)]  # woken by the send, not a timeout
    with recorded_waits("fidelity") as (waits, _):
        assert "Messages" not in sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)  # type: ignore[attr-defined]
    assert [(w.planned_s, w.woken) for w in waits] == [(ROUND_S, False)]  # it waited its second out


def test_moto_server_looks_up_a_hosts_backend_once() -> None:
    from moto.moto_server import werkzeug_app
    from moto.server import DomainDispatcherApplication, create_backend_app

    from local.moto_patches.dispatch import make_dispatch_cached

    make_dispatch_cached()
    app = DomainDispatcherApplication(create_backend_app)
    environ = {
        "PATH_INFO": "/",
        "HTTP_AUTHORIZATION": "AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, "
        "SignedHeaders=host, Signature=x",
        "HTTP_X_AMZ_TARGET": "DynamoDB_20120810.GetItem",
    }
    with counted(werkzeug_app.backends, "list_of_moto_modules") as listed:
        first = app.get_application(dict(environ))
        again = [app.get_application(dict(environ)) for _ in range(5)]
    assert first.service == "dynamodb"  # type: ignore[attr-defined]
    assert all(app is first for app in again)
    assert listed[0] <= 1  # unpatched moto lists its package directory on every request


def test_moto_lists_a_handler_class_methods_once() -> None:
    from moto.core import responses, utils
    from moto.dynamodb.responses import DynamoHandler

    from local.moto_patches.dispatch import make_actions_remembered

    make_actions_remembered()
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.list_tables()
        with counted(utils.inspect, "getmembers") as listed:
            for _ in range(5):
                dynamodb.list_tables()
    assert listed[0] == 0  # unpatched moto lists DynamoHandler's methods on every request
    assert responses.method_names_from_class(DynamoHandler) == utils.method_names_from_class(DynamoHandler)
    assert "update_item" in responses.method_names_from_class(DynamoHandler)


def every_page(dynamodb: Any, **query: Any) -> list[Any]:
    """Each page of one Query, its ``LastEvaluatedKey`` handed on until there is none (at most 50):
    the items, ``LastEvaluatedKey`` and counts of each, what a patch must answer as moto does."""
    pages: list[Any] = []
    start: dict[str, Any] | None = None
    for _ in range(50):
        answer = dynamodb.query(**query, **({"ExclusiveStartKey": start} if start else {}))
        pages.append((answer["Items"], answer.get("LastEvaluatedKey"), answer["Count"], answer["ScannedCount"]))
        start = answer.get("LastEvaluatedKey")
        if not start:
            break
    return pages


@pytest.fixture
def keyed_table() -> object:
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(
            TableName="fidelity",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "N"},
                {"AttributeName": "due", "AttributeType": "N"},
            ],
            GlobalSecondaryIndexes=[
                {
                    "IndexName": "by-due",
                    "KeySchema": [
                        {"AttributeName": "pk", "KeyType": "HASH"},
                        {"AttributeName": "due", "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        for p in range(20):
            for s in range(10):
                dynamodb.put_item(
                    TableName="fidelity",
                    Item={"pk": {"S": f"p{p:02}"}, "sk": {"N": str(s)}, "due": {"N": str(100 - s)}},
                )
        yield dynamodb


def test_a_query_reads_its_partition_in_key_order_without_sorting_the_table(keyed_table: object) -> None:
    from moto.dynamodb.models.dynamo_type import DynamoType

    dynamodb: Any = keyed_table
    with counted(DynamoType, "__lt__") as compared:
        answer = dynamodb.query(
            TableName="fidelity", KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "p07"}}
        )
    assert [(i["pk"]["S"], i["sk"]["N"]) for i in answer["Items"]] == [("p07", str(s)) for s in range(10)]
    assert compared[0] < 60  # the partition's 10 items; unpatched moto sorts all 200 items (208 comparisons)

    backwards = dynamodb.query(
        TableName="fidelity",
        KeyConditionExpression="pk = :p AND sk BETWEEN :a AND :b",
        ExpressionAttributeValues={":p": {"S": "p03"}, ":a": {"N": "2"}, ":b": {"N": "5"}},
        ScanIndexForward=False,
        Limit=3,
    )
    assert [i["sk"]["N"] for i in backwards["Items"]] == ["5", "4", "3"]
    assert backwards["LastEvaluatedKey"] == {"pk": {"S": "p03"}, "sk": {"N": "3"}}
    nothing = dynamodb.query(
        TableName="fidelity", KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "none"}}
    )
    assert nothing["Items"] == []


def test_an_index_query_still_sorts_by_the_index_key(keyed_table: object) -> None:
    dynamodb: Any = keyed_table
    answer = dynamodb.query(
        TableName="fidelity",
        IndexName="by-due",
        KeyConditionExpression="pk = :p AND due >= :d",
        ExpressionAttributeValues={":p": {"S": "p11"}, ":d": {"N": "95"}},
    )
    assert [(i["due"]["N"], i["sk"]["N"]) for i in answer["Items"]] == [(str(d), str(100 - d)) for d in range(95, 101)]
    scanned = dynamodb.scan(TableName="fidelity")["Items"]
    assert len(scanned) == 200


def _index_answers(dynamodb: Any) -> list[Any]:
    """Queries of the index by-due for three partitions (one of them absent), with and without a
    condition on its sort key, forwards and backwards, a page of 3 at a time: every page."""
    answers: list[Any] = []
    conditions = (("", {}), ("AND due >= :d", {":d": {"N": "95"}}), ("AND due < :d", {":d": {"N": "93"}}))
    for partition in ("p11", "p00", "none"):
        for condition, values in conditions:
            for forward in (True, False):
                answers += every_page(
                    dynamodb,
                    TableName="fidelity",
                    IndexName="by-due",
                    KeyConditionExpression=f"pk = :p {condition}",
                    ExpressionAttributeValues={":p": {"S": partition}, **values},
                    ScanIndexForward=forward,
                    Limit=3,
                )
    return answers


def test_an_index_query_hands_moto_its_partitions_items_only_and_answers_as_moto_does(keyed_table: object) -> None:
    """local/moto_patches/query.py leaves out of an index Query the items whose index hash key is
    another: moto's loop compares the 10 items of the partition asked for, not the table's 200, and
    every answer (items, LastEvaluatedKey, counts) is the one moto gives every item."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    from local.moto_patches import query as moto_query

    dynamodb: Any = keyed_table
    with counted(DynamoType, "__ne__") as compared:
        dynamodb.query(
            TableName="fidelity",
            IndexName="by-due",
            KeyConditionExpression="pk = :p",
            ExpressionAttributeValues={":p": {"S": "p11"}},
        )
    assert compared[0] <= 10  # moto's hash key check of each item it is handed (unpatched: 200)
    patched = _index_answers(dynamodb)
    own = moto_query._with_hash_keys
    moto_query._with_hash_keys = lambda items, conditions: items  # type: ignore[assignment]
    try:
        every = _index_answers(dynamodb)
    finally:
        moto_query._with_hash_keys = own
    assert len(every) > 30
    assert patched == every


def test_a_projected_index_answers_what_moto_projects() -> None:
    """local/moto_patches/query.py copies the kept values of a KEYS_ONLY or INCLUDE index where
    all are strings, instead of moto's round trip of the whole item through plain Python: the
    answers are moto's own, whatever the other attributes hold, and an index keyed by a number
    goes through moto's own projection."""
    from moto.dynamodb.models.table import SecondaryIndex

    def index(name: str, hash_key: str, projection: dict[str, Any]) -> dict[str, Any]:
        schema = [{"AttributeName": hash_key, "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}]
        return {"IndexName": name, "KeySchema": schema, "Projection": projection}

    with mock_aws():
        dynamodb: Any = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(
            TableName="projected",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
                {"AttributeName": "lpk", "AttributeType": "S"},
                {"AttributeName": "n", "AttributeType": "N"},
            ],
            GlobalSecondaryIndexes=[
                index("keys", "lpk", {"ProjectionType": "KEYS_ONLY"}),
                index("some", "lpk", {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["name", "count"]}),
                index("numbered", "n", {"ProjectionType": "KEYS_ONLY"}),
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        for i in range(12):
            item = {"pk": {"S": f"p{i % 3}"}, "sk": {"S": f"s{i:02}"}, "lpk": {"S": f"L{i % 2}"}, "n": {"N": "7"}}
            item |= {"payload": {"M": {"a": {"L": [{"N": "1.50"}, {"BOOL": True}, {"NULL": True}]}}}}
            if i % 4:
                item["name"] = {"S": f"task {i}"}
            if i % 3:
                item["count"] = {"N": str(i * 1.25)}
            dynamodb.put_item(TableName="projected", Item=item)

        def answers() -> list[Any]:
            found = []
            for name, key, value in (
                ("keys", "lpk", {"S": "L0"}),
                ("some", "lpk", {"S": "L1"}),
                ("numbered", "n", {"N": "7"}),
            ):
                found += every_page(
                    dynamodb,
                    TableName="projected",
                    IndexName=name,
                    KeyConditionExpression="#k = :v",
                    ExpressionAttributeNames={"#k": key},
                    ExpressionAttributeValues={":v": value},
                    Limit=4,
                )
            return found

        patched = answers()
        direct = SecondaryIndex.project
        SecondaryIndex.project = direct.__wrapped__  # type: ignore[attr-defined,method-assign]
        try:
            own = answers()
        finally:
            SecondaryIndex.project = direct  # type: ignore[method-assign]
    assert len(own) >= 6
    assert {frozenset(item) for items, *_ in own for item in items} >= {
        frozenset({"pk", "sk", "lpk"}),
        frozenset({"pk", "sk", "lpk", "name", "count"}),
        frozenset({"pk", "sk", "n"}),
    }
    assert patched == own


def test_an_index_query_sees_a_write_only_after_the_lag_while_the_table_sees_it_at_once(keyed_table: object) -> None:
    """A GSI is eventually consistent ("Using Global Secondary Indexes in DynamoDB"): with a lag
    set (local/moto_patches/index_lag.py), an index Query leaves out what was put less than the lag ago."""
    from local.moto_patches.index_lag import index_lag

    dynamodb: Any = keyed_table
    now = [1000.0]

    def by_due() -> list[str]:
        answer = dynamodb.query(
            TableName="fidelity",
            IndexName="by-due",
            KeyConditionExpression="pk = :p",
            ExpressionAttributeValues={":p": {"S": "p05"}},
        )
        return [i["sk"]["N"] for i in answer["Items"]]

    with index_lag(0.5, clock=lambda: now[0]):
        dynamodb.put_item(TableName="fidelity", Item={"pk": {"S": "p05"}, "sk": {"N": "42"}, "due": {"N": "1"}})
        assert "42" not in by_due(), "not in the index yet"
        assert len(by_due()) == 10, "what was there before the lag was set is"
        table = dynamodb.get_item(
            TableName="fidelity", Key={"pk": {"S": "p05"}, "sk": {"N": "42"}}, ConsistentRead=True
        )
        assert "Item" in table, "the table reads it at once"
        now[0] += 0.5
        assert by_due()[0] == "42"
    dynamodb.put_item(TableName="fidelity", Item={"pk": {"S": "p05"}, "sk": {"N": "43"}, "due": {"N": "0"}})
    assert by_due()[0] == "43", "no lag unless one is set"


def test_an_eventually_consistent_read_may_miss_a_recent_write_and_a_strongly_consistent_one_never(
    keyed_table: object,
) -> None:
    """ "Read consistency": a GetItem without ConsistentRead may answer with the item as it was
    before a recent write. With a lag set (local/moto_patches/read_lag.py) it does, for every kind of write
    that succeeded; a failed conditional write leaves nothing to see."""
    from local.moto_patches.read_lag import read_lag

    dynamodb: Any = keyed_table
    now = [1000.0]
    key = {"pk": {"S": "p05"}, "sk": {"N": "3"}}

    def due(consistent: bool, item_key: dict[str, Any] = key) -> str | None:
        item = dynamodb.get_item(TableName="fidelity", Key=item_key, ConsistentRead=consistent).get("Item")
        return None if item is None else item["due"]["N"]

    with read_lag(0.5, clock=lambda: now[0]):
        dynamodb.update_item(
            TableName="fidelity", Key=key, UpdateExpression="SET due = :d", ExpressionAttributeValues={":d": {"N": "1"}}
        )
        assert (due(consistent=False), due(consistent=True)) == ("97", "1")
        projected = dynamodb.get_item(TableName="fidelity", Key=key, ProjectionExpression="sk")["Item"]
        assert projected == {"sk": {"N": "3"}}
        now[0] += 0.5
        assert due(consistent=False) == "1", "every copy has it a lag later"

        new = {"pk": {"S": "p05"}, "sk": {"N": "77"}}
        put = {"Put": {"TableName": "fidelity", "Item": {**new, "due": {"N": "5"}}}}
        dynamodb.transact_write_items(TransactItems=[put])
        assert (due(False, new), due(True, new)) == (None, "5"), "a new item is not there yet for every copy"
        dynamodb.delete_item(TableName="fidelity", Key=key)
        assert (due(consistent=False), due(consistent=True)) == ("1", None)

        with pytest.raises(dynamodb.exceptions.ConditionalCheckFailedException):
            dynamodb.put_item(
                TableName="fidelity",
                Item={"pk": {"S": "p06"}, "sk": {"N": "4"}, "due": {"N": "0"}},
                ConditionExpression="attribute_not_exists(pk)",
            )
        other = {"pk": {"S": "p06"}, "sk": {"N": "4"}}
        assert due(False, other) == "96", "a write that failed its condition changed nothing"
    dynamodb.update_item(
        TableName="fidelity", Key=other, UpdateExpression="SET due = :d", ExpressionAttributeValues={":d": {"N": "2"}}
    )
    assert due(False, other) == "2", "no lag unless one is set"


def test_a_lagging_write_copies_and_records_the_item_it_replaces_inside_the_writes_lock(
    keyed_table: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DynamoDB's writes to one item are atomic. With a lag set, a write copies the item it is about
    to replace and records the copy after it wrote: both inside the lock moto's writes hold
    (local/moto_patches/atomic.py), or the trigger's threads claiming one occurrence at once copy an item
    another claim is changing (a clean-clone run failed on "dictionary changed size during
    iteration") and record their versions out of order."""
    from local.moto_patches import read_lag as moto_read_lag
    from local.moto_patches.atomic import LOCK

    dynamodb: Any = keyed_table
    seen: list[tuple[str, bool]] = []
    current, remember = moto_read_lag._current, moto_read_lag.LAG.remember

    def copying(*args: Any) -> Any:
        seen.append(("copy", LOCK._is_owned()))  # type: ignore[attr-defined]
        return current(*args)

    def recording(*args: Any) -> Any:
        seen.append(("record", LOCK._is_owned()))  # type: ignore[attr-defined]
        return remember(*args)

    monkeypatch.setattr(moto_read_lag, "_current", copying)
    monkeypatch.setattr(moto_read_lag.LAG, "remember", recording)
    with moto_read_lag.read_lag(0.5, clock=lambda: 1000.0):
        dynamodb.update_item(
            TableName="fidelity",
            Key={"pk": {"S": "p05"}, "sk": {"N": "3"}},
            UpdateExpression="SET due = :d",
            ExpressionAttributeValues={":d": {"N": "1"}},
        )
    assert seen == [("copy", True), ("record", True)]


def test_a_number_that_does_not_parse_is_refused_as_dynamodb_refuses_it(keyed_table: object) -> None:
    """Numbers travel as strings; DynamoDB answers one that is not a number with a
    ValidationException (local/moto_patches/numbers.py): unpatched moto stored it."""
    dynamodb: Any = keyed_table
    key = {"pk": {"S": "p01"}, "sk": {"N": "1"}}
    for value in ({"N": "null"}, {"N": "b"}, {"N": ""}, {"NS": ["1", "b"]}, {"N": "NaN"}):
        with pytest.raises(dynamodb.exceptions.ClientError) as refused:
            dynamodb.update_item(
                TableName="fidelity", Key=key, UpdateExpression="SET v = :v", ExpressionAttributeValues={":v": value}
            )
        assert refused.value.response["Error"]["Code"] == "ValidationException"
        assert "cannot be converted to a numeric value" in refused.value.response["Error"]["Message"]
    with pytest.raises(dynamodb.exceptions.ClientError):
        dynamodb.put_item(TableName="fidelity", Item={**key, "due": {"N": "null"}})
    dynamodb.update_item(
        TableName="fidelity", Key=key, UpdateExpression="SET v = :v", ExpressionAttributeValues={":v": {"N": "-1.5E3"}}
    )
    assert dynamodb.get_item(TableName="fidelity", Key=key)["Item"]["v"] == {"N": "-1.5E3"}


def test_a_failed_transaction_leaves_every_item_as_it_was_and_copies_only_those(keyed_table: object) -> None:
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    dynamodb: Any = keyed_table
    table = dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].tables["fidelity"]
    untouched = table.items[next(iter(table.items))]
    before = dynamodb.scan(TableName="fidelity")["Items"]

    def key(p: str, s: int) -> dict[str, Any]:
        return {"pk": {"S": p}, "sk": {"N": str(s)}}

    with pytest.raises(dynamodb.exceptions.TransactionCanceledException):
        dynamodb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": "fidelity", "Item": {**key("new", 1), "due": {"N": "1"}}}},
                {"Put": {"TableName": "fidelity", "Item": {**key("p01", 1), "due": {"N": "7"}}}},
                {"Delete": {"TableName": "fidelity", "Key": key("p02", 2)}},
                {
                    "Update": {
                        "TableName": "fidelity",
                        "Key": key("p03", 3),
                        "UpdateExpression": "SET due = :d",
                        "ExpressionAttributeValues": {":d": {"N": "0"}},
                    }
                },
                {
                    "ConditionCheck": {
                        "TableName": "fidelity",
                        "Key": key("p04", 4),
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
            ]
        )
    assert dynamodb.scan(TableName="fidelity")["Items"] == before
    # The items the transaction did not name are the very ones stored before: unpatched moto
    # deep-copies the whole table for every transaction and puts the copy back when one fails.
    assert table is dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].tables["fidelity"]
    assert table.items[next(iter(table.items))] is untouched

    dynamodb.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": "fidelity", "Item": {**key("new", 1), "due": {"N": "1"}}}},
            {"Delete": {"TableName": "fidelity", "Key": key("p02", 2)}},
        ]
    )
    after = {(i["pk"]["S"], i["sk"]["N"]) for i in dynamodb.scan(TableName="fidelity")["Items"]}
    assert ("new", "1") in after
    assert ("p02", "2") not in after
    assert len(after) == 200


def test_a_receive_does_not_count_the_queue_for_each_message_and_still_drops_expired_ones(
    queue: tuple[object, str],
) -> None:
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.sqs.models import Queue, sqs_backends

    sqs: Any = queue[0]
    url = queue[1]
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"MessageRetentionPeriod": "60"})
    sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": str(i)} for i in range(5)])
    sqs.send_message_batch(  # still delayed: counted by moto's attributes, not received
        QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": "later", "DelaySeconds": 900} for i in range(10)]
    )
    with counted(Queue, "attributes") as built:
        answer = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0)
    assert sorted(m["Body"] for m in answer["Messages"]) == ["0", "1", "2", "3", "4"]
    assert built[0] == 0  # unpatched moto builds them for every message it returns (15 times here)

    stored = sqs_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].get_queue("fidelity")
    for message in stored._messages:
        message.sent_timestamp -= 61_000  # older than the retention period
    assert "Messages" not in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)


def test_a_send_does_not_count_the_queue_and_the_counts_stay_right(queue: tuple[object, str]) -> None:
    from moto.sqs.models import Message

    sqs: Any = queue[0]
    url = queue[1]
    for _ in range(2):
        sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": "now"} for i in range(10)])
    sqs.send_message_batch(
        QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": "later", "DelaySeconds": 900} for i in range(10)]
    )
    with counted(Message, "delayed") as looked_at:
        sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": "more"} for i in range(10)])
    assert looked_at[0] == 0  # unpatched moto counts all 30 queued messages twice per message sent (600 here)
    received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=5, VisibilityTimeout=60)
    assert len(received["Messages"]) == 5
    counts = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert counts["ApproximateNumberOfMessages"] == "25"
    assert counts["ApproximateNumberOfMessagesNotVisible"] == "5"
    assert counts["ApproximateNumberOfMessagesDelayed"] == "10"


def test_a_fifo_queue_still_deduplicates_by_content() -> None:
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(
            QueueName="fidelity.fifo", Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"}
        )["QueueUrl"]
        for _ in range(2):
            sqs.send_message(QueueUrl=url, MessageBody="same", MessageGroupId="g")
        sqs.send_message(QueueUrl=url, MessageBody="other", MessageGroupId="g")
        answer = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
        assert [m["Body"] for m in answer["Messages"]] == ["same", "other"]


def _every_item_operation(dynamodb: Any) -> None:
    """DynamoDB calls whose answers span what Sundial reads: items of every attribute type, the
    return values of writes, pages, batches, transactions, a table's description."""
    item = {
        "pk": {"S": "p99"},
        "sk": {"N": "1"},
        "due": {"N": "12.5"},
        "s": {"S": 'ünïcode "quoted" \\ \n'},
        "b": {"B": b"\x00\xffbytes"},
        "ss": {"SS": ["a", "b"]},
        "ns": {"NS": ["1", "2.5"]},
        "bs": {"BS": [b"x", b"y"]},
        "m": {"M": {"inner": {"L": [{"S": "x"}, {"N": "2"}, {"NULL": True}, {"BOOL": False}]}}},
        "flag": {"BOOL": True},
        "blank": {"S": ""},
    }
    dynamodb.put_item(TableName="fidelity", Item=item, ReturnConsumedCapacity="TOTAL")
    dynamodb.put_item(TableName="fidelity", Item=item, ReturnValues="ALL_OLD")
    dynamodb.get_item(TableName="fidelity", Key={"pk": item["pk"], "sk": item["sk"]}, ConsistentRead=True)
    dynamodb.get_item(TableName="fidelity", Key={"pk": {"S": "none"}, "sk": {"N": "0"}})
    for returned in ("ALL_NEW", "ALL_OLD", "UPDATED_NEW", "UPDATED_OLD", "NONE"):
        dynamodb.update_item(
            TableName="fidelity",
            Key={"pk": item["pk"], "sk": item["sk"]},
            UpdateExpression="SET #d = :d ADD n :one REMOVE blank",
            ConditionExpression="attribute_exists(pk) AND #d <> :never",
            ExpressionAttributeNames={"#d": "due"},
            ExpressionAttributeValues={":d": {"N": "7"}, ":one": {"N": "1"}, ":never": {"N": "-1"}},
            ReturnValues=returned,
        )
    dynamodb.query(
        TableName="fidelity",
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "p01"}},
        Limit=4,
        ReturnConsumedCapacity="INDEXES",
    )
    dynamodb.query(
        TableName="fidelity",
        IndexName="by-due",
        KeyConditionExpression="pk = :p AND due > :d",
        ExpressionAttributeValues={":p": {"S": "p02"}, ":d": {"N": "95"}},
        Select="COUNT",
    )
    dynamodb.scan(
        TableName="fidelity", Limit=7, FilterExpression="sk > :s", ExpressionAttributeValues={":s": {"N": "3"}}
    )
    dynamodb.batch_get_item(
        RequestItems={"fidelity": {"Keys": [{"pk": {"S": "p03"}, "sk": {"N": str(s)}} for s in range(3)]}}
    )
    dynamodb.batch_write_item(
        RequestItems={
            "fidelity": [{"PutRequest": {"Item": {"pk": {"S": "w"}, "sk": {"N": str(s)}}}} for s in range(5)]
            + [{"DeleteRequest": {"Key": {"pk": {"S": "p04"}, "sk": {"N": "1"}}}}]
        }
    )
    dynamodb.transact_get_items(
        TransactItems=[{"Get": {"TableName": "fidelity", "Key": {"pk": {"S": "p05"}, "sk": {"N": "2"}}}}]
    )
    dynamodb.transact_write_items(
        TransactItems=[{"Put": {"TableName": "fidelity", "Item": {"pk": {"S": "t"}, "sk": {"N": "1"}}}}]
    )
    dynamodb.delete_item(TableName="fidelity", Key={"pk": {"S": "t"}, "sk": {"N": "1"}}, ReturnValues="ALL_OLD")
    dynamodb.describe_table(TableName="fidelity")
    dynamodb.list_tables()


def test_a_dynamodb_answer_is_serialized_as_moto_serializes_it_without_its_generic_walk(keyed_table: object) -> None:
    from moto.core.responses import ActionResult
    from moto.core.serialize import JSONSerializer

    from local.moto_patches.serialize import Unsupported, fast_body

    dynamodb: Any = keyed_table
    patched = ActionResult.execute_result
    assert getattr(patched, "_sundial_direct", False)  # tests/conftest.py applies the patch
    moto_own = patched.__wrapped__  # type: ignore[attr-defined]
    compared: list[str] = []
    differing: list[tuple[str, Any, Any]] = []

    def both(self: Any, context: Any) -> Any:
        own = moto_own(self, context)
        try:
            fast = fast_body(self.result, context)
        except Unsupported:
            return own
        compared.append(context.operation_model.name)
        if fast != tuple(own):
            differing.append((context.operation_model.name, own, fast))
        return own

    ActionResult.execute_result = both  # type: ignore[method-assign]
    try:
        _every_item_operation(dynamodb)
    finally:
        ActionResult.execute_result = patched  # type: ignore[method-assign]
    assert differing == []  # status, headers and body, byte for byte
    assert {"GetItem", "PutItem", "UpdateItem", "Query", "Scan", "BatchGetItem", "BatchWriteItem"} <= set(compared)
    assert {"TransactGetItems", "TransactWriteItems"} <= set(compared)
    assert "DeleteItem" not in compared  # moto adds a key of its own (ConsumedCapacityUnits): its walk answers

    with counted(JSONSerializer, "serialize") as walked:
        got = dynamodb.get_item(TableName="fidelity", Key={"pk": {"S": "p99"}, "sk": {"N": "1"}})
        described = dynamodb.describe_table(TableName="fidelity")  # timestamps: moto's own walk
    assert got["Item"]["b"]["B"] == b"\x00\xffbytes"
    assert got["Item"]["bs"]["BS"] == [b"x", b"y"]
    assert described["Table"]["TableName"] == "fidelity"
    assert walked[0] == 1  # the description only; unpatched moto walks the GetItem's answer too


def test_an_expression_is_parsed_once_and_its_values_still_decide(keyed_table: object) -> None:
    from moto.dynamodb.parsing.tokens import ExpressionTokenizer

    dynamodb: Any = keyed_table
    key = {"pk": {"S": "p06"}, "sk": {"N": "1"}}
    with counted(ExpressionTokenizer, "make_list") as tokenized:
        for due in range(5):
            dynamodb.update_item(
                TableName="fidelity",
                Key=key,
                UpdateExpression="SET due = :d, marked_by_fidelity = :d",
                ConditionExpression="due <> :d",
                ExpressionAttributeValues={":d": {"N": str(due)}},
            )
    assert tokenized[0] <= 2  # unpatched moto tokenizes the update expression twice per call (10 here)
    stored = dynamodb.get_item(TableName="fidelity", Key=key)["Item"]
    assert stored["due"] == {"N": "4"}
    with pytest.raises(dynamodb.exceptions.ConditionalCheckFailedException):  # the same text, other values
        dynamodb.update_item(
            TableName="fidelity",
            Key=key,
            UpdateExpression="SET due = :d, marked_by_fidelity = :d",
            ConditionExpression="due <> :d",
            ExpressionAttributeValues={":d": {"N": "4"}},
        )
    for _ in range(2):  # a parse that fails is not remembered: it fails every time
        with pytest.raises(dynamodb.exceptions.ClientError, match="ValidationException"):
            dynamodb.update_item(
                TableName="fidelity",
                Key=key,
                UpdateExpression="SET due = = :d",
                ExpressionAttributeValues={":d": {"N": "1"}},
            )


def test_a_receive_reads_the_pending_groups_from_a_copy_of_the_messages_in_flight() -> None:
    """moto iterated the set of messages in flight while a delete on another thread changed it
    ("Set changed size during iteration", local/moto_patches/sqs.py): the property now reads a copy, and
    still answers the FIFO groups. Here reading one message's group deletes another, as a delete
    between two steps of the iteration would."""
    from moto.sqs.models import Queue

    queue = Queue.__new__(Queue)

    class Message:
        def __init__(self, group: str | None) -> None:
            self.group = group

        @property
        def group_id(self) -> str | None:
            queue._pending_messages.discard(others.pop()) if others else None
            return self.group

    others = [Message(None), Message(None)]
    queue._pending_messages = {Message("a"), Message("b"), *others}
    assert queue.pending_message_groups == {"a", "b"}


def test_a_queue_created_while_another_creation_looks_for_its_dead_letter_queue_leaves_both_made() -> None:
    """moto's CreateQueue of a queue with a redrive policy iterates the account's queues to find
    its dead-letter queue, and a CreateQueue on another thread changed them meanwhile ("dictionary
    changed size during iteration": local/moto_patches/sqs.py). Here the first creation stops inside
    that iteration, at a queue that is not its dead-letter queue, and a second creation starts: it
    waits for the first (both hold moto's lock), and both queues are made. Unpatched, nothing holds
    the second back: it is let finish before the first goes on, and the first fails."""
    from moto.sqs.models import Queue, sqs_backends

    from local.moto_patches.atomic import LOCK

    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        sqs.create_queue(QueueName="other")
        dead = sqs.create_queue(QueueName="dead")["QueueUrl"]
        dead_arn = sqs.get_queue_attributes(QueueUrl=dead, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        inside, go = threading.Event(), threading.Event()

        class Pausing(Queue):
            """``other``: the first creation's iteration stops when it reads its ARN."""

            @property
            def queue_arn(self) -> str:
                if threading.current_thread().name == "first":
                    inside.set()
                    go.wait(10)
                return str(self.__dict__["queue_arn"])

        sqs_backends["123456789012"]["us-east-1"].queues["other"].__class__ = Pausing
        errors: list[BaseException] = []

        def create(name: str, attributes: dict[str, str]) -> None:
            try:
                sqs.create_queue(QueueName=name, Attributes=attributes)
            except BaseException as error:
                errors.append(error)

        redrive = {"RedrivePolicy": json.dumps({"deadLetterTargetArn": dead_arn, "maxReceiveCount": "5"})}
        first = threading.Thread(target=create, args=("first", redrive), name="first")
        second = threading.Thread(target=create, args=("second", {}), name="second")
        first.start()
        assert inside.wait(10)
        unserialized = LOCK.acquire(blocking=False)  # the first creation does not hold the lock
        if unserialized:
            LOCK.release()
        second.start()
        if unserialized:
            second.join(10)  # it changes the queues while the first is mid-iteration
        go.set()
        first.join(10)
        second.join(10)
        assert errors == []
        names = {url.rsplit("/", 1)[1] for url in sqs.list_queues()["QueueUrls"]}
        assert names == {"other", "dead", "first", "second"}


def test_symmetric_keys_share_an_unused_private_key_and_still_encrypt_while_signing_keys_get_their_own() -> None:
    """local/moto_patches/kms.py: moto made an RSA key for every KMS key, a symmetric one too."""
    from moto.kms import models

    with mock_aws():
        kms = boto3.client("kms", region_name="us-east-1")
        first, second = (kms.create_key(KeyUsage="ENCRYPT_DECRYPT")["KeyMetadata"]["KeyId"] for _ in range(2))
        backend = models.kms_backends["123456789012"]["us-east-1"]
        assert backend.keys[first].private_key is backend.keys[second].private_key
        sealed = kms.encrypt(KeyId=first, Plaintext=b"secret")["CiphertextBlob"]
        assert kms.decrypt(CiphertextBlob=sealed)["Plaintext"] == b"secret"
        with pytest.raises(kms.exceptions.ClientError):  # another key's ciphertext is not this one's
            kms.decrypt(CiphertextBlob=sealed, KeyId=second)
        signing = [kms.create_key(KeyUsage="SIGN_VERIFY", KeySpec="RSA_2048")["KeyMetadata"]["KeyId"] for _ in range(2)]
        assert backend.keys[signing[0]].private_key is not backend.keys[signing[1]].private_key
        signature = kms.sign(KeyId=signing[0], Message=b"m", SigningAlgorithm="RSASSA_PSS_SHA_256")["Signature"]
        verified = kms.verify(
            KeyId=signing[0], Message=b"m", Signature=signature, SigningAlgorithm="RSASSA_PSS_SHA_256"
        )
        assert verified["SignatureValid"]


def test_an_update_answers_the_item_as_its_own_write_left_it_while_others_write_it(keyed_table: object) -> None:
    """DynamoDB returns ReturnValues (ALL_NEW, ALL_OLD) as of the request's own write, atomically.
    moto builds them outside its write: read before it, serialized after it, when another thread
    may have written the item again. A counter ADDed from several threads then answered the
    same value twice and skipped one, and a job lost the notify of the threshold the skipped
    count crossed (local/moto_patches/atomic.py serializes the whole request)."""
    dynamodb: Any = keyed_table
    threads, each = 8, 40
    news: list[int] = []
    olds: list[int] = []
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def add_one(counter: str, returned: str) -> int:
        """ADD 1 to ``counter`` of one item: the counter as the ReturnValues answer shows it."""
        attributes = dynamodb.update_item(
            TableName="fidelity",
            Key={"pk": {"S": "p00"}, "sk": {"N": "0"}},
            UpdateExpression=f"ADD {counter} :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
            ReturnValues=returned,
        ).get("Attributes", {})
        return int(attributes.get(counter, {"N": "0"})["N"])

    def count() -> None:
        start.wait()
        for _ in range(each):
            new, old = add_one("n", "ALL_NEW"), add_one("m", "ALL_OLD")
            with lock:
                news.append(new)
                olds.append(old)

    workers = [threading.Thread(target=count) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert sorted(news) == list(range(1, threads * each + 1))
    assert sorted(olds) == list(range(threads * each))


def test_a_read_sees_an_update_whole_or_not_at_all(keyed_table: object) -> None:
    """DynamoDB's reads see an item as one write left it (item-level atomicity: a GetItem never
    returns half of an UpdateItem). moto applies an update's actions to the stored item one at a
    time and serializes a read outside its writes, so a read could see a task ``failed`` whose run
    was still ``firing`` (an e2e test saw it). local/moto_patches/atomic.py serializes reads with writes."""
    dynamodb: Any = keyed_table
    key = {"pk": {"S": "p00"}, "sk": {"N": "1"}}
    names = [f"a{n}" for n in range(60)]
    dynamodb.put_item(TableName="fidelity", Item={**key, **{name: {"N": "0"} for name in names}})
    stop = threading.Event()
    torn: list[set[str]] = []

    def write() -> None:
        try:
            for i in range(1, 80):
                dynamodb.update_item(
                    TableName="fidelity",
                    Key=key,
                    UpdateExpression="SET " + ", ".join(f"{name} = :i" for name in names),
                    ExpressionAttributeValues={":i": {"N": str(i)}},
                )
        finally:
            stop.set()

    def read() -> None:
        while not stop.is_set():
            item = dynamodb.get_item(TableName="fidelity", Key=key, ConsistentRead=True)["Item"]
            values = {item[name]["N"] for name in names}
            if len(values) > 1:
                torn.append(values)
            found = dynamodb.query(
                TableName="fidelity",
                KeyConditionExpression="pk = :p AND sk = :s",
                ExpressionAttributeValues={":p": {"S": "p00"}, ":s": {"N": "1"}},
                ConsistentRead=True,
            )["Items"]
            torn.extend(values for i in found if len(values := {i[name]["N"] for name in names}) > 1)

    workers = [threading.Thread(target=write), *(threading.Thread(target=read) for _ in range(3))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert torn == []


def test_a_named_attribute_is_read_without_building_them_all_and_answers_as_moto_does() -> None:
    """Each attribute name alone, and a few together, on a standard queue with a redrive policy and a
    policy, a FIFO queue and a queue with a KMS key: the patched answer is what moto's own
    ``get_queue_attributes`` (building ``Queue.attributes``) answers."""
    import json

    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.sqs.models import Queue, SQSBackend, sqs_backends

    original = SQSBackend.get_queue_attributes.__wrapped__  # type: ignore[attr-defined]
    with mock_aws():
        sqs: Any = boto3.client("sqs", region_name="us-east-1")
        dead = sqs.create_queue(QueueName="dead")["QueueUrl"]
        dead_arn = sqs.get_queue_attributes(QueueUrl=dead, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        redrive = json.dumps({"deadLetterTargetArn": dead_arn, "maxReceiveCount": 3})
        plain = sqs.create_queue(QueueName="plain", Attributes={"RedrivePolicy": redrive, "VisibilityTimeout": "7"})
        sqs.add_permission(
            QueueUrl=plain["QueueUrl"], Label="l", AWSAccountIds=["111122223333"], Actions=["SendMessage"]
        )
        sqs.create_queue(QueueName="f.fifo", Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})
        sqs.create_queue(QueueName="kms", Attributes={"KmsMasterKeyId": "alias/aws/sqs"})
        sqs.send_message(QueueUrl=plain["QueueUrl"], MessageBody="now")
        sqs.send_message(QueueUrl=plain["QueueUrl"], MessageBody="later", DelaySeconds=900)
        sqs.receive_message(QueueUrl=plain["QueueUrl"], VisibilityTimeout=60)
        backend = sqs_backends[DEFAULT_ACCOUNT_ID]["us-east-1"]
        names = [*Queue.BASE_ATTRIBUTES, *Queue.FIFO_ATTRIBUTES, *Queue.KMS_ATTRIBUTES]
        for queue_name in ("plain", "f.fifo", "kms", "dead"):
            for asked in [[name] for name in names] + [names[:5], ["VisibilityTimeout", "QueueArn"], names]:
                assert backend.get_queue_attributes(queue_name, asked) == original(backend, queue_name, asked), (
                    queue_name,
                    asked,
                )
        with counted(Queue, "attributes") as built:
            visibility = sqs.get_queue_attributes(QueueUrl=plain["QueueUrl"], AttributeNames=["VisibilityTimeout"])
        assert visibility["Attributes"] == {"VisibilityTimeout": "7"}
        assert built[0] == 0  # unpatched moto builds them all twice for the one name


def test_sqs_reads_the_wall_as_moto_did_without_building_datetimes() -> None:
    import time

    import moto.sqs.models as sqs_models
    from moto.core import utils

    assert getattr(sqs_models.unix_time, "_sundial_cheap", False)
    before = utils.unix_time_millis()
    cheap = sqs_models.unix_time_millis()
    after = utils.unix_time_millis()
    assert before - 1 <= cheap <= after + 1  # the same instant (utcnow's microseconds aside)
    assert abs(sqs_models.unix_time() - time.time()) < 1
    moment = utils.utcfromtimestamp(1_900_000_000)
    assert sqs_models.unix_time(moment) == utils.unix_time(moment) == 1_900_000_000


def test_a_queues_attribute_names_are_remembered_and_receipt_handles_are_185_letters_each_new() -> None:
    import string

    import moto.sqs.models as sqs_models
    from moto.core.utils import camelcase_to_underscores

    for name in ("ApproximateNumberOfMessagesNotVisible", "QueueArn", "KmsDataKeyReusePeriodSeconds"):
        assert sqs_models.camelcase_to_underscores(name) == camelcase_to_underscores(name)
    remembered = sqs_models.camelcase_to_underscores.cache_info()  # type: ignore[attr-defined]
    sqs_models.camelcase_to_underscores("QueueArn")
    assert sqs_models.camelcase_to_underscores.cache_info().hits == remembered.hits + 1  # type: ignore[attr-defined]
    handles = {sqs_models.generate_receipt_handle() for _ in range(200)}
    assert len(handles) == 200
    assert all(len(handle) == 185 and set(handle) <= set(string.ascii_lowercase) for handle in handles)
    with mock_aws():
        sqs: Any = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="handles")["QueueUrl"]
        sqs.send_message(QueueUrl=url, MessageBody="m")
        (message,) = sqs.receive_message(QueueUrl=url)["Messages"]
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])  # the handle works
        assert "Messages" not in sqs.receive_message(QueueUrl=url, VisibilityTimeout=0)


UPDATES: list[tuple[str, dict[str, Any]]] = [
    ("SET a = :n, b = :s, m = :m, l = :l, ss = :ss", {}),
    ("SET m.inner.deep = :n, l[1] = :s, #r = if_not_exists(#r, :n)", {"#r": "ran"}),
    ("SET l = list_append(l, :l), a = a + :n, b = :s REMOVE m.inner.gone, l[0] ADD ss :ss2, counter :n", {}),
    ("DELETE ss :ss2 SET #s = :s, a = a - :n", {"#s": "status"}),
    ("REMOVE l[2], l[0], nothing SET l[5] = :n", {}),
    ("SET a = :n SET b = :s", {}),  # two SET clauses
    ("ADD a :n ADD b :n", {}),  # two ADD clauses
    ("SET m = :m, m.inner = :n", {}),  # overlapping paths
    ("SET pk = :s", {}),  # a key attribute
    ("SET b = b + :n", {}),  # a string plus a number
    ("SET missing.deep = :n", {}),  # a path that does not exist
    ("SET a = :nothing", {}),  # an undefined value
    ("SET m.#undefined = :n", {}),  # an undefined name (at the root, moto itself fails: a KeyError)
    ("SET e = :empty", {}),
    ("ADD ss :n", {}),  # a number added to a string set
    ("SET l = list_append(:l, l), m.inner.deep = m.inner.deep + :n, a = if_not_exists(a, :n)", {}),
]
VALUES: dict[str, Any] = {
    ":n": {"N": "3"},
    ":s": {"S": "text"},
    ":m": {"M": {"inner": {"M": {"deep": {"N": "1"}, "gone": {"S": "x"}}}}},
    ":l": {"L": [{"N": "1"}, {"S": "two"}, {"BOOL": True}]},
    ":ss": {"SS": ["a", "b"]},
    ":ss2": {"SS": ["b", "c"]},
    ":empty": {"S": ""},
}


def _updated_each(dynamodb: Any) -> list[Any]:
    """Each of ``UPDATES`` on the same item, in order: the item after it, or the error moto answered."""
    answers: list[Any] = []
    key = {"pk": {"S": "expressions"}, "sk": {"N": "1"}}
    dynamodb.put_item(TableName="fidelity", Item={**key, "first": {"S": "1"}})
    for expression, names in UPDATES:
        used = {k: v for k, v in VALUES.items() if k in expression}
        try:
            answer = dynamodb.update_item(
                TableName="fidelity",
                Key=key,
                UpdateExpression=expression,
                ReturnValues="ALL_NEW",
                **({"ExpressionAttributeNames": names} if names else {}),
                **({"ExpressionAttributeValues": used} if used else {}),
            )
            answers.append(answer["Attributes"])
        except dynamodb.exceptions.ClientError as error:
            answers.append(error.response["Error"])
    return answers


def _shape(node: Any) -> Any:
    """A tree of moto's parse, as its classes and leaves (its nodes have no ``repr`` of their own)."""
    if not hasattr(node, "children"):
        return node
    return type(node).__name__, [_shape(child) for child in node.children or []]


def test_an_update_is_validated_and_applied_as_moto_does_it(keyed_table: object) -> None:
    """local/moto_patches/expressions.py's cheaper walks and copies of an update's tree: every update
    (each kind of action and function, and each refusal moto makes) answers what moto's own
    walks answer; and the tree remembered for an expression's text is never changed by a use."""
    from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser, Node  # type: ignore[attr-defined]
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]

    assert getattr(Node, "_sundial_cheap", False)
    cheap = _updated_each(keyed_table)
    tree = UpdateExpressionParser.make(UPDATES[2][0])
    before = _shape(tree)
    traverse, find, node_copy = DepthFirstTraverser.traverse_node_recursively, Node.find_clauses, Node.__deepcopy__
    DepthFirstTraverser.traverse_node_recursively = traverse.__wrapped__
    Node.find_clauses = find.__wrapped__
    del Node.__deepcopy__
    try:
        keyed_table.delete_item(TableName="fidelity", Key={"pk": {"S": "expressions"}, "sk": {"N": "1"}})  # type: ignore[attr-defined]
        own = _updated_each(keyed_table)
    finally:
        DepthFirstTraverser.traverse_node_recursively = traverse
        Node.find_clauses = find
        Node.__deepcopy__ = node_copy
    assert cheap == own
    assert sum("Message" in answer for answer in own) >= 8  # the refusals were made, and alike
    assert UpdateExpressionParser.make(UPDATES[2][0]) is tree  # the remembered tree (local/moto_patches/expressions.py)
    assert _shape(tree) == before
    copied = copy.deepcopy(tree)
    assert _shape(copied) == before
    assert copied.children[0].parent is copied  # as deepcopy copies: the parents are the copy's


WORD_CONDITIONS: list[tuple[str, dict[str, Any]]] = [
    ("AND begins_with(sk, :a)", {":a": {"S": "al"}}),
    ("AND begins_with(sk, :a)", {":a": {"S": "c"}}),
    ("AND sk > :a", {":a": {"S": "alp"}}),
    ("AND sk BETWEEN :a AND :b", {":a": {"S": "alp"}, ":b": {"S": "b"}}),
    ("AND sk < :a", {":a": {"S": "b"}}),
]


def _every_range_query(dynamodb: Any) -> list[Any]:
    """Queries of one partition (sort keys 0 to 9, numbers) and of another (strings), with each kind
    of sort key condition, forwards and backwards, each limit up to past the end, each page in turn:
    every answer's items, ``LastEvaluatedKey`` and counts."""
    conditions: list[tuple[str, dict[str, Any]]] = [
        ("", {}),
        ("AND sk = :a", {":a": {"N": "4"}}),
        ("AND sk = :a", {":a": {"N": "42"}}),
        ("AND sk < :a", {":a": {"N": "3"}}),
        ("AND sk <= :a", {":a": {"N": "3"}}),
        ("AND sk > :a", {":a": {"N": "6"}}),
        ("AND sk >= :a", {":a": {"N": "6"}}),
        ("AND sk > :a", {":a": {"N": "9"}}),
        ("AND sk BETWEEN :a AND :b", {":a": {"N": "2"}, ":b": {"N": "5"}}),
        ("AND sk BETWEEN :a AND :b", {":a": {"N": "-3"}, ":b": {"N": "0"}}),
        ("AND sk BETWEEN :a AND :b", {":a": {"N": "3.5"}, ":b": {"N": "3.7"}}),
    ]
    answers: list[Any] = []
    for partition, sort_type, extra in (("p05", "N", []), ("words", "S", ["alpha", "alp", "beta", "al", "b", "zeta"])):
        for word in extra:
            dynamodb.put_item(TableName="words", Item={"pk": {"S": partition}, "sk": {"S": word}})
        table = "fidelity" if sort_type == "N" else "words"
        for condition, values in conditions if sort_type == "N" else WORD_CONDITIONS:
            for forward in (True, False):
                for limit in (None, 1, 2, 3, 4, 11):
                    answers += every_page(
                        dynamodb,
                        TableName=table,
                        KeyConditionExpression=f"pk = :p {condition}",
                        ExpressionAttributeValues={":p": {"S": partition}, **values},
                        ScanIndexForward=forward,
                        **({"Limit": limit} if limit else {}),
                    )
    return answers


def test_a_query_reads_the_items_in_range_and_answers_as_moto_does(keyed_table: object) -> None:
    """local/moto_patches/query.py hands moto only the partition's items in range, and one on each side:
    every answer (items, LastEvaluatedKey, counts) is moto's own, and moto looks at a few items
    of the partition, not all of them."""
    from moto.dynamodb.models.dynamo_type import Item
    from moto.dynamodb.models.table import Table

    from local.moto_patches import query as moto_query

    dynamodb: Any = keyed_table
    dynamodb.create_table(
        TableName="words",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": name, "AttributeType": "S"} for name in ("pk", "sk")],
        BillingMode="PAY_PER_REQUEST",
    )
    near = moto_query._near_range
    with counted(Item, "size") as measured:
        dynamodb.query(
            TableName="fidelity",
            KeyConditionExpression="pk = :p AND sk = :a",
            ExpressionAttributeValues={":p": {"S": "p05"}, ":a": {"N": "4"}},
        )
    assert measured[0] <= 4  # the item, and one each side (unpatched: the 5 from 4 to 9 and the one it returns)
    narrowed = _every_range_query(dynamodb)
    moto_query._near_range = lambda items, comparison, values: items  # type: ignore[assignment]
    try:
        for word in ("alpha", "alp", "beta", "al", "b", "zeta"):
            dynamodb.delete_item(TableName="words", Key={"pk": {"S": "words"}, "sk": {"S": word}})
        own = _every_range_query(dynamodb)
    finally:
        moto_query._near_range = near
    assert len(own) > 150
    assert narrowed == own
    assert getattr(Table.query, "_sundial_partitioned", False)


CONDITIONS = [
    # the claim's, as the store writes it (shared/store/pipeline.py): a first attempt and a retry
    (
        "(#status = :s AND #due = :d) AND (attribute_not_exists(#rd) OR #rd <> :d)",
        {"#status": "status", "#due": "due_ms", "#rd": "run_due_ms"},
        [{":s": {"S": "scheduled"}, ":d": {"N": str(due)}} for due in (100, 200, 300)],
    ),
    (
        "#rid = :r AND #rd = :d AND #rs = :st AND #a = :n",
        {"#rid": "run_id", "#rd": "run_due_ms", "#rs": "run_status", "#a": "attempts"},
        [
            {":r": {"S": run}, ":d": {"N": due}, ":st": {"S": "retrying"}, ":n": {"N": n}}
            for run, due, n in (("r1", "100", "1"), ("r2", "200", "2"), ("r1", "200", "1"))
        ],
    ),
    (
        "attribute_not_exists(#l) OR #l < :now",
        {"#l": "lease_until_ms"},
        [{":now": {"N": str(now)}} for now in (50, 150, 250)],
    ),
    (
        "#status IN (:a, :b) AND size(#name) BETWEEN :lo AND :hi AND begins_with(#name, :p)",
        {"#status": "status", "#name": "name"},
        [
            {":a": {"S": a}, ":b": {"S": "paused"}, ":lo": {"N": lo}, ":hi": {"N": "10"}, ":p": {"S": p}}
            for a, lo, p in (("scheduled", "1", "ta"), ("done", "4", "x"), ("scheduled", "7", "t"))
        ],
    ),
    (
        "NOT contains(#tags, :t) AND attribute_type(#due, :type) AND (#n > :n OR #b = :yes)",
        {"#tags": "tags", "#due": "due_ms", "#n": "attempts", "#b": "flag"},
        [
            {":t": {"S": t}, ":type": {"S": kind}, ":n": {"N": n}, ":yes": {"BOOL": yes}}
            for t, kind, n, yes in (("a", "N", "0", True), ("z", "S", "5", False), ("b", "N", "9", True))
        ],
    ),
]


def test_a_condition_is_parsed_once_per_shape_and_each_requests_values_decide_as_moto_decides() -> None:
    """A condition's parse is kept by its text, names and the types of its values, each request's
    values put into a copy (local/moto_patches/expressions.py): every condition here, with each set of
    values in turn (the first parsed by moto, the others from the kept parse), decides each item
    as moto's own parse of the same request decides it, and finds the same names and values."""
    from moto.dynamodb.comparisons import ConditionExpressionParser
    from moto.dynamodb.models.dynamo_type import DynamoType, Item

    kept = ConditionExpressionParser.parse
    assert getattr(kept, "_sundial_remembered", False)  # tests/conftest.py applies the patch
    moto_own = kept.__wrapped__  # type: ignore[attr-defined]
    items = [
        Item(DynamoType({"S": "p"}), None, attrs)
        for attrs in (
            {"status": {"S": "scheduled"}, "due_ms": {"N": "100"}, "name": {"S": "task"}, "attempts": {"N": "1"}},
            {
                "status": {"S": "scheduled"},
                "due_ms": {"N": "200"},
                "run_due_ms": {"N": "100"},
                "run_id": {"S": "r2"},
                "run_status": {"S": "retrying"},
                "lease_until_ms": {"N": "200"},
                "tags": {"SS": ["a", "b"]},
            },
            {
                "status": {"S": "paused"},
                "due_ms": {"N": "300"},
                "run_due_ms": {"N": "300"},
                "name": {"S": "tall"},
                "attempts": {"N": "6"},
                "flag": {"BOOL": True},
            },
            {"status": {"S": "done"}, "due_ms": {"S": "x"}, "name": {"S": "xylophone"}, "attempts": {"N": "10"}},
        )
    ]
    decided = 0
    for expression, names, value_sets in CONDITIONS:
        for values in value_sets:
            ours, theirs = (ConditionExpressionParser(expression, names, values) for _ in range(2))
            op, reference = kept(ours), moto_own(theirs)
            assert (ours.expr_attr_names_found, ours.expr_attr_values_found) == (
                theirs.expr_attr_names_found,
                theirs.expr_attr_values_found,
            )
            for item in items:
                assert _decide(op, item) == _decide(reference, item), (expression, values, item.attrs)
                decided += 1
    assert decided == sum(len(value_sets) for _, _, value_sets in CONDITIONS) * len(items)


def _decide(op: Any, item: Any) -> Any:
    """What a parse decides for an item: its answer, or the error moto raises (``size`` of a
    missing attribute)."""
    try:
        return bool(op.expr(item))
    except ValueError as error:
        return type(error).__name__, str(error)


def test_a_condition_kept_by_shape_is_not_changed_by_a_request_and_a_refused_one_is_not_kept() -> None:
    from moto.dynamodb.comparisons import ConditionExpressionParser

    kept = ConditionExpressionParser.parse
    expression, names = "#a = :v", {"#a": "a"}
    first = kept(ConditionExpressionParser(expression, names, {":v": {"N": "1"}}))
    second = kept(ConditionExpressionParser(expression, names, {":v": {"N": "2"}}))
    third = kept(ConditionExpressionParser(expression, names, {":v": {"N": "3"}}))
    assert second is not third  # each request its own copy: a kept parse is never handed out
    assert [op.rhs.value for op in (first, second, third)] == ["1", "2", "3"]
    for _ in range(2):  # a value missing from the request fails every time, as moto's parse does
        with pytest.raises(KeyError):
            kept(ConditionExpressionParser("#a = :missing", names, {":v": {"N": "1"}}))
