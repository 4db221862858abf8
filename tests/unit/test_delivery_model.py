"""Outcomes and envelopes: the values delivery hands back and sends out."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.delivery import Envelope, Outcome
from shared.delivery.outcome import MAX_ERROR_LENGTH

pytestmark = pytest.mark.unit

UTC = dt.UTC


def envelope(**changes: object) -> Envelope:
    base: dict[str, object] = {
        "task_id": "tsk_1",
        "run_id": "run_1",
        "scheduled_for": dt.datetime(2026, 11, 22, 10, 0, 0, 250_000, tzinfo=UTC),
        "fired_at": dt.datetime(2026, 11, 22, 10, 0, 1, 999_999, tzinfo=UTC),
        "attempt": 1,
        "payload": {"order_id": 123},
    }
    base.update(changes)
    return Envelope(**base)  # type: ignore[arg-type]


# --- Envelope -----------------------------------------------------------------------------------


def test_the_body_is_the_api_json_with_millisecond_utc_times() -> None:
    body = envelope().body()

    assert body == (
        b'{"task_id":"tsk_1","run_id":"run_1","scheduled_for":"2026-11-22T10:00:00.250Z",'
        b'"fired_at":"2026-11-22T10:00:01.999Z","attempt":1,"payload":{"order_id":123}}'
    )
    assert list(json.loads(body)) == ["task_id", "run_id", "scheduled_for", "fired_at", "attempt", "payload"]


def test_times_with_another_offset_are_sent_in_utc() -> None:
    shanghai = dt.timezone(dt.timedelta(hours=8))
    sent = json.loads(envelope(scheduled_for=dt.datetime(2026, 11, 22, 18, 0, tzinfo=shanghai)).body())
    assert sent["scheduled_for"] == "2026-11-22T10:00:00.000Z"


@pytest.mark.parametrize("payload", [None, 0, "text", [1, 2], {"nested": {"ok": True}}, {"name": "café ☕"}])
def test_any_json_payload_goes_through_unchanged(payload: object) -> None:
    assert json.loads(envelope(payload=payload).body())["payload"] == payload


def test_the_body_is_utf8() -> None:
    assert "☕".encode() in envelope(payload="☕").body()


def test_numbers_read_back_from_dynamodb_are_plain_json_numbers() -> None:
    sent = json.loads(envelope(payload={"a": Decimal(3), "b": Decimal("1.5")}).body())
    assert sent["payload"] == {"a": 3, "b": 1.5}


def test_the_headers_carry_the_idempotency_key_task_and_attempt() -> None:
    assert envelope(attempt=3).headers() == {
        "Content-Type": "application/json",
        "Idempotency-Key": "run_1",
        "Sundial-Task-Id": "tsk_1",
        "Sundial-Attempt": "3",
    }


def test_the_idempotency_key_is_the_same_on_every_attempt() -> None:
    assert envelope(attempt=1).headers()["Idempotency-Key"] == envelope(attempt=2).headers()["Idempotency-Key"]


# --- Outcome ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "ok", "retryable"),
    [
        (200, True, False),
        (202, True, False),
        (299, True, False),
        (301, False, False),
        (400, False, False),
        (403, False, False),
        (404, False, False),
        (408, False, True),
        (410, False, False),
        (429, False, True),
        (500, False, True),
        (504, False, True),
        (599, False, True),
    ],
)
def test_of_status(status: int, ok: bool, retryable: bool) -> None:
    outcome = Outcome.of_status(status, duration_ms=12)
    assert (outcome.ok, outcome.retryable, outcome.status, outcome.duration_ms) == (ok, retryable, status, 12)
    assert outcome.error == (None if ok else f"HTTP {status}")
    assert outcome.final == (not ok and not retryable)


def test_helpers() -> None:
    assert Outcome.success(200) == Outcome(True, False, 200, None, 0)
    assert Outcome.retry("connection refused") == Outcome(False, True, None, "connection refused", 0)
    assert Outcome.fail("HTTP 404", status=404).final
    assert Outcome.retry("x").timed(250).duration_ms == 250
    assert Outcome.fail("HTTP 400", status=400, duration_ms=5).to_dict() == {
        "ok": False,
        "retryable": False,
        "status": 400,
        "error": "HTTP 400",
        "duration_ms": 5,
    }


def test_an_outcome_is_consistent() -> None:
    with pytest.raises(ValueError, match="success"):
        Outcome(True, True, 200, None, 0)
    with pytest.raises(ValueError, match="success"):
        Outcome(True, False, 200, "oops", 0)
    with pytest.raises(ValueError, match="why"):
        Outcome(False, True, None, None, 0)


@given(st.text(min_size=1).filter(lambda text: text.strip()))
def test_errors_are_one_short_line(text: str) -> None:
    error = Outcome.fail(text).error
    assert error is not None
    assert len(error) < MAX_ERROR_LENGTH
    assert "\n" not in error
    assert "\r" not in error


def test_a_long_error_is_cut_with_an_ellipsis() -> None:
    error = Outcome.retry("boom " * 200).error
    assert error is not None
    assert len(error) == MAX_ERROR_LENGTH - 1
    assert error.endswith("…")
