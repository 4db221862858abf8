"""The Standard Webhooks v1 signer, checked by the reference implementation (standardwebhooks)."""

from __future__ import annotations

import os
import time

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from shared.domain.signing import SECRET_BYTES, Signer, secret_key, secret_text

pytestmark = pytest.mark.unit

BODY = '{"run_id":"01J","payload":{"text":"caf\u00e9 \u2603"}}'.encode()


def new_secret() -> str:
    return secret_text(os.urandom(SECRET_BYTES))


def test_the_headers_verify_with_the_reference_implementation():
    secret = new_secret()
    headers = Signer.of([secret]).headers("01JRUN", int(time.time()), BODY)
    assert Webhook(secret).verify(BODY, headers) == {"run_id": "01J", "payload": {"text": "caf\u00e9 \u2603"}}
    assert headers["webhook-id"] == "01JRUN"


def test_a_tampered_body_fails():
    secret = new_secret()
    headers = Signer.of([secret]).headers("01JRUN", int(time.time()), BODY)
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(BODY.replace(b"01J", b"01K"), headers)


def test_an_old_timestamp_fails():
    secret = new_secret()
    headers = Signer.of([secret]).headers("01JRUN", int(time.time()) - 600, BODY)
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(BODY, headers)


def test_another_id_or_secret_fails():
    secret = new_secret()
    headers = Signer.of([secret]).headers("01JRUN", int(time.time()), BODY)
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(BODY, {**headers, "webhook-id": "01JOTHER"})
    with pytest.raises(WebhookVerificationError):
        Webhook(new_secret()).verify(BODY, headers)


def test_two_active_secrets_sign_twice_newest_first_and_either_verifies():
    new, old = new_secret(), new_secret()
    headers = Signer.of([new, old]).headers("01JRUN", int(time.time()), BODY)
    first, second = headers["webhook-signature"].split(" ")
    assert first.startswith("v1,")
    assert second.startswith("v1,")
    Webhook(new).verify(BODY, headers)
    Webhook(old).verify(BODY, headers)
    assert Webhook(new).verify(BODY, {**headers, "webhook-signature": first}) is not None
    with pytest.raises(WebhookVerificationError):
        Webhook(old).verify(BODY, {**headers, "webhook-signature": first})


def test_a_secret_is_whsec_and_the_base64_of_its_key():
    key = os.urandom(SECRET_BYTES)
    secret = secret_text(key)
    assert secret.startswith("whsec_")
    assert secret_key(secret) == key
    with pytest.raises(ValueError, match="24-64 bytes"):
        secret_text(os.urandom(16))
    with pytest.raises(ValueError, match="at least one key"):
        Signer(())


def test_a_signer_never_shows_its_keys():
    secret = new_secret()
    assert secret.removeprefix("whsec_") not in repr(Signer.of([secret]))
    assert repr(secret_key(secret)) not in repr(Signer.of([secret]))
