"""Limits per destination in the firing pipeline, on moto with a real HTTP receiver: the receiver
itself measures how many calls start in any second and how many are outstanding at once."""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from typing import Any

import pytest

from local.receiver import most_within
from tests.integration.test_pipeline import parse, runs

pytestmark = pytest.mark.integration


def put_limit(api: Any, name: str, **body: Any) -> dict[str, Any]:
    answer = api("PUT", f"/v1/limits/{name}", body)
    assert answer.status == 200, answer.body
    return dict(answer.body)


def register_at(api: Any, url: str, at_s: float, timeout_s: int = 1, **fields: Any) -> dict[str, Any]:
    at = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at_s)) + f".{int(at_s * 1000) % 1000:03d}Z"
    body = {"schedule": {"at": at}, "target": {"http": {"url": url, "timeout_seconds": timeout_s}}, **fields}
    answer = api("POST", "/v1/tasks", body)
    assert answer.status == 201, answer.body
    return answer.body


def burst(api: Any, url: str, count: int, lead_s: float = 1.6, **fields: Any) -> list[dict[str, Any]]:
    """``count`` one-shot tasks due at the same instant, ``lead_s`` from now (``timeout_s``, the
    call's timeout, passes through to ``register_at``)."""
    due = time.time() + lead_s
    return [register_at(api, url, due, **fields) for _ in range(count)]


def most_started_within_a_second(finished: list[dict[str, Any]]) -> int:
    """The most of these runs whose call started (``fired_at``, taken by the trigger right before
    the call) within any one second: the limit's bound (docs/receivers.md) is on starts. The
    receiver's count of arrivals is not held to it here: on a loaded machine a call's thread can
    wait a second for the interpreter between its start and the request reaching the receiver,
    and its arrival crowds the next second's (the burst benchmark counts arrivals, alone)."""
    return most_within([parse(run["fired_at"]).timestamp() for run in finished], 1.0)


def results(pipeline: Any) -> Counter[str]:
    from functions.trigger import handler as trigger

    seen: Counter[str] = Counter()
    trigger.observers.append(lambda fired: seen.update([fired.result.value]))
    return seen


def test_a_burst_to_a_limited_origin_is_spread_to_its_rate_and_each_task_fires_once(api, pipeline, receiver):
    url = receiver.script("/limited", 200)
    put_limit(api, "receiver", origin=receiver.url, per_second=4, burst=2)
    seen = results(pipeline)
    tasks = burst(api, url, 14)
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/limited")) >= 14, timeout=20)
    pipeline.settle()  # any duplicate would arrive now
    calls = receiver.calls_to("/limited")
    assert sorted(c.body["task_id"] for c in calls) == sorted(t["id"] for t in tasks)  # each once
    due = parse(tasks[0]["next_fire_at"]).timestamp()
    assert min(c.at for c in calls) >= due  # never early
    span = max(c.at for c in calls) - due
    assert span >= 2.5, span  # 14 calls: 2 at once, then 12 at 4 a second = 3 s (load only adds)
    assert seen["throttled"] >= 1  # the later ones went back to the delay queue
    finished = [runs(api, t["id"])[0] for t in tasks]
    assert {r["status"] for r in finished} == {"succeeded"}
    # per_second + burst is the limit's bound (held exactly under a fake clock by the property
    # test in tests/unit/test_limits.py, and measured by make bench ARGS=--burst); here, in real
    # time beside the other suites, a trigger starved between its wake and its start (the in-flight
    # slot's write) has made it 7. Two over still fails a limit that holds nothing (14 at once).
    assert most_started_within_a_second(finished) <= 4 + 2 + 2
    assert all(r["attempts"] == 1 for r in finished)  # a hold is not an attempt
    held = sorted(r["throttled_ms"] for r in finished)
    # the last held about 3 s from when it was ready; a trigger that reached it late on a loaded
    # machine counts its hold from then (a coverage run saw 2,480 ms): a limit that holds nothing
    # holds it about 0
    assert held[-1] >= 2000, held
    # The burst went ahead of the rest: the first held well under the last. (That it went at
    # once, held 0 ms, is exact under the fake clock of tests/unit/test_limits.py; here, beside
    # the other suites, a trigger that wakes an interval late books its start again, and the
    # first of the burst was once held 1.5 s.)
    assert held[0] <= held[-1] - 2000, held


