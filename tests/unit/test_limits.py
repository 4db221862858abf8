"""Limits per destination, the pure parts: origins, matching, sub-buckets, and GCRA booked ahead
checked against what a receiver would count (starts in any one-second window)."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from local.receiver import most_within
from shared.delivery import Outcome
from shared.domain.claims import Claimed, Result
from shared.domain.firing import Staged, Timing, staged_for
from shared.domain.limits import Booking, Limit, LimitState, booked_start, limit_for, origin_of, parse_origin
from shared.domain.registration import new_task
from shared.domain.retry import RetryPolicy
from shared.domain.schedules import At
from shared.domain.signing import Signer, secret_text
from shared.domain.tasks import HttpTarget, TaskSpec
from shared.domain.times import to_ms, truncate_ms
from shared.services.firing.call import REBOOKINGS, SLOT_WAIT_S, Caller, Ran
from shared.services.firing.claim import Claim, Claimer
from shared.services.firing.record import Recorder
from shared.services.firing.settle import settle
from shared.services.throttling import Throttling
from tests.support.firing import DeadLetters

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://API.example.com/hook?x=1", "https://api.example.com"),
        ("https://api.example.com:443/hook", "https://api.example.com"),
        ("http://api.example.com:80", "http://api.example.com"),
        ("http://api.example.com:8080/a", "http://api.example.com:8080"),
        ("https://[::1]:9443/x", "https://[::1]:9443"),
        ("ftp://example.com", None),
        ("not a url", None),
        ("https://example.com:99999", None),
    ],
)
def test_the_origin_of_a_url_is_scheme_host_and_port_with_the_default_port_implied(url: str, origin: str | None):
    assert origin_of(url) == origin


@pytest.mark.parametrize(
    "text", ["https://a.example/path", "https://a.example?q=1", "https://u:p@a.example", "a.example"]
)
def test_a_limit_origin_is_a_bare_origin(text: str):
    with pytest.raises(ValueError, match="an origin is"):
        parse_origin(text)


def test_a_target_is_held_to_the_limit_it_names_else_to_the_one_of_its_origin():
    by_origin = Limit("acme", "api", 10, origin="https://api.example.com")
    named = Limit("acme", "special", 1)
    limits = (by_origin, named)
    assert limit_for(HttpTarget("https://api.example.com:443/a"), limits) is by_origin
    assert limit_for(HttpTarget("https://api.example.com/a", limit="special"), limits) is named
    assert limit_for(HttpTarget("https://other.example.com/a"), limits) is None
    assert limit_for(HttpTarget("https://api.example.com/a", limit="deleted"), limits) is None


def test_a_fast_limit_is_split_into_sub_buckets_whose_parts_add_up_to_it():
    limit = Limit("acme", "fast", 1_200, burst=30, max_in_flight=90)
    assert limit.sub_buckets == 3
    assert limit.rate().per_second * 3 == pytest.approx(1_200)
    assert limit.rate().burst == 10
    assert limit.in_flight() == 30
    buckets = {limit.sub_bucket(f"run-{i}") for i in range(300)}
    assert buckets == {0, 1, 2}
    assert limit.sub_bucket("run-7") == limit.sub_bucket("run-7")
    assert Limit("acme", "slow", 500).sub_buckets == 1


def book(tat: float | None, reference: float, limit: Limit) -> tuple[float, float]:
    """What the state item does to a booking (shared/store/throttle.py): busy (TAT >= reference)
    adds an interval, idle sets reference + interval; the start follows from the new TAT."""
    rate = limit.rate()
    new_tat = tat + rate.interval_ms if tat is not None and tat >= reference else reference + rate.interval_ms
    return booked_start(new_tat, reference, rate), new_tat


@settings(max_examples=300, deadline=None)
@given(
    per_second=st.sampled_from([0.5, 1, 3, 20, 100, 450]),
    burst=st.integers(1, 25),
    gaps=st.lists(st.integers(0, 400), min_size=1, max_size=300),
)
def test_booked_starts_never_exceed_the_rate_and_burst_in_any_second(per_second: float, burst: int, gaps: list[int]):
    limit = Limit("acme", "x", per_second, burst=burst)
    tat: float | None = None
    reference, starts = 0.0, []
    for gap in gaps:
        reference += gap
        start, tat = book(tat, reference, limit)
        assert start >= reference  # never before it is due
        starts.append(math.ceil(start))  # as the store rounds it
    assert most_within(starts, 1000) <= math.floor(per_second) + burst
    assert starts == sorted(starts)  # booked in order, started in order


def test_a_flood_due_at_once_is_booked_one_interval_apart_after_its_burst():
    limit = Limit("acme", "x", 20, burst=5)
    tat, starts = None, []
    for _ in range(600):
        start, tat = book(tat, 0, limit)
        starts.append(start)
    assert starts[:5] == [0] * 5
    assert starts[5] == 50
    assert starts[-1] == pytest.approx((600 - 5) * 50)  # 29.75 s: the ideal 30 s less the burst


# --- a task's own Retry-After past SQS's longest delay ------------------------------------

NOW = truncate_ms(datetime(2026, 11, 24, 9, 0, tzinfo=UTC))


class Sent:
    def __init__(self) -> None:
        self.messages: list[tuple[Staged, int]] = []
        self.retries: list[dict[str, Any]] = []
        self.claims = 0

    def send(self, messages: list[tuple[Staged, int]]) -> None:
        self.messages.extend(messages)

    def record_retry(self, staged: Staged, **fields: Any) -> bool:
        self.retries.append(fields)
        return True

    def claim(self, *args: Any, **kwargs: Any) -> Any:
        self.claims += 1
        raise AssertionError("a message back before its start is not claimed")


def recorder(sent: Sent) -> Recorder:
    return Recorder(sent, sent, DeadLetters(), Timing(), clock=lambda: to_ms(NOW))  # type: ignore[arg-type]


def test_a_retry_after_of_half_an_hour_is_waited_in_full_across_sqs_delays():
    sent = Sent()
    task = new_task(
        TaskSpec(At(NOW), (HttpTarget("https://example.com/hook"),), retry=RetryPolicy(max_attempts=3)),
        tenant="acme",
        now=NOW,
        shard=0,
    )
    staged = staged_for(task.id, to_ms(NOW), one_shot=True)
    claim = Claim(staged, Claimed(task, 0, "log"), to_ms(NOW))
    busy = Outcome.of_status(503, retry_after_s=1_800)
    ran = Ran(0, fired_ms=to_ms(NOW), outcomes=(busy,))
    fired = recorder(sent).record(claim, settle(claim, ran, to_ms(NOW), Timing()))
    assert fired.result is Result.RETRYING
    ((following, delay),) = sent.messages
    assert delay == 900  # SQS's longest
    assert following.attempt == 2
    assert following.start_ms == to_ms(NOW) + 1_800_000
    # it comes back after 15 minutes: sent on again, not claimed
    back = Claimer(sent, sent, Timing(), clock=lambda: to_ms(NOW) + 900_000)  # type: ignore[arg-type]
    again = back.claim(following, "log")
    assert sent.claims == 0
    assert again.result is Result.EARLY  # type: ignore[union-attr]
    (_, (returned, delay_again)) = sent.messages
    assert returned == following
    assert delay_again == 900 - Timing().lead_ms // 1000


def test_a_retry_back_within_the_lead_of_a_long_retry_after_waits_for_it_not_for_its_due_time():
    task = new_task(TaskSpec(At(NOW), (HttpTarget("https://example.com/hook"),)), tenant="acme", now=NOW, shard=0)
    start = to_ms(NOW) + 1_800_000
    retry = replace(staged_for(task.id, to_ms(NOW), one_shot=True).next_attempt(), start_ms=start)
    slept: list[float] = []
    called: list[int] = []

    class Receiver:
        def deliver(self, target: Any, envelope: Any) -> Outcome:
            called.append(len(slept))
            return Outcome.success(200)

    now = start - 1_500
    caller = Caller(Receiver(), Timing(), clock=lambda: now, sleep=slept.append)
    ran = caller.run(Claim(retry, Claimed(task, 0, "log"), now))
    assert slept == [1.5]  # until the receiver's time, 30 minutes after the due time
    assert called == [1]
    assert ran.outcomes[0].ok


class FakeThrottle:
    """One limit's state in memory, booked the way the store books it (``book`` above)."""

    def __init__(self) -> None:
        self.tat: float | None = None
        self.references: list[int] = []
        """The time each booking was made from."""
        self.ks: list[int] = []
        """The sub-bucket each booking was made in."""

    def book(self, limit: Limit, k: int, reference_ms: int) -> Booking:
        self.references.append(reference_ms)
        self.ks.append(k)
        start, self.tat = book(self.tat, reference_ms, limit)
        return Booking(math.ceil(start))

    def acquire(self, *args: Any) -> bool:
        return True

    def release(self, *args: Any) -> None:
        pass

    def state(self, limit: Limit, k: int, consistent: bool = False) -> LimitState:
        return LimitState(limit.version, None)


