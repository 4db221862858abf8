"""Signed callbacks (Standard Webhooks v1) through the pipeline: verified by the
``standardwebhooks`` package with the secrets the API answered, before, during and after a
rotation, in both signing key modes (``sundial:signingKey``: "parameter", the default, and
"kms"); the parameter mode's own checks are in tests/integration/test_signing_modes.py."""

from __future__ import annotations

import logging

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from tests.integration.test_pipeline import register

pytestmark = pytest.mark.integration


@pytest.fixture(params=["parameter", "kms"])
def signing_mode(request: pytest.FixtureRequest) -> str:
    """Every test here in both modes (tests/integration/conftest.py's ``aws`` reads it)."""
    mode: str = request.param
    return mode


def fire_one(api, pipeline, receiver, path: str):
    url = receiver.script(path, 200)
    register(api, url, payload={"n": path}, schedule={"after_seconds": 1.25})
    assert pipeline.fire(until=lambda: len(receiver.calls_to(path)) >= 1, timeout=10)
    (call,) = receiver.calls_to(path)
    return call


def verifies(secret: str, call) -> bool:
    try:
        Webhook(secret).verify(call.raw, call.headers)
    except WebhookVerificationError:
        return False
    return True


def rotate(api, seconds: int | None = None) -> dict:
    answer = api(
        "POST", "/v1/signing-secrets:rotate", {} if seconds is None else {"previous_expires_in_seconds": seconds}
    )
    assert answer.status == 201, answer.body
    assert answer.body["secret"].startswith("whsec_")
    return answer.body


def test_callbacks_verify_with_the_tenants_secrets_across_rotations(api, pipeline, receiver, caplog, capfd):
    from shared.observability import logger

    # Everything at INFO and up (botocore logs request bodies at DEBUG, a KMS Encrypt's
    # plaintext included: no deployment runs botocore at DEBUG), Sundial's own logger at DEBUG.
    caplog.set_level(logging.INFO)
    level = logger.log_level
    logger.setLevel("DEBUG")
    try:
        _rotations(api, pipeline, receiver, caplog, capfd)
    finally:
        logger.setLevel(level)


def _rotations(api, pipeline, receiver, caplog, capfd):
    first = rotate(api)
    call = fire_one(api, pipeline, receiver, "/one")
    assert verifies(first["secret"], call)
    assert call.headers["webhook-id"] == call.body["run_id"] == call.headers["Idempotency-Key"]
    assert len(call.headers["webhook-signature"].split(" ")) == 1

    second = rotate(api, 3600)
    _forget_trigger_cache()
    call = fire_one(api, pipeline, receiver, "/two")
    assert verifies(second["secret"], call)
    assert verifies(first["secret"], call)
    assert len(call.headers["webhook-signature"].split(" ")) == 2

    third = rotate(api, 0)
    _forget_trigger_cache()
    call = fire_one(api, pipeline, receiver, "/three")
    assert verifies(third["secret"], call)
    assert not verifies(second["secret"], call)
    assert not verifies(first["secret"], call)

    listed = api("GET", "/v1/signing-secrets")
    assert listed.status == 200
    assert [item["id"] for item in listed.body["items"]] == [third["id"], second["id"], first["id"]]
    assert listed.body["items"][0]["expires_at"] is None
    assert all(item["expires_at"] is not None for item in listed.body["items"][1:])
    assert all(set(item) == {"id", "created_at", "expires_at"} for item in listed.body["items"])
    captured = capfd.readouterr()
    logs = caplog.text + captured.out + captured.err
    assert logs  # the API's and the trigger's lines were captured
    for secret in (first, second, third):
        assert secret["secret"].removeprefix("whsec_") not in str(listed.body)
        assert secret["secret"].removeprefix("whsec_") not in logs


def test_a_tenant_without_a_secret_gets_one_at_its_first_callback(api, pipeline, receiver, signing_mode):
    assert api("GET", "/v1/signing-secrets").body == {"items": []}
    call = fire_one(api, pipeline, receiver, "/first")
    (made,) = api("GET", "/v1/signing-secrets").body["items"]
    assert made["expires_at"] is None
    assert {"webhook-id", "webhook-timestamp", "webhook-signature"} <= {k.lower() for k in call.headers}
    # Its value was never answered: a rotation with no grace makes one the tenant knows.
    new = rotate(api, 0)
    _forget_trigger_cache()
    call = fire_one(api, pipeline, receiver, "/after")
    assert verifies(new["secret"], call)
    items = api("GET", "/v1/signing-secrets").body["items"]
    assert [item["id"] for item in items] == [new["id"], made["id"]]
    from shared.store.models import SigningSecretItem

    stored = {item.secret_id: item for item in SigningSecretItem.query("T#default")}
    assert stored[new["id"]].expires_at is None
    rotated_out = stored[made["id"]]
    assert rotated_out.expires_ms is not None
    assert rotated_out.expires_at is not None  # DynamoDB's TTL drops it a week after it stopped signing
    assert {rotated_out.scheme, stored[new["id"]].scheme} == {signing_mode}
    if signing_mode == "kms":
        assert new["secret"].removeprefix("whsec_") not in rotated_out.ciphertext + stored[new["id"]].ciphertext
    else:  # derived: nothing of the value is stored
        assert rotated_out.ciphertext is None
        assert stored[new["id"]].ciphertext is None