def test_max_in_flight_caps_the_outstanding_calls_to_a_slow_receiver(api, pipeline, receiver):
    url = receiver.script("/slow", 200)
    receiver.slow["/slow"] = 0.4
    put_limit(api, "slow", origin=receiver.url, per_second=100, burst=10, max_in_flight=2)
    # The calls' timeout is well above the receiver's 0.4 s: with 1 s, a CI run beside the other
    # suites saw two calls' threads starved past it, and a timed-out call is retried (an attempt,
    # so a seventh and eighth call), which is the pipeline's right answer but not this test's case.
    tasks = burst(api, url, 6, timeout_s=10)
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/slow")) >= 6, timeout=20)
    pipeline.settle()
    assert len(receiver.calls_to("/slow")) == 6
    assert receiver.most_outstanding("/slow") <= 2
    assert {runs(api, t["id"])[0]["status"] for t in tasks} == {"succeeded"}


def test_a_trigger_that_dies_holding_a_slot_gives_it_back_after_the_lease(api, pipeline, receiver, monkeypatch):
    from shared.services.firing import call

    url = receiver.script("/crash-slot", 200)
    put_limit(api, "one-at-a-time", origin=receiver.url, per_second=100, burst=10, max_in_flight=1)
    real_call = call.Caller._call
    crashed: list[tuple[float, str]] = []

    def die_once_holding_the_slot(self: Any, claim: Any, *args: Any, **kwargs: Any) -> Any:
        if not crashed:
            crashed.append((time.time(), claim.claimed.task.id))
            raise RuntimeError("the trigger died mid-callback")  # its slot is never given back...
        return real_call(self, claim, *args, **kwargs)

    monkeypatch.setattr(call.Caller, "_call", die_once_holding_the_slot)
    monkeypatch.setattr(call.Throttling, "release", lambda self, run_id, limited: None)  # ...as in a crash
    tasks = burst(api, url, 2)
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/crash-slot")) >= 2, timeout=30)
    pipeline.settle()
    calls = sorted(receiver.calls_to("/crash-slot"), key=lambda c: c.at)
    assert sorted(c.body["task_id"] for c in calls) == sorted(t["id"] for t in tasks)
    # The crashed run may take its own slot again when it comes back (it is the same run); the
    # other task waits for the lease of the last slot nobody gave back: the call's timeout (1 s)
    # and 5 s.
    ((crash_at, crashed_task),) = crashed
    (other,) = [c for c in calls if c.body["task_id"] != crashed_task]
    takers = [crash_at, *(c.at for c in calls if c.at < other.at)]
    assert other.at - max(takers) >= 5.5


def test_lowering_a_limit_while_occurrences_are_held_slows_the_ones_still_held(api, pipeline, receiver):
    url = receiver.script("/changed", 200)
    put_limit(api, "changing", origin=receiver.url, per_second=2)
    tasks = burst(api, url, 10)  # at 2 a second: 4.5 s of bookings, most held
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/changed")) >= 2, timeout=10)
    changed = put_limit(api, "changing", origin=receiver.url, per_second=0.5)
    assert changed["version"] == 2
    changed_at = time.time()
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/changed")) >= 10, timeout=40)
    pipeline.settle()
    calls = sorted(receiver.calls_to("/changed"), key=lambda c: c.at)
    assert sorted(c.body["task_id"] for c in calls) == sorted(t["id"] for t in tasks)
    later = [c.at for c in calls if c.at > changed_at + 3.5]  # booked again under the new limit
    assert len(later) >= 3
    gaps = [b - a for a, b in itertools.pairwise(later)]
    # 2 s apart now, not 0.5 s: on average, as the limit books starts and this counts arrivals (in
    # a run beside the other suites one call's thread waited half a second between its start and
    # its arrival: a gap of 1.52 s, then 2.0 s; the old limit would have made them 0.5 s)
    assert sum(gaps) / len(gaps) >= 1.8, gaps


