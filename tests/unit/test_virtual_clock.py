"""The local runtime's virtual clock (local/clock.py): time moves only when set, sleepers wake in
deadline order as it passes them, and quiescence sees no gap between a sleeper's wake and its
return to work."""

from __future__ import annotations

import threading

import pytest

from local.clock import VirtualClock
from shared.domain import times

pytestmark = pytest.mark.unit

T0 = 1_800_000_000_000


def test_time_stands_still_until_moved_and_never_goes_back() -> None:
    clock = VirtualClock(T0)
    assert clock.now_ms() == T0
    clock.move_to(T0 + 5)
    assert clock.now_ms() == T0 + 5
    with pytest.raises(ValueError, match="does not go back"):
        clock.move_to(T0)


def test_sleepers_wake_as_the_clock_passes_their_deadlines_in_order() -> None:
    clock = VirtualClock(T0)
    woke: list[tuple[str, int]] = []

    def sleeper(name: str, seconds: float) -> None:
        with clock.busy():
            clock.sleep(seconds)
            woke.append((name, clock.now_ms()))

    threads = [threading.Thread(target=sleeper, args=(n, s)) for n, s in (("late", 2.0), ("soon", 0.5))]
    for thread in threads:
        thread.start()
    assert clock.until_sleeping(2, timeout_s=5)
    assert clock.quiescent(timeout_s=5)  # both asleep: nothing is busy
    assert clock.next_deadline() == T0 + 500
    clock.move_to(T0 + 500)
    assert clock.quiescent(timeout_s=5)  # "soon" woke, worked and ended
    assert woke == [("soon", T0 + 500)]
    assert clock.next_deadline() == T0 + 2000
    clock.move_to(T0 + 3000)
    assert clock.quiescent(timeout_s=5)
    assert woke == [("soon", T0 + 500), ("late", T0 + 3000)]
    for thread in threads:
        thread.join(timeout=5)


def test_a_woken_worker_is_busy_before_the_move_returns() -> None:
    """The move counts the sleeper busy again itself: a quiescence check right after it cannot
    slip in before the woken thread resumes."""
    clock = VirtualClock(T0)
    resume = threading.Event()

    def worker() -> None:
        with clock.busy():
            clock.sleep(1)
            resume.wait(timeout=5)  # still busy: back at work after its wake

    thread = threading.Thread(target=worker)
    thread.start()
    assert clock.until_sleeping(1, timeout_s=5)
    clock.move_to(T0 + 1000)
    assert not clock.quiescent(timeout_s=0.05)
    resume.set()
    assert clock.quiescent(timeout_s=5)
    thread.join(timeout=5)


def test_it_is_the_clock_the_services_read_once_in_use() -> None:
    clock = VirtualClock(T0)
    before = times.use_clock(clock)
    try:
        assert times.now_ms() == T0
        clock.move_to(T0 + 60_000)
        assert times.utc_now() == times.from_ms(T0 + 60_000)
        times.sleep(0)  # no wait for none
    finally:
        times.use_clock(before)


def test_work_handed_over_is_busy_before_its_worker_starts_it() -> None:
    clock = VirtualClock(T0)
    start = threading.Event()
    clock.hand_over()
    assert not clock.quiescent(timeout_s=0.05)  # handed over, not started: not quiescent

    def worker() -> None:
        start.wait()
        with clock.busy(carried=True):
            clock.sleep(1)

    thread = threading.Thread(target=worker)
    thread.start()
    start.set()
    assert clock.until_sleeping(1, timeout_s=5)
    assert clock.quiescent(timeout_s=5)  # its one count went to sleep with it
    clock.move_to(T0 + 1000)
    thread.join(timeout=5)
    assert clock.quiescent(timeout_s=5)


def test_an_advance_whose_work_never_settles_answers_504_and_a_bad_body_400() -> None:
    from local.advance import with_clock_routes

    class Stalled:
        clock = VirtualClock(T0)

        def to(self, until_ms: int) -> tuple[int, int]:
            raise TimeoutError("work under way did not end or sleep within 120.0 s")

    handle = with_clock_routes(lambda event, context: {"statusCode": 404}, Stalled())  # type: ignore[arg-type]

    def post(body: str) -> dict[str, object]:
        return handle({"path": "/v1/test/clock:advance", "httpMethod": "POST", "body": body}, None)

    assert post('{"seconds": 60}')["statusCode"] == 504
    assert "clock_stalled" in str(post('{"seconds": 60}')["body"])
    refused = post('{"seconds": 60, "to": "2030-01-01T00:00:00Z"}')
    assert refused["statusCode"] == 400
    assert "exactly one" in str(refused["body"])
    assert handle({"path": "/v1/tasks", "httpMethod": "GET"}, None)["statusCode"] == 404  # the API's
