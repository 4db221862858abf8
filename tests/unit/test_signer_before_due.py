"""A claimed occurrence gets its tenant's signer before it waits for its due time: reading the
secrets (a query and a KMS decrypt when nothing is cached) is spent in the staging lead, not
after the due time (shared/services/firing/call.py, Caller.run)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.delivery import Outcome
from shared.domain.claims import Claimed
from shared.domain.errors import StorageUnavailable
from shared.domain.firing import Timing, staged_for
from shared.domain.registration import new_task
from shared.domain.schedules import At
from shared.domain.signing import Signer, secret_text
from shared.domain.tasks import HttpTarget, TaskSpec
from shared.domain.times import to_ms, truncate_ms
from shared.services.firing.call import Caller
from shared.services.firing.claim import Claim

pytestmark = pytest.mark.unit

NOW = truncate_ms(datetime(2026, 11, 24, 9, 0, tzinfo=UTC))


class Recorder:
    def __init__(self, fail: bool = False) -> None:
        self.events: list[str] = []
        self.fail = fail
        self.envelopes: list[Any] = []

    def signer(self, tenant: str) -> Signer:
        self.events.append(f"signer {tenant}")
        if self.fail:
            raise StorageUnavailable("KMS unavailable")
        return Signer.of([secret_text(bytes(32))])

    def sleep(self, seconds: float) -> None:
        self.events.append("wait")

    def deliver(self, target: Any, envelope: Any) -> Outcome:
        self.events.append("call")
        self.envelopes.append(envelope)
        return Outcome.success(200)


def run(recorder: Recorder) -> Any:
    due = NOW + timedelta(seconds=2)
    task = new_task(TaskSpec(At(due), (HttpTarget("https://example.com/hook"),)), tenant="acme", now=NOW, shard=0)
    caller = Caller(recorder, Timing(), clock=lambda: to_ms(NOW), sleep=recorder.sleep, signer=recorder.signer)
    staged = staged_for(task.id, to_ms(due), one_shot=True)
    return caller.run(Claim(staged, Claimed(task, 0, "log"), to_ms(NOW)))


def test_the_signer_is_got_before_the_wait_and_signs_the_call() -> None:
    recorder = Recorder()
    ran = run(recorder)
    assert recorder.events == ["signer acme", "wait", "call"]
    assert recorder.envelopes[0].signer is not None
    assert ran.outcomes[0].ok


def test_without_a_signer_the_http_call_is_not_made_unsigned() -> None:
    recorder = Recorder(fail=True)
    ran = run(recorder)
    assert recorder.events == ["signer acme", "wait"]
    assert not ran.outcomes[0].ok
    assert "signing secret could not be read" in (ran.outcomes[0].error or "")
