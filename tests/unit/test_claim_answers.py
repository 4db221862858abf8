"""Step 1, claim (shared/services/firing/claim.py): what each refusal of the store answers, when a
message that overtook a write comes back, and what a message early for its start does. The store
answers as scripted; the clock moves only when the claimer pauses. Written for the survivors of
`make mutation`: each expected value is worked out from the rule's words."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from shared.domain.claims import WRITER_WINDOW_MS, Claimed, Handled, Refusal, Result
from shared.domain.firing import Staged, Timing
from shared.domain.registration import new_task
from shared.domain.schedules import At
from shared.domain.tasks import HttpTarget, TaskSpec
from shared.domain.times import from_ms
from shared.services.firing.claim import Claim, Claimer
from tests.support.firing import FakeClock, Queues

pytestmark = pytest.mark.unit

DUE = 1_800_000_000_000
TIMING = Timing()


@dataclass
class Scripted:
    """A pipeline store whose claims answer ``answer``, whatever they are asked."""

    answer: Refusal | Claimed
    asked: list[dict[str, Any]] = field(default_factory=list)

    def claim(self, staged: Staged, **kwargs: Any) -> Refusal | Claimed:
        self.asked.append(kwargs)
        return self.answer


def claimer(answer: Refusal | Claimed, now_ms: int) -> tuple[Claimer, Queues, FakeClock]:
    clock, queues = FakeClock(now_ms), Queues()
    return Claimer(Scripted(answer), queues, TIMING, clock=clock, sleep=clock.sleep), queues, clock  # type: ignore[arg-type]


STAGED = Staged("t", DUE, "r")


def test_an_occurrence_not_yet_armed_comes_back_in_a_second_until_its_misfire_tolerance_is_over() -> None:
    pauses_ms = 350  # the claimer looked again three times first (0.05 + 0.1 + 0.2 s)
    tolerance = TIMING.misfire_tolerance_ms
    still, queues, _ = claimer(Refusal.BEHIND, DUE + tolerance - pauses_ms - 1)
    assert still.claim(STAGED, "log") == Handled(STAGED, Result.EARLY, reason="behind")
    assert queues.sent == [(STAGED, 1)]
    over, queues, _ = claimer(Refusal.BEHIND, DUE + tolerance - pauses_ms)
    assert over.claim(STAGED, "log") == Handled(STAGED, Result.DROPPED, reason="behind")  # nobody armed it
    assert queues.sent == []


@pytest.mark.parametrize("refusal", [Refusal.RESUMING, Refusal.RESCHEDULING])
def test_a_writers_occurrence_long_past_due_comes_back_while_its_writer_may_still_write(refusal: Refusal) -> None:
    """A resume with fire_now stages an occurrence missed hours ago, then writes: found paused
    (RESUMING), past its misfire tolerance, its message still comes back until WRITER_WINDOW_MS
    after the writer staged it; as a PATCH's to an earlier time, found armed later (RESCHEDULING)."""
    pauses_ms = 350
    staged_at = DUE + 3_600_000
    resumed = replace(STAGED, writer_ms=staged_at)
    still, queues, _ = claimer(refusal, staged_at + WRITER_WINDOW_MS - pauses_ms)
    assert still.claim(resumed, "log") == Handled(resumed, Result.EARLY, reason=refusal.value)
    assert queues.sent == [(resumed, 1)]
    over, queues, _ = claimer(refusal, staged_at + WRITER_WINDOW_MS - pauses_ms + 1)
    assert over.claim(resumed, "log") == Handled(resumed, Result.DROPPED, reason=refusal.value)
    assert queues.sent == []
    behind, queues, _ = claimer(Refusal.BEHIND, staged_at)  # not armed yet, past its tolerance: dropped
    assert behind.claim(resumed, "log") == Handled(resumed, Result.DROPPED, reason="behind")


def test_a_run_leased_elsewhere_is_in_flight_and_one_over_is_dropped() -> None:
    in_flight, queues, _ = claimer(Refusal.IN_FLIGHT, DUE)
    assert in_flight.claim(STAGED, "log") == Handled(STAGED, Result.IN_FLIGHT, reason="in_flight")
    done, _, _ = claimer(Refusal.DONE, DUE)
    assert done.claim(STAGED, "log") == Handled(STAGED, Result.DROPPED, reason="done")
    assert queues.sent == []


def test_a_retry_ahead_of_its_attempts_record_comes_back_a_quarter_of_its_lateness_later() -> None:
    retry = Staged("t", DUE, "r", attempt=2, start_ms=DUE + 2_000)
    for late_ms, delay in ((0, 1), (8_000, 2), (11_999, 2), (12_000, 3), (4_000_000, 900)):
        early, queues, clock = claimer(Refusal.EARLY, retry.earliest_ms + late_ms - 350)
        assert early.claim(retry, "log") == Handled(retry, Result.EARLY, reason="early")
        ((sent, delay_s),) = queues.sent
        assert (sent, delay_s, type(delay_s)) == (retry, delay, int), late_ms
        assert clock.now == retry.earliest_ms + late_ms


def test_a_message_back_before_its_start_is_sent_on_early_or_throttled_when_held() -> None:
    far = TIMING.lead_ms + 1_001
    ahead = Staged("t", DUE, "r", attempt=2, start_ms=DUE + far)
    early, queues, _ = claimer(Refusal.DONE, DUE)
    assert early.claim(ahead, "log") == Handled(ahead, Result.EARLY, reason="not yet")
    assert queues.sent == [(ahead, 1)]  # a second to go before it is a lead away
    held = replace(ahead, held=True)
    assert early.claim(held, "log") == Handled(held, Result.THROTTLED, reason="not yet")


def test_a_run_taken_over_on_its_last_delivery_is_claimed_as_of_now() -> None:
    spec = TaskSpec(At(from_ms(DUE)), (HttpTarget("https://example.com/"),))
    task = new_task(spec, tenant="a", now=from_ms(DUE), shard=0)
    taker, _, _ = claimer(Claimed(task, 0, "log"), DUE + 5)
    taken = taker.take_over(STAGED, "log")
    assert taken == Claim(STAGED, Claimed(task, 0, "log"), DUE + 5)
    assert taker.store.asked == [  # type: ignore[attr-defined]
        {"now_ms": DUE + 5, "lease_until_ms": DUE + 5 + TIMING.lease_ms, "log_id": "log", "take_own": True}
    ]
