"""moto stands in for AWS locally and in the tests; where it differed in a way Sundial relies on,
local/ patches it (tests/conftest.py applies the patches). These tests pin that behaviour."""

from __future__ import annotations

import threading
import time

import boto3
import pytest
from moto import mock_aws

pytestmark = pytest.mark.integration


@pytest.fixture
def queue() -> tuple[object, str]:
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        yield sqs, sqs.create_queue(QueueName="fidelity")["QueueUrl"]


def test_a_long_poll_returns_when_a_delayed_message_becomes_visible(queue: tuple[object, str]) -> None:
    sqs, url = queue
    sent = time.monotonic()
    sqs.send_message(QueueUrl=url, MessageBody="x", DelaySeconds=1)  # type: ignore[attr-defined]
    time.sleep(0.3)  # unpatched moto rechecks a second after the poll starts: at 1.3 s
    answer = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5)  # type: ignore[attr-defined]
    waited = time.monotonic() - sent
    assert [m["Body"] for m in answer["Messages"]] == ["x"]
    assert 0.95 <= waited < 1.2


def test_a_long_poll_returns_when_a_visibility_timeout_runs_out(queue: tuple[object, str]) -> None:
    sqs, url = queue
    sqs.send_message(QueueUrl=url, MessageBody="x")  # type: ignore[attr-defined]
    first = sqs.receive_message(QueueUrl=url, VisibilityTimeout=1)  # type: ignore[attr-defined]
    assert len(first["Messages"]) == 1
    started = time.monotonic()
    time.sleep(0.3)
    again = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5)  # type: ignore[attr-defined]
    assert len(again["Messages"]) == 1
    assert time.monotonic() - started < 1.2


def test_a_long_poll_still_wakes_for_a_new_message_and_times_out_when_empty(queue: tuple[object, str]) -> None:
    sqs, url = queue
    threading.Timer(0.3, lambda: sqs.send_message(QueueUrl=url, MessageBody="y")).start()  # type: ignore[attr-defined]
    started = time.monotonic()
    answer = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5)  # type: ignore[attr-defined]
    assert [m["Body"] for m in answer["Messages"]] == ["y"]
    assert time.monotonic() - started < 1.0
    started = time.monotonic()
    assert "Messages" not in sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)  # type: ignore[attr-defined]
    assert time.monotonic() - started >= 0.95
