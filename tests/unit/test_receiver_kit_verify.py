"""The receiver kit's verification and parsing (receiver-kit/), checked against the official
``standardwebhooks`` library as the independent oracle: what it signs the kit verifies, what the
kit signs it verifies; the tolerance both ways, a rotation's several signatures, a tampered body
and missing headers are refused, each naming why."""

from __future__ import annotations

import base64
import json
import secrets
from datetime import UTC, datetime

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError
from sundial_receiver import (
    BadSignature,
    Callback,
    InvalidCallback,
    MissingHeader,
    Parent,
    TimestampTooNew,
    TimestampTooOld,
    VerificationError,
    Verifier,
    sign,
)

pytestmark = pytest.mark.unit

NOW = 1_780_000_000
BODY = json.dumps(
    {
        "task_id": "01TASK",
        "run_id": "01RUN",
        "scheduled_for": "2026-03-01T08:00:00.000Z",
        "fired_at": "2026-03-01T08:00:00.003Z",
        "attempt": 2,
        "payload": {"order_id": 123},
    },
    separators=(",", ":"),
).encode()


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def oracle_headers(secret: str, body: bytes = BODY, message_id: str = "01RUN", at: int = NOW) -> dict[str, str]:
    signature = Webhook(secret).sign(message_id, datetime.fromtimestamp(at, UTC), body.decode())
    return {"webhook-id": message_id, "webhook-timestamp": str(at), "webhook-signature": signature}


def verifier(*secrets_: str, now: float = NOW, tolerance: int = 300) -> Verifier:
    return Verifier(list(secrets_), tolerance_seconds=tolerance, clock=lambda: now)


def test_what_standardwebhooks_signs_the_kit_verifies_and_answers_the_run_id():
    secret = new_secret()
    assert verifier(secret).verify(BODY, oracle_headers(secret)) == "01RUN"


def test_what_the_kit_signs_standardwebhooks_verifies():
    secret = new_secret()
    assert sign(secret, "01RUN", NOW, BODY) == oracle_headers(secret)["webhook-signature"]
    at = int(datetime.now(UTC).timestamp())  # the oracle checks the timestamp against its own clock
    headers = {
        "webhook-id": "01RUN",
        "webhook-timestamp": str(at),
        "webhook-signature": sign(secret, "01RUN", at, BODY),
    }
    assert Webhook(secret).verify(BODY, headers)["run_id"] == "01RUN"
    with pytest.raises(WebhookVerificationError):
        Webhook(new_secret()).verify(BODY, headers)


def test_a_tampered_body_another_id_or_another_secret_is_a_bad_signature():
    secret = new_secret()
    headers = oracle_headers(secret)
    with pytest.raises(BadSignature):
        verifier(secret).verify(BODY.replace(b"123", b"124"), headers)
    with pytest.raises(BadSignature):
        verifier(secret).verify(BODY, {**headers, "webhook-id": "01OTHER"})
    with pytest.raises(BadSignature) as refused:
        verifier(new_secret()).verify(BODY, headers)
    assert refused.value.reason == "bad_signature"
    with pytest.raises(BadSignature):
        verifier(secret).verify(BODY, {**headers, "webhook-signature": "v2," + headers["webhook-signature"][3:]})


@pytest.mark.parametrize(
    ("offset", "error", "reason"),
    [(-301, TimestampTooOld, "timestamp_too_old"), (301, TimestampTooNew, "timestamp_too_new")],
)
def test_the_tolerance_holds_both_ways(offset, error, reason):
    secret = new_secret()
    assert verifier(secret).verify(BODY, oracle_headers(secret, at=NOW - 300)) == "01RUN"
    assert verifier(secret).verify(BODY, oracle_headers(secret, at=NOW + 300)) == "01RUN"
    with pytest.raises(error) as refused:
        verifier(secret).verify(BODY, oracle_headers(secret, at=NOW + offset))
    assert refused.value.reason == reason
    assert verifier(secret, tolerance=600).verify(BODY, oracle_headers(secret, at=NOW + offset)) == "01RUN"


