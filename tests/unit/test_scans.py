"""The tick's scan requests as asynchronous invocations of the scanner (shared/adapters/scans.py), and the
scanner's handling of one (functions/scanner/handler.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import given
from hypothesis import strategies as st

from shared.adapters.invoke import ACCEPTED, MAX_ASYNC_PAYLOAD_BYTES
from shared.adapters.scans import ScanInvoker, groups
from shared.domain.errors import StorageUnavailable
from shared.domain.ids import MAX_SHARDS
from tests.support.events import FakeLambdaContext

pytestmark = pytest.mark.unit

TICK = 1_767_225_600_000


class Lambda:
    """Lambda's Invoke as the invoker calls it; ``refuse``: the first shard of each group refused."""

    def __init__(self, refuse: frozenset[int] = frozenset(), status: int = ACCEPTED) -> None:
        self.calls: list[dict[str, Any]] = []
        self.refuse, self.status = refuse, status

    def invoke(self, **call: Any) -> dict[str, Any]:
        event = json.loads(call["Payload"])
        if event["requests"][0]["shard"] in self.refuse:
            raise ClientError({"Error": {"Code": "TooManyRequestsException", "Message": "Rate exceeded"}}, "Invoke")
        self.calls.append({**call, "Payload": event})
        return {"StatusCode": self.status}


@given(st.lists(st.integers(0, MAX_SHARDS - 1), unique=True, max_size=200), st.integers(1, 40))
def test_the_busy_shards_are_dealt_into_at_most_n_groups_none_empty_each_in_order(shards: list[int], n: int) -> None:
    dealt = groups(shards, n)
    assert len(dealt) == min(len(shards), n)
    assert all(dealt)
    assert sorted(shard for group in dealt for shard in group) == sorted(shards)
    for group in dealt:  # each group keeps the order the tick found them in
        assert group == sorted(group, key=shards.index)
    assert [group[0] for group in dealt] == shards[: len(dealt)]  # the first found start first


def test_each_group_is_one_asynchronous_invocation_carrying_tick_and_since() -> None:
    client = Lambda()
    ScanInvoker("sundial-scanner", 2, client=lambda: client).request([4, 7, 9], TICK, {4: TICK - 60_000, 9: None})
    assert [call["FunctionName"] for call in client.calls] == ["sundial-scanner"] * 2
    assert {call["InvocationType"] for call in client.calls} == {"Event"}
    assert [call["Payload"] for call in client.calls] == [
        {"requests": [{"shard": 4, "tick_ms": TICK, "since_ms": TICK - 60_000}, {"shard": 9, "tick_ms": TICK}]},
        {"requests": [{"shard": 7, "tick_ms": TICK}]},
    ]


def test_sixteen_shards_at_the_default_sixteen_invocations_are_one_each() -> None:
    client = Lambda()
    ScanInvoker("scanner", 16, client=lambda: client).request(list(range(16)), TICK)
    assert [[r["shard"] for r in call["Payload"]["requests"]] for call in client.calls] == [[i] for i in range(16)]


def test_a_refused_invocation_leaves_the_others_sent_and_fails_the_tick() -> None:
    """The tick fails (and keeps nothing clean); the refused group's marks did not move, so the
    next tick asks for them again."""
    client = Lambda(refuse=frozenset({1}))
    with pytest.raises(StorageUnavailable, match=r"shards \[1, 4\].*TooManyRequestsException"):
        ScanInvoker("scanner", 3, client=lambda: client).request([0, 1, 2, 3, 4], TICK)
    assert [[r["shard"] for r in call["Payload"]["requests"]] for call in client.calls] == [[0, 3], [2]]


def test_an_invocation_lambda_did_not_accept_fails_the_tick() -> None:
    client = Lambda(status=200)
    with pytest.raises(StorageUnavailable, match="answered 200"):
        ScanInvoker("scanner", 2, client=lambda: client).request([0], TICK)


def test_every_shard_of_the_largest_deployment_fits_one_asynchronous_event() -> None:
    """Lambda refuses an asynchronous event over 256 KB (RequestEntityTooLargeException): all
    1,024 shards in one group, with the widest times, stay well below."""
    client = Lambda()
    widest = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z
    ScanInvoker("scanner", 1, client=lambda: client).request(
        list(range(MAX_SHARDS)), widest, dict.fromkeys(range(MAX_SHARDS), widest)
    )
    (call,) = client.calls
    assert len(json.dumps(call["Payload"], separators=(",", ":")).encode()) < MAX_ASYNC_PAYLOAD_BYTES / 3


# --- the scanner's handler ------------------------------------------------------------------------


class Scans:
    """The scanner service as the handler calls it: each scan takes ``seconds`` of the context's
    time; ``failing`` shards raise."""

    def __init__(self, context: FakeLambdaContext, seconds: float = 0, failing: frozenset[int] = frozenset()) -> None:
        self.context, self.seconds, self.failing = context, seconds, failing
        self.scanned: list[tuple[int, int | None, int | None]] = []

    def scan(self, shard: int, tick_ms: int | None = None, since_ms: int | None = None) -> int:
        self.context.started -= self.seconds  # the clock the context counts down from moves on
        self.scanned.append((shard, tick_ms, since_ms))
        if shard in self.failing:
            raise RuntimeError(f"shard {shard}: the table refused")
        return 2


def run_scanner(monkeypatch: pytest.MonkeyPatch, scans: Scans, event: dict[str, Any]) -> Any:
    from functions.scanner import handler as module

    monkeypatch.setattr(module, "scanner", lambda: scans)
    return module.handler(event, scans.context)


def test_the_scanner_scans_its_shards_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    scans = Scans(FakeLambdaContext(timeout_s=60))
    event = {"requests": [{"shard": 5, "tick_ms": TICK, "since_ms": 1}, {"shard": 2, "tick_ms": TICK}]}
    assert run_scanner(monkeypatch, scans, event) == {"staged": 4, "scanned": [5, 2], "left": []}
    assert scans.scanned == [(5, TICK, 1), (2, TICK, None)]


def test_a_scan_starts_only_with_ten_seconds_of_the_timeout_left(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each scan here takes 26 s of a 60 s timeout: two start (with 60 and 34 s left); with 8 s
    left the third does not, and it and the fourth are left to the next tick."""
    scans = Scans(FakeLambdaContext(timeout_s=60), seconds=26)
    event = {"requests": [{"shard": shard} for shard in range(4)]}
    assert run_scanner(monkeypatch, scans, event) == {"staged": 4, "scanned": [0, 1], "left": [2, 3]}


def test_a_failed_scan_fails_the_invocation_after_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lambda runs the event again: the shards already scanned find their marks past the tick."""
    from functions.scanner.handler import ScanFailed

    scans = Scans(FakeLambdaContext(timeout_s=60), failing=frozenset({1}))
    with pytest.raises(ScanFailed, match=r"shards \[1\]"):
        run_scanner(monkeypatch, scans, {"requests": [{"shard": 0}, {"shard": 1}, {"shard": 2}]})
    assert [shard for shard, _, _ in scans.scanned] == [0, 1, 2]