def test_deleting_a_limit_lets_the_held_occurrences_go_when_they_come_back(api, pipeline, receiver):
    url = receiver.script("/deleted", 200)
    put_limit(api, "gone", origin=receiver.url, per_second=1)
    tasks = burst(api, url, 8)
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/deleted")) >= 1, timeout=10)
    assert api("DELETE", "/v1/limits/gone").status == 204
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/deleted")) >= 8, timeout=20)
    pipeline.settle()
    assert sorted(c.body["task_id"] for c in receiver.calls_to("/deleted")) == sorted(t["id"] for t in tasks)


def test_retry_after_from_a_limited_receiver_holds_the_whole_limit(api, pipeline, receiver):
    busy = receiver.script("/first", (429, {"Retry-After": "3"}), 200)
    receiver.slow["/first"] = 1.0  # it answers a second after the call arrives (the call waits 5)
    others = receiver.script("/others", 200)
    put_limit(api, "shared", origin=receiver.url, per_second=50, burst=5)
    retry = {"max_attempts": 3, "backoff": "fixed", "interval_seconds": 1}
    first = register_at(api, busy, time.time() + 1.6, timeout_s=5, retry=retry)
    later: list[dict[str, Any]] = []
    failed: list[BaseException] = []

    def register_the_others() -> None:
        """Other tasks of the same origin, registered once the first call has arrived and due 1.8 s
        after it: their messages become receivable (a second before their due time) before the
        receiver answers 429, and they fall due before its Retry-After ends. (Due at fixed times instead,
        they once met a first call 1 to 2 s late beside the rest of `make test`, its answer after
        their calls.)"""
        try:
            arrived = receiver.wait_for("/first", 1, timeout=15)[0].at
            later.extend(register_at(api, others, arrived + 1.8) for _ in range(3))
        except BaseException as error:
            failed.append(error)

    registering = threading.Thread(target=register_the_others, daemon=True)
    registering.start()
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/others")) >= 3, timeout=20)
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/first")) >= 2, timeout=10)
    registering.join(10)
    assert failed == []
    refused_at = receiver.calls_to("/first")[0].at
    assert min(c.at for c in receiver.calls_to("/others")) >= refused_at + 3.0
    assert receiver.calls_to("/first")[1].at >= refused_at + 3.0
    assert len(receiver.calls_to("/others")) == len(later) == 3
    assert runs(api, first["id"])[0]["attempts"] == 2
    assert all(runs(api, t["id"])[0]["throttled_ms"] >= 1500 for t in later)


def test_an_unlimited_origin_is_not_slowed(api, pipeline, receiver):
    url = receiver.script("/free", 200)
    put_limit(api, "elsewhere", origin="https://api.example.com", per_second=1)
    tasks = burst(api, url, 8)
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/free")) >= 8, timeout=10)
    # none held by the other origin's limit (1 a second would hold the last one 7 s): what the
    # runs record, not a bound on the wall clock
    assert {runs(api, t["id"])[0]["throttled_ms"] for t in tasks} == {0}


def test_a_target_naming_a_limit_is_held_to_it_whatever_its_origin(api, pipeline, receiver):
    url = receiver.script("/named", 200)
    put_limit(api, "by-name", per_second=2)
    due = time.time() + 1.6
    body = {"http": {"url": url, "timeout_seconds": 1, "limit": "by-name"}}
    for _ in range(5):
        answer = api("POST", "/v1/tasks", {"schedule": {"at": _iso(due)}, "target": body})
        assert answer.status == 201, answer.body
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/named")) >= 5, timeout=15)
    assert receiver.most_starts_per_second("/named") <= 2 + 1


def _iso(at_s: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at_s)) + f".{int(at_s * 1000) % 1000:03d}Z"


def test_receiver_measures_overlap_and_rate() -> None:
    """The measures the tests and the benchmark rely on, against calls with known times."""
    from local.receiver import Call, Receiver

    receiver = Receiver(url="", lock=threading.Lock())
    for at, answered in [(0.0, 0.5), (0.1, 0.2), (0.2, 0.3), (0.25, 0.9), (1.2, 1.3)]:
        receiver.calls.append(Call("/p", "POST", {}, None, at, answered=answered))
    assert receiver.most_outstanding("/p") == 3  # 0.0-0.5, 0.25-0.9 and 0.1-0.2 / 0.2-0.3 (back to back)
    assert receiver.most_starts_per_second("/p") == 4  # 0.0 .. 0.25; 1.2 is a second after 0.2
