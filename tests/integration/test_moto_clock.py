"""moto's SQS on the runtime's clock (local/moto_patches/clock.py): in a moto process started with
``MOTO_CLOCK_ENV``, a delayed message becomes receivable, and a received one visible again, when
the time the runtime set passes its moment, not when the wall does. Without the patch moto reads
the wall: a 15-minute delay would hold the message for 15 real minutes, and the first test fails.
Each test runs a moto process of its own (the clock is process-wide and never goes back)."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator

import pytest

from local.moto_patches.clock import CLOCK_PATH
from local.moto_server import ClockRefused, MotoServer
from local.settings import MOTO_CLOCK_ENV
from tests.support.moto_process import client as moto_client

pytestmark = pytest.mark.integration


@pytest.fixture
def moto() -> Iterator[MotoServer]:
    server = MotoServer(env={MOTO_CLOCK_ENV: "1"})
    server.start()
    try:
        yield server
    finally:
        server.stop()


def sqs(moto: MotoServer):  # type: ignore[no-untyped-def]
    return moto_client(moto, "sqs")


def bodies(client, url: str, visibility_s: int = 30) -> list[str]:  # type: ignore[no-untyped-def]
    answer = client.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0, VisibilityTimeout=visibility_s
    )
    return [message["Body"] for message in answer.get("Messages", [])]


def test_a_delayed_message_is_receivable_when_the_set_time_reaches_its_delay(moto: MotoServer) -> None:
    client = sqs(moto)
    url = client.create_queue(QueueName="delay")["QueueUrl"]
    start = int(time.time() * 1000)
    assert moto.set_clock(start) == start
    client.send_message(QueueUrl=url, MessageBody="in 15 min", DelaySeconds=900)
    client.send_message(QueueUrl=url, MessageBody="in 1 min", DelaySeconds=60)
    assert bodies(client, url) == []
    assert moto.look().next_message_ms == start + 60_000
    moto.set_clock(start + 59_999)
    assert bodies(client, url) == []
    moto.set_clock(start + 60_001)
    assert bodies(client, url, visibility_s=3600) == ["in 1 min"]  # and invisible for the hour after
    moto.set_clock(start + 899_999)
    assert bodies(client, url) == []
    moto.set_clock(start + 900_001)
    assert bodies(client, url) == ["in 15 min"]


def test_a_received_message_comes_back_when_the_set_time_passes_its_visibility_timeout(moto: MotoServer) -> None:
    client = sqs(moto)
    url = client.create_queue(QueueName="visibility")["QueueUrl"]
    start = moto.set_clock(int(time.time() * 1000))
    client.send_message(QueueUrl=url, MessageBody="m")
    assert bodies(client, url, visibility_s=120) == ["m"]
    moto.set_clock(start + 119_000)
    assert bodies(client, url) == []
    moto.set_clock(start + 120_500)
    assert bodies(client, url) == ["m"]


def test_the_clock_stands_still_between_settings_and_never_goes_back(moto: MotoServer) -> None:
    client = sqs(moto)
    url = client.create_queue(QueueName="still")["QueueUrl"]
    start = moto.set_clock(int(time.time() * 1000) - 60_000)  # a minute behind the wall
    client.send_message(QueueUrl=url, MessageBody="m", DelaySeconds=1)
    assert bodies(client, url) == []  # on the wall its second has long passed; on the set time not
    moto.set_clock(start + 1001)
    assert bodies(client, url) == ["m"]  # received: invisible for 30 s, the next moment
    with urllib.request.urlopen(f"{moto.endpoint}{CLOCK_PATH}", timeout=5) as answer:
        assert json.loads(answer.read()) == {
            "now_ms": start + 1001,
            "next_ms": start + 1001 + 30_000,
            "receivable": [],  # the one message is in flight
        }
    with pytest.raises(ClockRefused) as refused:
        moto.set_clock(start + 1000)
    assert refused.value.status == 400


def test_the_advances_look_finds_the_earliest_unstaged_bucket_item_as_a_scan_of_the_table_would(
    moto: MotoServer,
) -> None:
    """The oracle is the look it replaced: a Scan of the whole table, filtered to the bucket
    items, each with its due time past where the shards' windows start (their marks; the set time
    while no shard has one) and not staged at it. Items of other partitions (a run's history) are
    never read by the look; the queues with a message receivable now are named."""
    dynamodb = moto_client(moto, "dynamodb")
    dynamodb.create_table(
        TableName="looked",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": name, "AttributeType": "S"} for name in ("pk", "sk")],
        BillingMode="PAY_PER_REQUEST",
    )
    items = [
        ("B#100#0000", "a", 6_000_000, None),
        ("B#100#0000", "b", 6_001_000, 6_001_000),  # staged at its due time: not a candidate
        ("B#101#0001", "c", 6_060_500, 6_000_000),  # staged for an earlier due time: still one
        ("B#099#0000", "d", 5_940_000, None),
        ("R#task", "run", 1_000, None),  # not a bucket item
    ]
    for pk, sk, due, staged in items:
        item = {"pk": {"S": pk}, "sk": {"S": sk}, "due_ms": {"N": str(due)}}
        if staged is not None:
            item["staged_ms"] = {"N": str(staged)}
        dynamodb.put_item(TableName="looked", Item=item)

    def scanned(low: int) -> int | None:
        found = [
            int(item["due_ms"]["N"])
            for item in dynamodb.scan(TableName="looked")["Items"]
            if item["pk"]["S"].startswith("B#")
            and int(item["due_ms"]["N"]) >= low
            and item.get("staged_ms", {}).get("N") != item["due_ms"]["N"]
        ]
        return min(found, default=None)

    moto.set_clock(5_000_000)  # no shard has a mark: the windows start at the set time
    assert moto.look("looked", shards=2).unstaged_ms == scanned(5_000_000)
    for low in (5_940_000, 5_940_001, 6_000_001, 6_060_500, 6_060_501):
        for shard, mark in ((0, low), (1, low + 5)):  # the earliest mark is where the look starts
            item = {"pk": {"S": f"W#{shard}"}, "sk": {"S": "W"}, "staged_until_ms": {"N": str(mark)}}
            dynamodb.put_item(TableName="looked", Item=item)
        looked = moto.look("looked", shards=2)
        assert looked.marks == {0: low, 1: low + 5}
        assert looked.unstaged_ms == scanned(low), low

    client = sqs(moto)
    start = int(time.time() * 1000)
    moto.set_clock(start)
    now, later = client.create_queue(QueueName="now")["QueueUrl"], client.create_queue(QueueName="later")["QueueUrl"]
    client.send_message(QueueUrl=now, MessageBody="now")
    client.send_message(QueueUrl=later, MessageBody="later", DelaySeconds=60)
    assert moto.look().receivable == {"now"}
    moto.set_clock(start + 60_000)  # the delay's end: receivable (moto's test: not delayed from then)
    assert moto.look().receivable == {"now", "later"}


def test_the_advances_look_reads_the_marks_and_the_clean_map_as_the_store_does(aws: None) -> None:
    """The look reads the shards' marks and the tick's clean map off moto's table in its own
    process (``local.moto_patches.clock.scan_marks``); the oracle is the store's own BatchGetItem of the
    same items (``DynamoPipelineStore.scan_marks``), over marks written by scans, a shard never
    scanned, a lease held, and a clean map naming a shard past the ones asked for."""
    from local.moto_patches.clock import scan_marks
    from shared.settings.environment import from_env
    from shared.store.pipeline import DynamoPipelineStore

    store = DynamoPipelineStore(retention_ms=86_400_000)
    table = from_env().table_name
    assert scan_marks(table, 4) == store.scan_marks(range(4)) == ({0: None, 1: None, 2: None, 3: None}, {})
    for shard, mark in ((0, 6_000_000), (2, 6_060_000)):
        taken = store.begin_scan(shard, 5_000_000, 50_000)
        assert taken is not None
        assert store.end_scan(shard, taken[1], mark)
    assert store.begin_scan(3, 5_000_000, 50_000) is not None  # leased, never marked
    store.mark_clean({0: 6_120_000, 1: 6_180_000, 7: 9_000_000})
    for shards in (1, 3, 4, 8):
        assert scan_marks(table, shards) == store.scan_marks(range(shards)), shards
    assert scan_marks(table, 4) == ({0: 6_000_000, 1: None, 2: 6_060_000, 3: None}, {0: 6_120_000, 1: 6_180_000})
