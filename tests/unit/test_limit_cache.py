"""The trigger's copy of a tenant's limits (shared/services/limits.py, LimitCache): read by one
caller at a time, again after 45 s while the others keep using the copy, never used past a
minute; a forced refresh answers what was read after it was asked; tenants never share; and the
service's checks (the name, the numbers, the origin, at most MAX_LIMITS)."""

from __future__ import annotations

import threading

import pytest

from shared.domain.errors import TooManyLimits, ValidationFailed
from shared.domain.limits import Limit, LimitSpec
from shared.domain.tasks import HttpTarget, LambdaTarget
from shared.services.limits import LimitCache, LimitService, check_named_limits, named_limits
from tests.support.fakes import InMemoryLimits
from tests.support.threads import until_waiting

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.ms = 1_800_000_000_000

    def __call__(self) -> int:
        return self.ms


def names(limits: tuple[Limit, ...]) -> list[tuple[str, int]]:
    return [(limit.name, limit.version) for limit in limits]


def test_limits_are_read_again_after_45_s_and_a_change_applies_within_a_minute():
    store, clock = InMemoryLimits(), Clock()
    cache = LimitCache(store, clock)
    store.put("acme", "orders", LimitSpec(5), clock())
    assert names(cache.limits("acme")) == [("orders", 1)]
    store.put("acme", "orders", LimitSpec(10), clock())
    store.put("acme", "billing", LimitSpec(1), clock())
    clock.ms += 44_999
    assert names(cache.limits("acme")) == [("orders", 1)]  # the copy is still fresh
    assert store.reads == 1
    clock.ms += 1
    assert names(cache.limits("acme")) == [("billing", 1), ("orders", 2)]
    assert store.reads == 2
    store.delete("acme", "orders")
    clock.ms += 45_000
    assert names(cache.limits("acme")) == [("billing", 1)]


def test_a_tenant_without_limits_is_read_once_a_refresh_and_tenants_never_share():
    store, clock = InMemoryLimits(), Clock()
    cache = LimitCache(store, clock)
    store.put("acme", "orders", LimitSpec(5), clock())
    for _ in range(100):
        assert cache.limits("globex") == ()
    assert store.reads == 1
    assert names(cache.limits("acme")) == [("orders", 1)]
    assert cache.limits("globex") == ()
    assert store.reads == 2


def test_a_refresh_reads_at_once_and_its_answer_is_the_copy_from_then_on():
    store, clock = InMemoryLimits(), Clock()
    cache = LimitCache(store, clock)
    store.put("acme", "orders", LimitSpec(5), clock())
    assert names(cache.limits("acme")) == [("orders", 1)]
    store.put("acme", "orders", LimitSpec(6), clock())  # a booking meets version 2
    assert names(cache.refresh("acme")) == [("orders", 2)]
    assert names(cache.limits("acme")) == [("orders", 2)]
    assert store.reads == 2


