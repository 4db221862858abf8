"""The signing service: a tenant's secrets are read at most once a minute per container, a
rotation reaches the signer within that minute, and the previous secret signs until it expires."""

from __future__ import annotations

import time

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from shared.services.signing import SigningService
from tests.support.fakes import InMemorySigningSecrets

pytestmark = pytest.mark.unit

BODY = b'{"run_id":"01J"}'


class Clock:
    def __init__(self) -> None:
        self.ms = 1_800_000_000_000

    def __call__(self) -> int:
        return self.ms


def verifies(secret: str, signer) -> bool:
    headers = signer.headers("01J", int(time.time()), BODY)
    try:
        Webhook(secret).verify(BODY, headers)
    except WebhookVerificationError:
        return False
    return True


def test_secrets_are_read_once_a_minute_and_a_rotation_reaches_the_signer_within_it():
    store, clock = InMemorySigningSecrets(), Clock()
    signer_side = SigningService(store, clock)  # the trigger's container
    api_side = SigningService(store, clock)  # the API's
    first = api_side.rotate("acme", 0)
    assert verifies(first.secret, signer_side.signer("acme"))
    second = api_side.rotate("acme", 3600)
    clock.ms += 59_000
    cached = signer_side.signer("acme")
    assert store.reads == 1
    assert not verifies(second.secret, cached)  # not yet: within the minute
    clock.ms += 1_000
    both = signer_side.signer("acme")
    assert store.reads == 2
    assert verifies(second.secret, both)
    assert verifies(first.secret, both)
    clock.ms += 3600_000
    assert not verifies(first.secret, signer_side.signer("acme"))
    assert verifies(second.secret, signer_side.signer("acme"))


def test_a_tenant_without_a_secret_gets_one_and_tenants_never_share():
    store, clock = InMemorySigningSecrets(), Clock()
    service = SigningService(store, clock)
    acme = service.rotate("acme", 0)
    service.signer("other")
    assert len(service.list("other")) == 1
    assert not verifies(acme.secret, service.signer("other"))
    assert verifies(acme.secret, service.signer("acme"))
