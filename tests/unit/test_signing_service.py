"""The signing service: a tenant's secrets are read by one caller at a time, again after 45 s while
the others keep signing, a rotation reaches the signer within the minute, and the previous secret
signs until it expires."""

from __future__ import annotations

import threading
import time

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from shared.services.signing import SigningService
from tests.support.fakes import InMemorySigningSecrets
from tests.support.threads import until_waiting

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


def test_secrets_are_read_again_after_45_s_and_a_rotation_reaches_the_signer_within_a_minute():
    store, clock = InMemorySigningSecrets(), Clock()
    signer_side = SigningService(store, clock)  # the trigger's container
    api_side = SigningService(store, clock)  # the API's
    first = api_side.rotate("acme", 0)
    assert verifies(first.secret, signer_side.signer("acme"))
    second = api_side.rotate("acme", 3600)
    clock.ms += 44_999
    cached = signer_side.signer("acme")
    assert store.reads == 1
    assert not verifies(second.secret, cached)  # not yet: the cached signer is still fresh
    clock.ms += 1
    both = signer_side.signer("acme")
    assert store.reads == 2
    assert verifies(second.secret, both)
    assert verifies(first.secret, both)
    clock.ms += 3600_000
    assert not verifies(first.secret, signer_side.signer("acme"))
    assert verifies(second.secret, signer_side.signer("acme"))


class Held(InMemorySigningSecrets):
    """Reads that wait until released, so that callers meet while one is in progress."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()
        self.fail = False

    def active(self, tenant: str, now_ms: int):
        self.entered.set()
        assert self.release.wait(5)
        if self.fail:
            self.reads += 1
            raise RuntimeError("KMS unavailable")
        return super().active(tenant, now_ms)


def callers(service: SigningService, count: int) -> tuple[list[threading.Thread], list[object]]:
    got: list[object] = []

    def call() -> None:
        try:
            got.append(service.signer("acme"))
        except RuntimeError as exc:
            got.append(exc)

    threads = [threading.Thread(target=call) for _ in range(count)]
    for thread in threads:
        thread.start()
    return threads, got


def test_callers_without_a_signer_wait_for_one_read_and_share_it():
    store, clock = Held(), Clock()
    service = SigningService(store, clock)
    threads, got = callers(service, 8)
    assert store.entered.wait(5)
    until_waiting(threads)  # one reads, the other seven wait for its read
    store.release.set()
    for thread in threads:
        thread.join(5)
    assert store.reads == 1
    assert len(got) == 8
    assert all(signer is got[0] for signer in got)


def test_while_one_caller_reads_again_the_others_sign_with_the_cached_signer_at_once():
    store, clock = Held(), Clock()
    service = SigningService(store, clock)
    store.release.set()
    cached = service.signer("acme")
    store.release.clear()
    store.entered.clear()
    clock.ms += 50_000  # past the refresh, before the expiry
    refresher, _ = callers(service, 1)
    assert store.entered.wait(5)
    others = [service.signer("acme") for _ in range(5)]  # would block if they waited for the read
    assert all(signer is cached for signer in others)
    store.release.set()
    refresher[0].join(5)
    assert store.reads == 2


def test_a_failed_read_reaches_every_waiting_caller_and_is_not_kept():
    store, clock = Held(), Clock()
    service = SigningService(store, clock)
    store.fail = True
    threads, got = callers(service, 4)
    assert store.entered.wait(5)
    until_waiting(threads)
    store.release.set()
    for thread in threads:
        thread.join(5)
    assert len(got) == 4
    assert all(isinstance(answer, RuntimeError) for answer in got)
    assert store.reads == 1
    store.fail = False
    assert service.signer("acme") is not None  # the next caller reads again
    assert store.reads == 2


def test_a_signer_is_never_used_past_its_minute():
    store, clock = InMemorySigningSecrets(), Clock()
    service = SigningService(store, clock, refresh_ms=60_000)
    first = service.signer("acme")
    clock.ms += 60_000
    assert service.signer("acme") is not first
    assert store.reads == 2


def test_a_tenant_without_a_secret_gets_one_and_tenants_never_share():
    store, clock = InMemorySigningSecrets(), Clock()
    service = SigningService(store, clock)
    acme = service.rotate("acme", 0)
    service.signer("other")
    assert len(service.list("other")) == 1
    assert not verifies(acme.secret, service.signer("other"))
    assert verifies(acme.secret, service.signer("acme"))