@pytest.mark.parametrize("overslept_ms", [0, 15, 100, 300])
def test_a_burst_starts_straight_and_a_trigger_woken_late_is_late_not_throttled(overslept_ms: int) -> None:
    """Three calls due at once to a limit of 10 a second with a burst of 2: the first two start
    at their due time, the third an interval later. A trigger that oversleeps past the limit's
    tolerance books again from the time it woke (once): the time it overslept is lateness, not
    time the limit held the call (an e2e run on a loaded machine showed a first call "throttled"
    300 ms)."""
    targets = (HttpTarget("https://example.com/hook"),)
    now = [0]
    throttle = FakeThrottle()
    caller, _ = limited_caller(now, 10, throttle=throttle, burst=2, overslept_ms=overslept_ms)
    runs = []
    for _ in range(3):
        task = new_task(TaskSpec(At(NOW), targets), tenant="acme", now=NOW, shard=0)
        now[0] = to_ms(NOW) - 1_000  # each claimed in the staging lead
        runs.append(caller.run(Claim(staged_for(task.id, to_ms(NOW), one_shot=True), Claimed(task, 0, "log"), now[0])))
        if len(runs) == 1:  # the first booked from its due time, and again (once) from a wake past the tolerance
            again = [to_ms(NOW) + overslept_ms] if overslept_ms > 100 else []
            assert throttle.references == [to_ms(NOW), *again]
    assert all(ran.outcomes[0].ok for ran in runs)
    assert runs[0].fired_ms == to_ms(NOW) + overslept_ms
    throttled = [ran.throttled_ms for ran in runs]
    if overslept_ms <= 20:  # within the tolerance: each starts at its booking (and the slack it overslept)
        assert throttled == [0, 0, 100]
        assert [ran.fired_ms - to_ms(NOW) for ran in runs] == [overslept_ms, overslept_ms, 100 + overslept_ms]
    else:  # each books again from when it woke, behind the bookings made meanwhile
        assert throttled[0] == 0
        assert throttled[2] >= 100