@pytest.mark.parametrize("seconds", [-1, 604_801, "soon", 1.5, False, "60"])
def test_a_rotation_out_of_bounds_is_a_400_naming_the_field(api, seconds):
    answer = api("POST", "/v1/signing-secrets:rotate", {"previous_expires_in_seconds": seconds})
    assert answer.status == 400, answer.body
    assert "previous_expires_in_seconds" in str(answer.body)
    assert api("GET", "/v1/signing-secrets").body == {"items": []}


def _forget_trigger_cache() -> None:
    """The trigger keeps a tenant's decrypted secrets 60 s (a rotation takes effect within
    that): a new container, as after 60 s."""
    from functions.trigger import handler as trigger

    trigger.trigger.cache_clear()


def test_a_job_processor_call_is_signed_with_the_tenants_secret(api, receiver):
    from shared.delivery.processor import HttpProcessor, http_client
    from shared.domain.tasks import HttpTarget
    from shared.services.factory import build_signing_service
    from shared.settings.environment import from_env

    secret = rotate(api)["secret"]
    signing = build_signing_service(from_env())
    assert signing is not None
    url = receiver.script("/processor", 200)
    processor = HttpProcessor(
        HttpTarget(url, timeout_seconds=5),
        http_client(allow_loopback=True, allow_private=False),
        lambda: signing.signer("default"),
    )
    processor.call("01JOB", {"phase": "pre", "input": {"n": 1}})
    (call,) = receiver.calls_to("/processor")
    assert verifies(secret, call)
    assert call.headers["webhook-id"] == call.headers["Idempotency-Key"] == "01JOB:pre"


def test_a_callback_is_never_sent_unsigned_when_the_secrets_cannot_be_read(api, pipeline, receiver, monkeypatch):
    from shared.domain.errors import StorageUnavailable
    from shared.store.signing import DynamoSigningSecrets
    from tests.integration.test_pipeline import runs

    real = DynamoSigningSecrets.active
    failures = []

    def failing_once(self, tenant, now_ms):
        if not failures:
            failures.append(tenant)
            raise StorageUnavailable("KMS did not answer")
        return real(self, tenant, now_ms)

    monkeypatch.setattr(DynamoSigningSecrets, "active", failing_once)
    secret = rotate(api)["secret"]
    url = receiver.script("/later", 200)
    task = register(
        api, url, schedule={"after_seconds": 1.25}, retry={"max_attempts": 2, "backoff": "fixed", "interval_seconds": 1}
    )
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/later")) >= 1, timeout=12)
    (call,) = receiver.calls_to("/later")
    assert failures == ["default"]
    assert verifies(secret, call)
    assert call.headers["Sundial-Attempt"] == "2"  # the first attempt was retried, not sent unsigned
    (run,) = runs(api, task["id"])
    assert run["attempts"] == 2


def secrets_store(settings):
    """A new process's store of the deployment's signing secrets (nothing cached)."""
    from shared.services.factory import build_signing_service

    signing = build_signing_service(settings)
    assert signing is not None
    return signing.secrets


def test_two_signers_making_a_tenants_first_secret_at_once_make_one(aws):
    from shared.settings.environment import from_env

    settings = from_env()
    one, other = secrets_store(settings), secrets_store(settings)
    made = one._first("acme", 1_000)
    again = other._first("acme", 2_000)  # its condition fails: it reads the one made
    assert again.secret_id == made.secret_id
    assert [info.id for info in one.infos("acme")] == [made.secret_id]
    assert other.active("acme", 3_000) == one.active("acme", 3_000)


@pytest.mark.parametrize("body", [[{}], [{"previous_expires_in_seconds": 0}], 7])
def test_a_rotation_asked_with_an_array_is_refused_and_rotates_nothing(api, body):
    """An array whose first member is an object was read as that object, and rotated (the
    OpenAPI fuzzer's finding)."""
    before = api("GET", "/v1/signing-secrets").body["items"]
    answer = api("POST", "/v1/signing-secrets:rotate", body)
    assert answer.status == 400
    assert answer.body["error"]["details"][0] == {"field": "body", "message": "must be a JSON object"}
    assert api("GET", "/v1/signing-secrets").body["items"] == before
