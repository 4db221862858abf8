"""Step 2, call (shared/services/firing/call.py), on its own: a claimed occurrence waits for its due
time to the millisecond, looks at its task once just before it, and calls only the targets its run
has not done yet. Claims are taken on the in-memory pipeline store (held to DynamoDB's contract);
the clock moves only when the caller waits, so every time below is exact."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from shared.delivery import Outcome
from shared.domain.claims import Claimed
from shared.domain.firing import Timing, staged_for
from shared.domain.schedules import At
from shared.domain.tasks import HttpTarget, Task, TaskSpec
from shared.domain.times import to_ms
from shared.services.firing.call import LOOK_BEFORE_MS
from shared.services.firing.claim import Claim
from tests.support.firing import FiringCore, firing_core

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
URLS = ("https://a.example/hook", "https://b.example/hook", "https://c.example/hook")
LEAD = Timing().lead_ms


def claimed(core: FiringCore, targets: int = 1, done: int = 0, skipped: str | None = None) -> Claim:
    """A one-shot due 3 s from NOW with ``targets`` HTTP targets, claimed a lead before its due time
    on the in-memory store (``done``: the targets an earlier attempt of its run did)."""
    task: Task = core.register(
        NOW, TaskSpec(At(NOW + timedelta(seconds=3)), tuple(HttpTarget(url) for url in URLS[:targets]))
    )
    staged = staged_for(task.id, to_ms(task.due_at), one_shot=True)
    core.clock.now = staged.due_ms - LEAD
    taken = core.store.claim(staged, now_ms=core.clock.now, lease_until_ms=staged.due_ms + 60_000, log_id="b1")
    assert isinstance(taken, Claimed)
    return Claim(staged, replace(taken, targets_done=done), core.clock.now, skipped)


def called(core: FiringCore) -> dict[str, list[int]]:
    """Each URL called, with the clock's time at each call."""
    return {url: [at for at, _ in calls] for url, calls in core.receiver.calls.items() if calls}


def test_a_claim_taken_a_lead_early_calls_its_target_at_the_due_time_to_the_millisecond() -> None:
    core = firing_core(to_ms(NOW))
    claim = claimed(core)
    ran = core.trigger.caller.run(claim)
    due = claim.staged.due_ms
    assert (ran.fired_ms, ran.targets_done, ran.skipped, ran.held) == (due, 0b1, None, None)
    assert called(core) == {URLS[0]: [due]}
    assert [outcome.ok for outcome in ran.outcomes] == [True]


def test_a_claim_taken_after_the_due_time_calls_at_once() -> None:
    core = firing_core(to_ms(NOW))
    claim = claimed(core)
    core.clock.now = claim.staged.due_ms + 7
    assert core.trigger.caller.run(claim).fired_ms == claim.staged.due_ms + 7
    assert called(core) == {URLS[0]: [claim.staged.due_ms + 7]}


def test_only_the_targets_an_earlier_attempt_did_not_do_are_called() -> None:
    core = firing_core(to_ms(NOW))
    core.receiver.scripts[URLS[2]] = [Outcome.retry("HTTP 503", status=503)]
    claim = claimed(core, targets=3, done=0b010)  # the second succeeded in an earlier attempt
    ran = core.trigger.caller.run(claim)
    assert sorted(called(core)) == [URLS[0], URLS[2]]
    assert ran.targets_done == 0b011  # the first now done; the third failed again
    assert sorted(outcome.ok for outcome in ran.outcomes) == [False, True]


def test_the_task_is_looked_at_once_just_before_the_due_time_and_a_stop_skips_the_call() -> None:
    core = firing_core(to_ms(NOW))
    claim = claimed(core)
    looked: list[int] = []

    def cancelled(seen: Claim) -> str | None:
        assert seen is claim
        looked.append(core.clock.now)
        return "its task was cancelled before this run fired"

    ran = core.trigger.caller.run(claim, cancelled)
    assert looked == [claim.staged.due_ms - LOOK_BEFORE_MS]
    assert (ran.skipped, ran.targets_done, ran.fired_ms) == ("its task was cancelled before this run fired", 0, 0)
    assert called(core) == {}


def test_a_look_that_finds_nothing_wrong_lets_the_call_go_at_the_due_time() -> None:
    core = firing_core(to_ms(NOW))
    claim = claimed(core)
    looked: list[int] = []
    ran = core.trigger.caller.run(claim, lambda _: looked.append(core.clock.now))  # type: ignore[func-returns-value]
    assert looked == [claim.staged.due_ms - LOOK_BEFORE_MS]
    assert ran.fired_ms == claim.staged.due_ms


def test_a_wait_no_longer_than_the_look_has_the_claim_as_its_look() -> None:
    core = firing_core(to_ms(NOW))
    claim = claimed(core)
    core.clock.now = claim.staged.due_ms - LOOK_BEFORE_MS  # a wait of exactly the look's lead
    looked: list[int] = []
    ran = core.trigger.caller.run(claim, lambda _: looked.append(core.clock.now))  # type: ignore[func-returns-value]
    assert looked == []
    assert ran.fired_ms == claim.staged.due_ms


def test_a_skipped_claim_neither_waits_nor_calls() -> None:
    core = firing_core(to_ms(NOW))
    claim = claimed(core, done=0, skipped="missed by 90000 ms (misfire: skip)")
    before = core.clock.now
    ran = core.trigger.caller.run(claim, lambda _: pytest.fail("no look for a skipped claim"))
    assert (ran.skipped, ran.targets_done, ran.fired_ms, ran.outcomes) == (
        "missed by 90000 ms (misfire: skip)",
        0,
        0,
        (),
    )
    assert core.clock.now == before
    assert called(core) == {}
