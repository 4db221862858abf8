"""Answering CloudFormation (shared/adapters/custom_resource.py): once, in every case, with the documented
members only and within 4,096 bytes. The answers are collected in memory here; the canary's
handler answering a loopback server over HTTP is tests/integration/test_canary.py."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

import pytest

from shared.adapters import custom_resource
from shared.adapters.custom_resource import MAX_BODY_BYTES, Answer, answer, response_body
from shared.messages import CustomResourceRequest
from tests.support.cloudformation import check_response, documented_request
from tests.support.eventually import until

pytestmark = pytest.mark.unit


@dataclass
class Puts:
    """Where answers go instead of S3: each (url, body, timeout) kept."""

    sent: list[tuple[str, bytes, float]] = field(default_factory=list)

    def __call__(self, url: str, body: bytes, timeout_s: float) -> None:
        self.sent.append((url, body, timeout_s))

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(body) for _, body, _ in self.sent]


@dataclass
class Context:
    remaining_ms: int = 30_000

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def fallback(event: Any) -> str:
    return str(event.get("PhysicalResourceId") or "the-resource")


def test_the_works_answer_is_put_once_with_the_documented_members() -> None:
    puts = Puts()
    event = documented_request("Create")
    sent = answer(
        event, Context(), lambda request: Answer("SUCCESS", "p-1", data={"TaskId": "t"}), fallback_id=fallback, put=puts
    )
    assert sent == Answer("SUCCESS", "p-1", data={"TaskId": "t"})
    [(url, raw, timeout_s)] = puts.sent
    assert url == event["ResponseURL"]
    assert 1 <= timeout_s <= custom_resource.PUT_TIMEOUT_S
    body = json.loads(raw)
    check_response(body, raw)
    assert body == {
        "Status": "SUCCESS",
        "Reason": "SUCCESS",
        "PhysicalResourceId": "p-1",
        "StackId": event["StackId"],
        "RequestId": event["RequestId"],
        "LogicalResourceId": event["LogicalResourceId"],
        "Data": {"TaskId": "t"},
    }


def test_a_request_that_is_not_the_documented_object_is_failed_naming_the_member() -> None:
    puts = Puts()
    event = documented_request("Create")
    del event["ResourceProperties"]["FunctionArn"]
    sent = answer(event, Context(), lambda request: pytest.fail("no work"), fallback_id=fallback, put=puts)
    assert sent.status == "FAILED"
    assert "ResourceProperties.FunctionArn" in sent.reason
    [body] = puts.bodies()
    assert (body["Status"], body["PhysicalResourceId"], body["RequestId"]) == (
        "FAILED",
        "the-resource",
        event["RequestId"],
    )


def test_work_that_raises_is_failed_with_its_error() -> None:
    puts = Puts()

    def work(request: CustomResourceRequest) -> Answer:
        raise RuntimeError("the table is gone")

    sent = answer(documented_request("Update"), Context(), work, fallback_id=fallback, put=puts)
    assert (sent.status, sent.physical_id) == ("FAILED", "custom resource provider-defined physical id")
    assert sent.reason == "RuntimeError: the table is gone"
    assert [body["Status"] for body in puts.bodies()] == ["FAILED"]


def test_a_delete_succeeds_whatever_happened_so_the_stack_can_go() -> None:
    puts = Puts()

    def work(request: CustomResourceRequest) -> Answer:
        raise RuntimeError("the table is gone")

    sent = answer(documented_request("Delete"), Context(), work, fallback_id=fallback, put=puts)
    assert sent.status == "SUCCESS"
    assert "RuntimeError: the table is gone" in sent.reason
    broken = documented_request("Delete", ResourceProperties={})
    assert answer(broken, Context(), work, fallback_id=fallback, put=puts).status == "SUCCESS"


def test_the_timer_answers_before_the_functions_timeout_and_the_late_work_is_not_sent() -> None:
    puts = Puts()
    release = threading.Event()

    def work(request: CustomResourceRequest) -> Answer:
        release.wait(10)
        return Answer("SUCCESS", "late")

    context = Context(remaining_ms=custom_resource.ANSWER_MARGIN_MS + 50)
    result: list[Answer] = []
    thread = threading.Thread(
        target=lambda: result.append(
            answer(documented_request("Create"), context, work, fallback_id=fallback, put=puts)
        )
    )
    thread.start()
    assert until(lambda: puts.sent, timeout=5)
    release.set()
    thread.join(10)
    [body] = puts.bodies()
    assert body["Status"] == "FAILED"
    assert "about to time out" in body["Reason"]
    assert result[0].status == "FAILED"  # what was sent: the timer's


def test_the_answer_stays_within_4096_bytes_however_long_the_reason() -> None:
    event = documented_request("Create")
    for reason in ("x" * 10_000, "é" * 5_000, '"\\\n' * 3_000, "\u0000" * 2_000):
        raw = response_body(event, Answer("FAILED", "p-1", reason))
        body = json.loads(raw)
        check_response(body, raw)
        assert len(raw) <= MAX_BODY_BYTES
        assert body["Reason"].endswith(custom_resource.CUT) or len(body["Reason"]) < len(custom_resource.CUT)
        assert len(raw) > MAX_BODY_BYTES - 20  # cut to fit, not emptied
    short = response_body(event, Answer("FAILED", "p-1", "no canary"))
    assert json.loads(short)["Reason"] == "no canary"


def test_an_answer_that_cannot_be_put_is_logged_not_raised() -> None:
    def refused(url: str, body: bytes, timeout_s: float) -> None:
        raise OSError("connection refused")

    sent = answer(
        documented_request("Create"), Context(), lambda r: Answer("SUCCESS", "p"), fallback_id=fallback, put=refused
    )
    assert sent.status == "SUCCESS"
