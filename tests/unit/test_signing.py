"""The Standard Webhooks v1 signer, checked by the reference implementation (standardwebhooks)."""

from __future__ import annotations

import hashlib
import hmac
import os
import struct
import time

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from shared.domain.signing import SECRET_BYTES, Signer, derived_key, secret_key, secret_text

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


# --- the parameter mode's derivation (shared.domain.signing.derived_key) -----------------------


def _reference_derivation(root: bytes, tenant: str, secret_id: str) -> bytes:
    """docs/tenancy.md's definition, written again here with struct: HMAC-SHA256 of the root over
    three fields, each a 4-byte big-endian length and then the UTF-8 bytes."""

    def field(text: str) -> bytes:
        raw = text.encode("utf-8")
        return struct.pack(">I", len(raw)) + raw

    message = field("sundial signing secret v1") + field(tenant) + field(secret_id)
    return hmac.new(root, message, hashlib.sha256).digest()


ROOT = bytes(range(32))
SECRET_ID = "0123456789abcdef0123456789abcdef"


def test_a_derived_key_is_the_documented_hmac_of_the_root():
    for tenant, secret_id in [("acme", SECRET_ID), ("caf\u00e9 \u2603", "x"), ("", ""), ("a" * 300, "b")]:
        root = os.urandom(32)
        assert derived_key(root, tenant, secret_id) == _reference_derivation(root, tenant, secret_id)
        assert len(derived_key(root, tenant, secret_id)) == SECRET_BYTES


def test_the_derivation_is_pinned():
    """Changing the label or the encoding changes every tenant's secret of every deployment in the
    parameter mode: this value was computed once, with the reference above."""
    assert derived_key(ROOT, "acme", SECRET_ID).hex() == (
        "ff0a48016960a6e1576d9f67ac659da6772d9e3eb5ba08f64095f211239d19ae"
    )


def test_the_fields_cannot_be_shifted_into_one_another():
    assert derived_key(ROOT, "ab", "c") != derived_key(ROOT, "a", "bc")
    assert derived_key(ROOT, "acme", SECRET_ID) != derived_key(ROOT, "globex", SECRET_ID)
    assert derived_key(ROOT, "acme", SECRET_ID) != derived_key(os.urandom(32), "acme", SECRET_ID)


def test_a_root_of_another_length_is_refused():
    for length in (0, 16, 31, 33, 64):
        with pytest.raises(ValueError, match="32 bytes"):
            derived_key(bytes(length), "acme", SECRET_ID)


def test_a_derived_secret_signs_calls_the_reference_implementation_verifies():
    secret = secret_text(derived_key(os.urandom(32), "acme", SECRET_ID))
    headers = Signer.of([secret]).headers("01JRUN", int(time.time()), BODY)
    assert Webhook(secret).verify(BODY, headers)["run_id"] == "01J"