class Held(InMemoryLimits):
    """Reads that wait until released, so that callers meet while one is under way."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()
        self.fail = False

    def for_tenant(self, tenant: str):  # type: ignore[no-untyped-def]
        self.entered.set()
        assert self.release.wait(5)
        if self.fail:
            self.reads += 1
            raise RuntimeError("DynamoDB unavailable")
        return super().for_tenant(tenant)


def callers(call, count: int) -> tuple[list[threading.Thread], list[object]]:  # type: ignore[no-untyped-def]
    got: list[object] = []

    def run() -> None:
        try:
            got.append(call("acme"))
        except RuntimeError as exc:
            got.append(exc)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    return threads, got


def test_callers_without_a_copy_wait_for_one_read_and_share_it():
    store, clock = Held(), Clock()
    cache = LimitCache(store, clock)
    store.put("acme", "orders", LimitSpec(5), clock())
    threads, got = callers(cache.limits, 8)
    assert store.entered.wait(5)
    until_waiting(threads)  # one reads, the other seven wait for its read
    store.release.set()
    for thread in threads:
        thread.join(5)
    assert store.reads == 1
    assert len(got) == 8
    assert all(answer is got[0] for answer in got)


def test_while_one_caller_reads_again_the_others_use_the_copy_at_once():
    store, clock = Held(), Clock()
    cache = LimitCache(store, clock)
    store.put("acme", "orders", LimitSpec(5), clock())
    store.release.set()
    copy = cache.limits("acme")
    store.release.clear()
    store.entered.clear()
    clock.ms += 50_000  # past the refresh, before the end of the minute
    refresher, _ = callers(cache.limits, 1)
    assert store.entered.wait(5)
    others = [cache.limits("acme") for _ in range(5)]  # would block if they waited for the read
    assert all(answer is copy for answer in others)
    store.release.set()
    refresher[0].join(5)
    assert store.reads == 2


def test_refreshes_asked_while_an_older_read_is_under_way_wait_for_it_then_share_one_new_read():
    store, clock = Held(), Clock()
    cache = LimitCache(store, clock)
    store.put("acme", "orders", LimitSpec(5), clock())
    reader, _ = callers(cache.limits, 1)  # a read under way...
    assert store.entered.wait(5)
    store.put("acme", "orders", LimitSpec(6), clock())  # ...that may have missed this put
    refreshers, got = callers(cache.refresh, 6)
    until_waiting(refreshers)
    store.release.set()
    reader[0].join(5)
    for thread in refreshers:
        thread.join(5)
    assert store.reads == 2  # the old read and one new one, for all six
    assert len(got) == 6
    assert all(isinstance(answer, tuple) and names(answer) == [("orders", 2)] for answer in got)


def test_a_failed_read_reaches_every_waiting_caller_and_is_not_kept():
    store, clock = Held(), Clock()
    cache = LimitCache(store, clock)
    store.fail = True
    threads, got = callers(cache.limits, 4)
    assert store.entered.wait(5)
    until_waiting(threads)
    store.release.set()
    for thread in threads:
        thread.join(5)
    assert len(got) == 4
    assert all(isinstance(answer, RuntimeError) for answer in got)
    assert store.reads == 1
    store.fail = False
    assert cache.limits("acme") == ()  # the next caller reads again
    assert store.reads == 2


def test_a_copy_is_never_used_past_its_minute():
    store, clock = InMemoryLimits(), Clock()
    cache = LimitCache(store, clock, refresh_ms=60_000)
    store.put("acme", "orders", LimitSpec(5), clock())
    first = cache.limits("acme")
    clock.ms += 60_000
    assert cache.limits("acme") is not first
    assert store.reads == 2


# --- the service ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "spec", "field"),
    [
        ("Orders", LimitSpec(1), "name"),
        ("", LimitSpec(1), "name"),
        ("orders", LimitSpec(0), "per_second"),
        ("orders", LimitSpec(1e-300), "per_second"),
        ("orders", LimitSpec(float("nan")), "per_second"),
        ("orders", LimitSpec(True), "per_second"),
        ("orders", LimitSpec(10_000.5), "per_second"),
        ("orders", LimitSpec(1, burst=0), "burst"),
        ("orders", LimitSpec(1, max_in_flight=10_001), "max_in_flight"),
        ("orders", LimitSpec(1, origin="https://x.example.com/path"), "origin"),
    ],
)
def test_the_service_refuses_what_the_api_refuses(name, spec, field):
    service = LimitService(InMemoryLimits())
    with pytest.raises(ValidationFailed) as refused:
        service.put("acme", name, spec)
    assert refused.value.details[0].field == field


def test_the_service_normalises_the_origin_and_bounds_a_tenants_limits(monkeypatch):
    import shared.services.limits

    monkeypatch.setattr(shared.services.limits, "MAX_LIMITS", 2)
    service = LimitService(InMemoryLimits(), clock=Clock())
    assert service.put("acme", "a", LimitSpec(1, origin="HTTP://X.example.com:80")).origin == "http://x.example.com"
    service.put("acme", "b", LimitSpec(1))
    with pytest.raises(TooManyLimits):
        service.put("acme", "c", LimitSpec(1))
    assert service.put("acme", "b", LimitSpec(2)).version == 2
    service.put("globex", "c", LimitSpec(1))  # another tenant's count


def test_named_limits_are_the_http_targets_own_and_a_target_left_as_it_was_is_not_checked():
    orders = HttpTarget("https://x.example.com/", limit="orders")
    other = HttpTarget("https://y.example.com/", limit="gone")
    targets = (orders, LambdaTarget("arn:aws:lambda:us-east-1:123456789012:function:f"), other)
    assert named_limits(targets, True) == {"orders": "targets[0].http.limit", "gone": "targets[2].http.limit"}
    assert named_limits((orders,), False) == {"orders": "target.http.limit"}
    assert named_limits(targets, True, unchanged=(orders, orders, other)) == {}
    known = [Limit("acme", "orders", 1)]
    check_named_limits({"orders": "target.http.limit"}, known)
    with pytest.raises(ValidationFailed) as refused:
        check_named_limits(named_limits(targets, True), known)
    assert refused.value.details[0].field == "targets[2].http.limit"