def test_during_a_rotation_either_secret_verifies_a_call_signed_with_both():
    old, new = new_secret(), new_secret()
    both = f"{oracle_headers(new)['webhook-signature']} {oracle_headers(old)['webhook-signature']}"
    headers = {**oracle_headers(new), "webhook-signature": both}
    assert verifier(old).verify(BODY, headers) == "01RUN"
    assert verifier(new).verify(BODY, headers) == "01RUN"
    assert verifier(old, new).verify(BODY, oracle_headers(old)) == "01RUN"  # a receiver holding both
    with pytest.raises(BadSignature):
        verifier(new_secret()).verify(BODY, headers)


@pytest.mark.parametrize("missing", ["webhook-id", "webhook-timestamp", "webhook-signature"])
def test_a_missing_header_is_named(missing):
    secret = new_secret()
    headers = {k: v for k, v in oracle_headers(secret).items() if k != missing}
    with pytest.raises(MissingHeader) as refused:
        verifier(secret).verify(BODY, headers)
    assert refused.value.reason == "missing_header"
    assert refused.value.header == missing


def test_header_names_are_case_insensitive_and_a_bad_timestamp_is_refused():
    secret = new_secret()
    headers = {k.title(): v for k, v in oracle_headers(secret).items()}
    assert verifier(secret).verify(BODY, headers) == "01RUN"
    with pytest.raises(VerificationError) as refused:
        verifier(secret).verify(BODY, {**oracle_headers(secret), "webhook-timestamp": "soon"})
    assert refused.value.reason == "bad_timestamp"


def test_a_secret_that_is_not_base64_is_refused_at_once():
    with pytest.raises(ValueError, match="base64"):
        Verifier("whsec_not base64!")
    with pytest.raises(ValueError, match="at least one"):
        Verifier([])


def test_a_callback_parses_into_typed_members():
    callback = Callback.parse(BODY)
    assert callback.task_id == "01TASK"
    assert callback.run_id == "01RUN"
    assert callback.scheduled_for == datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
    assert callback.fired_at == datetime(2026, 3, 1, 8, 0, 0, 3000, tzinfo=UTC)
    assert callback.attempt == 2
    assert callback.payload == {"order_id": 123}
    assert callback.parent is None


def test_a_chained_callback_carries_its_parent_and_unknown_members_are_kept_not_refused():
    data = json.loads(BODY)
    data["parent"] = {"task_id": "01UP", "run_id": "01UPRUN", "status": "succeeded", "response": {"ok": 1}}
    data["something_new"] = [1, 2]
    data["parent"]["also_new"] = True
    callback = Callback.parse(json.dumps(data))
    assert callback.parent == Parent("01UP", "01UPRUN", "succeeded", {"ok": 1})
    assert callback.extra == {"something_new": [1, 2]}


@pytest.mark.parametrize("response", [None, "plain text, not JSON", [1, "two"], 3.5, {"ok": {"deep": True}}])
def test_a_parent_response_is_null_or_any_json_as_sent(response):
    data = json.loads(BODY)
    data["parent"] = {"task_id": "01UP", "run_id": "01UPRUN", "status": "failed", "response": response}
    parent = Callback.parse(json.dumps(data)).parent
    assert parent is not None
    assert (parent.task_id, parent.run_id, parent.status, parent.response) == ("01UP", "01UPRUN", "failed", response)
    data["parent"].pop("response")
    assert Callback.parse(json.dumps(data)).parent == Parent("01UP", "01UPRUN", "failed", None)


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[1]",
        json.dumps({**json.loads(BODY), "run_id": None}).encode(),
        json.dumps({**json.loads(BODY), "attempt": "1"}).encode(),
        json.dumps({**json.loads(BODY), "attempt": 0}).encode(),
        json.dumps({**json.loads(BODY), "fired_at": "yesterday"}).encode(),
        json.dumps({**json.loads(BODY), "parent": "01UP"}).encode(),
    ],
)
def test_a_body_that_is_not_a_callback_is_invalid(body):
    with pytest.raises(InvalidCallback):
        Callback.parse(body)