def limited_caller(
    now: list[int],
    per_second: float,
    throttle: FakeThrottle | None = None,
    envelopes: list[Any] | None = None,
    max_in_flight: int | None = None,
    burst: int = 1,
    overslept_ms: int = 0,
) -> tuple[Caller, list[int]]:
    """A caller whose one target is held to ``per_second`` (and ``burst``); its fake clock is
    ``now``, which each wait oversleeps by ``overslept_ms``; its calls signed with tenant acme's
    signer (:data:`SIGNERS`). Returns it and the times its target was called."""
    limit = Limit("acme", "x", per_second, burst=burst, max_in_flight=max_in_flight, origin="https://example.com")
    called: list[int] = []

    class Source:
        def limits(self, tenant: str) -> list[Limit]:
            return [limit]

        refresh = limits

    class Receiver:
        def deliver(self, target: Any, envelope: Any) -> Outcome:
            called.append(now[0])
            if envelopes is not None:
                envelopes.append(envelope)
            return Outcome.success(200)

    def sleep(seconds: float) -> None:
        now[0] += round(seconds * 1000) + overslept_ms

    throttling = Throttling(throttle or FakeThrottle(), Source())  # type: ignore[arg-type]
    caller = Caller(
        Receiver(), Timing(), clock=lambda: now[0], sleep=sleep, signer=SIGNERS.__getitem__, throttling=throttling
    )
    return caller, called


SIGNERS = {"acme": Signer.of([secret_text(bytes(32))])}


def test_a_start_booked_further_than_the_lead_and_a_second_puts_the_run_back_throttled_from_its_due_time() -> None:
    """One call every 4 s: the second of two runs due at once starts 4 s after its due time. Claimed
    a second before it, that start is 5 s away (> the 2 s lead + 1 s slack): the run is put back,
    its message 3 s away (visible a lead before its start), throttled the 4 s the limit holds it.
    Claimed a second after the first run's call (2 s after its due time), the second's start is
    exactly 3 s away: it waits it out and calls, throttled those 3 s."""
    due = to_ms(NOW)
    targets = (HttpTarget("https://example.com/hook"),)
    now = [due - 1_000]
    caller, called = limited_caller(now, 0.25)
    claims = []
    for _ in range(2):
        task = new_task(TaskSpec(At(NOW), targets), tenant="acme", now=NOW, shard=0)
        claims.append(Claim(staged_for(task.id, due, one_shot=True), Claimed(task, 0, "log"), now[0]))
    first = caller.run(claims[0])
    assert (first.fired_ms, first.throttled_ms) == (due, 0)
    now[0] = due - 1_000
    second = caller.run(claims[1])
    held = claims[1].staged.hold(due + 4_000, (("x", 1),), due)
    assert (second.targets_done, second.held, second.throttled_ms, second.outcomes) == (0, (held, 3), 4_000, ())
    assert called == [due]

    now[0] = due + 1_000  # the boundary: 3 s away is waited out
    caller, called = limited_caller(now, 0.25)
    caller.run(claims[0])
    now[0] = due + 2_000
    waited = caller.run(replace(claims[1], at_ms=due + 2_000))
    assert (waited.held, waited.fired_ms, waited.throttled_ms) == (None, due + 5_000, 3_000)
    assert called == [due + 1_000, due + 5_000]


