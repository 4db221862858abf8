"""Every write moto answered is kept across a ``kill -9`` (local/moto_host/journal.py): a moto process
with a data folder, its periodic snapshots turned off so that only the journal (and the snapshots
a test asks for) can keep a write, killed with SIGKILL right after its answers and started again
on the same folder. Without the journal the first test finds an empty moto."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from local.moto_host.journal import JOURNAL, Journal
from local.moto_host.persist import SNAPSHOT
from local.moto_server import MotoServer
from local.settings import MOTO_CLOCK_ENV, MOTO_DATA_ENV, MOTO_SNAPSHOT_PERIOD_ENV
from tests.support.moto_process import client

pytestmark = pytest.mark.integration

T0 = 1_900_000_000_000
"""moto's SQS clock, set before every send (the delays are checked against it)."""


class Moto:
    """A moto process on ``folder``, started again (on the same folder) by :meth:`kill_and_start`."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.server = self._start()

    def _start(self) -> MotoServer:
        server = MotoServer(
            env={MOTO_DATA_ENV: str(self.folder), MOTO_SNAPSHOT_PERIOD_ENV: "3600", MOTO_CLOCK_ENV: "1"}
        )
        server.start()
        server.set_clock(T0)
        return server

    def kill_and_start(self) -> None:
        os.kill(self.server.pid, signal.SIGKILL)
        self.server.stop()  # reaps it
        self.server = self._start()

    def __getattr__(self, service: str):  # type: ignore[no-untyped-def]
        return client(self.server, service)


@pytest.fixture
def moto(tmp_path: Path) -> Iterator[Moto]:
    running = Moto(tmp_path / "data")
    try:
        yield running
    finally:
        running.server.stop()


def make_table(moto: Moto) -> None:
    moto.dynamodb.create_table(
        TableName="kept",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )


def add(moto: Moto, key: str, by: int = 1) -> None:
    moto.dynamodb.update_item(
        TableName="kept",
        Key={"pk": {"S": key}},
        UpdateExpression="ADD n :by",
        ExpressionAttributeValues={":by": {"N": str(by)}},
    )


def count(moto: Moto, key: str) -> int | None:
    item = moto.dynamodb.get_item(TableName="kept", Key={"pk": {"S": key}}, ConsistentRead=True).get("Item")
    return None if item is None else int(item["n"]["N"])


def bodies(moto: Moto, url: str) -> list[str]:
    """The messages receivable now, taken off the queue."""
    messages = moto.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get("Messages", [])
    for message in messages:
        moto.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return sorted(message["Body"] for message in messages)


def test_writes_answered_since_the_last_snapshot_survive_a_kill_9(moto: Moto) -> None:
    make_table(moto)
    for _ in range(5):
        add(moto, "counter")
    with pytest.raises(moto.dynamodb.exceptions.ConditionalCheckFailedException):
        moto.dynamodb.put_item(
            TableName="kept", Item={"pk": {"S": "counter"}}, ConditionExpression="attribute_not_exists(pk)"
        )
    url = moto.sqs.create_queue(QueueName="delays")["QueueUrl"]
    moto.sqs.send_message(QueueUrl=url, MessageBody="now")
    moto.sqs.send_message(QueueUrl=url, MessageBody="in 15 min", DelaySeconds=900)
    moto.ssm.put_parameter(Name="/kept", Value="yes", Type="String")
    assert not (moto.folder / SNAPSHOT).exists()  # only the journal holds them

    moto.kill_and_start()

    assert count(moto, "counter") == 5  # each ADD once, the refused put not at all
    assert bodies(moto, url) == ["now"]
    assert moto.server.look().next_message_ms == T0 + 900_000  # delayed from when it was sent, not the replay
    assert moto.ssm.get_parameter(Name="/kept")["Parameter"]["Value"] == "yes"


def test_a_snapshot_between_the_writes_keeps_each_write_once(moto: Moto) -> None:
    make_table(moto)
    url = moto.sqs.create_queue(QueueName="once")["QueueUrl"]
    add(moto, "counter", 1)
    moto.sqs.send_message(QueueUrl=url, MessageBody="before")
    assert moto.server.snapshot()
    add(moto, "counter", 10)
    moto.sqs.send_message(QueueUrl=url, MessageBody="after")
    journal = Journal(moto.folder)
    assert len(journal.numbers()) == 1  # the files the snapshot holds are gone

    moto.kill_and_start()

    assert count(moto, "counter") == 11
    assert bodies(moto, url) == ["after", "before"]  # neither sent twice
    moto.kill_and_start()  # replayed once more, from the same snapshot: still once each
    assert count(moto, "counter") == 11


def test_a_record_cut_short_by_the_kill_is_ignored(moto: Moto) -> None:
    make_table(moto)
    add(moto, "counter", 3)
    last = max(Journal(moto.folder).numbers())
    with Journal(moto.folder).path(last).open("ab") as file:
        file.write(b"\x00\x00\x01\x00half a rec")  # a length, and less than it: a write cut short

    moto.kill_and_start()

    assert count(moto, "counter") == 3
    add(moto, "counter", 4)  # appended to a new file, after the cut one
    moto.kill_and_start()
    assert count(moto, "counter") == 7


def test_a_snapshot_that_failed_leaves_the_journal_it_would_have_held(moto: Moto) -> None:
    make_table(moto)
    add(moto, "counter", 2)
    (moto.folder / SNAPSHOT).mkdir()  # the copy cannot rename its file over a folder: it fails
    assert not moto.server.snapshot()
    add(moto, "counter", 5)
    assert len(Journal(moto.folder).numbers()) == 2  # the one it would have held, and the one after
    (moto.folder / SNAPSHOT).rmdir()

    moto.kill_and_start()

    assert count(moto, "counter") == 7
    assert sorted(path.name for path in moto.folder.glob(f"{JOURNAL}.*"))  # kept until a snapshot holds them


def test_a_record_that_fails_at_its_replay_is_said_and_the_start_goes_on(moto: Moto) -> None:
    import pickle
    import struct

    make_table(moto)
    add(moto, "counter", 2)
    last = max(Journal(moto.folder).numbers())
    broken = pickle.dumps((float(T0), None, b"{}"))  # no request at all: its replay raises
    with Journal(moto.folder).path(last).open("ab") as file:
        file.write(struct.pack(">I", len(broken)) + broken)

    moto.kill_and_start()  # started: a dev server that cannot start keeps nothing

    assert count(moto, "counter") == 2