def test_a_slow_claim_is_late_not_throttled_and_a_fast_limit_books_in_the_runs_sub_bucket() -> None:
    due = to_ms(NOW)
    now = [due + 500]  # claimed a second before its due time, and running only now
    caller, called = limited_caller(now, 2_000)  # a fast limit: several sub-buckets
    task = new_task(TaskSpec(At(NOW), (HttpTarget("https://example.com/hook"),)), tenant="acme", now=NOW, shard=0)
    staged = staged_for(task.id, due, one_shot=True)
    ran = caller.run(Claim(staged, Claimed(task, 0, "log"), due - 1_000))
    assert (ran.fired_ms, ran.throttled_ms, called) == (due + 500, 0, [due + 500])
    limit = Limit("acme", "x", 2_000, origin="https://example.com")
    assert limit.sub_buckets > 1
    assert caller.throttling.throttle.ks == [limit.sub_bucket(staged.run_id)]  # type: ignore[union-attr, attr-defined]


def test_a_limited_call_is_signed_and_a_run_cancelled_while_it_waits_for_its_start_is_skipped() -> None:
    due = to_ms(NOW)
    now = [due - 1_000]
    envelopes: list[Any] = []
    caller, called = limited_caller(now, 0.25, envelopes=envelopes)
    claims = []
    for _ in range(2):
        task = new_task(TaskSpec(At(NOW), (HttpTarget("https://example.com/hook"),)), tenant="acme", now=NOW, shard=0)
        claims.append(Claim(staged_for(task.id, due, one_shot=True), Claimed(task, 0, "log"), now[0]))
    assert caller.run(claims[0]).fired_ms == due
    assert envelopes[0].signer is SIGNERS["acme"]
    now[0] = due + 2_000  # its start (4 s after the first's), 2 s away, is waited out; the task is cancelled meanwhile
    why = "its task was cancelled while the trigger waited"
    looked: list[int] = []

    def stopped(claim: Claim) -> str:
        looked.append(now[0])
        return why

    ran = caller.run(replace(claims[1], at_ms=due + 2_000), stopped)
    assert (ran.targets_done, ran.skipped, ran.throttled_ms, ran.outcomes) == (0, why, 2_000, ())
    assert looked == [due + 4_000 - 50]  # looked at once more just before its start
    assert called == [due]


def test_a_run_whose_limit_keeps_changing_under_it_is_put_back_after_its_rebookings() -> None:
    class Changing(FakeThrottle):
        """Every read of the limit finds another version than the one booked under."""

        def state(self, limit: Limit, k: int, consistent: bool = False) -> LimitState:
            return LimitState(limit.version + 1, None)

    due = to_ms(NOW)
    now = [due - 1_000]
    throttle = Changing()
    caller, called = limited_caller(now, 10, throttle=throttle)
    task = new_task(TaskSpec(At(NOW), (HttpTarget("https://example.com/hook"),)), tenant="acme", now=NOW, shard=0)
    staged = staged_for(task.id, due, one_shot=True)
    ran = caller.run(Claim(staged, Claimed(task, 0, "log"), now[0]))
    assert called == []
    assert ran.held is not None
    assert (ran.held[0].held, ran.held[1]) == (True, SLOT_WAIT_S)  # back in a second, to book again
    # booked once, then again after each recheck that found the limit changed: REBOOKINGS + 1 of them
    assert len(throttle.references) == REBOOKINGS + 2


def test_a_run_whose_limit_has_every_in_flight_slot_taken_is_put_back_unbooked() -> None:
    class Full(FakeThrottle):
        def acquire(self, *args: Any) -> bool:
            return False  # every slot taken

    due = to_ms(NOW)
    now = [due - 1_000]
    caller, called = limited_caller(now, 10, throttle=Full(), max_in_flight=1)
    task = new_task(TaskSpec(At(NOW), (HttpTarget("https://example.com/hook"),)), tenant="acme", now=NOW, shard=0)
    staged = replace(staged_for(task.id, due, one_shot=True), throttled_ms=700)  # held 0.7 s by limits before
    ran = caller.run(Claim(staged, Claimed(task, 0b10, "log"), now[0]))
    assert called == []
    # back in a second, to book again (its booking is not kept), throttled what it was so far
    assert (ran.targets_done, ran.held, ran.throttled_ms) == (0b10, (staged.hold(None, (), due), SLOT_WAIT_S), 700)
