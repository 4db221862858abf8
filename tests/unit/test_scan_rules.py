"""The tick's and a scan's rules at their edges (shared/services/firing/scan.py), over a scripted
store that keeps every read and write it is asked for: where each shard's look starts (the later of
its mark and where a tick found it clean), which windows are looked at and which are scanned
without looking, which shards are marked clean, in which order scans are asked for, and when a
scan request finds its tick covered already. Written for the survivors of `make mutation`: each
expected value is worked out from the rule's words (the ``Ticker`` docstring)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import pytest

from shared.domain.buckets import MINUTE_MS
from shared.domain.firing import Staged, Timing
from shared.services.firing import Scanner, Ticker

pytestmark = pytest.mark.unit

NOW = 1_800_000_000_000
TIMING = Timing()
END = NOW + TIMING.look_ahead_ms


@dataclass
class Store:
    """Each shard's mark, the clean map, the due times each shard holds; what was read and written."""

    marks: dict[int, int | None] = field(default_factory=dict)
    clean: dict[int, int] = field(default_factory=dict)
    items: dict[int, list[int]] = field(default_factory=dict)
    looked: list[tuple[int, int, int]] = field(default_factory=list)
    cleaned: list[dict[int, int]] = field(default_factory=list)
    scanned: list[tuple[int, int, int]] = field(default_factory=list)
    ended: list[tuple[int, int, int]] = field(default_factory=list)

    def scan_marks(self, shards: Iterable[int]) -> tuple[dict[int, int | None], dict[int, int]]:
        return {shard: self.marks.get(shard) for shard in shards}, dict(self.clean)

    def has_items(self, shard: int, start_ms: int, end_ms: int) -> bool:
        self.looked.append((shard, start_ms, end_ms))
        return any(start_ms <= due < end_ms for due in self.items.get(shard, []))

    def mark_clean(self, clean: Mapping[int, int]) -> None:
        self.cleaned.append(dict(clean))

    def begin_scan(self, shard: int, now_ms: int, lease_ms: int) -> tuple[int | None, int]:
        return self.marks.get(shard), 7

    def due(self, shard: int, start_ms: int, end_ms: int) -> list[Staged]:
        self.scanned.append((shard, start_ms, end_ms))
        return [Staged(f"t{due}", due, f"r{due}") for due in self.items.get(shard, []) if start_ms <= due < end_ms]

    def end_scan(self, shard: int, lease: int, mark: int) -> bool:
        self.ended.append((shard, lease, mark))
        return True


@dataclass
class Asked:
    requests: list[tuple[list[int], int, dict[int, int | None]]] = field(default_factory=list)
    staged: list[tuple[list[Staged], int]] = field(default_factory=list)

    def request(self, shards: Sequence[int], tick_ms: int, since: Mapping[int, int | None] | None = None) -> None:
        self.requests.append((list(shards), tick_ms, dict(since or {})))

    def stage(self, occurrences: Sequence[Staged], now_ms: int) -> None:
        self.staged.append((list(occurrences), now_ms))


def tick(store: Store, shards: int) -> tuple[list[int], Asked]:
    asked = Asked()
    ticker = Ticker(store, asked, TIMING, shards, clock=lambda: NOW)  # type: ignore[arg-type]
    return ticker.tick(), asked


def test_each_shard_is_looked_at_from_the_later_of_its_mark_and_its_clean_mark_and_the_empty_marked_clean() -> None:
    store = Store(
        marks={0: NOW - 10_000, 1: NOW - 50_000, 2: NOW - 20_000},
        clean={0: NOW + 30_000, 1: NOW - 60_000},  # shard 1's clean mark is older than its mark
        items={2: [NOW + 5_000]},
    )
    wanted, asked = tick(store, 3)
    assert store.looked == [(0, NOW + 30_000, END), (1, NOW - 50_000, END), (2, NOW - 20_000, END)]
    assert wanted == [2]
    assert asked.requests == [([2], NOW, {2: NOW - 20_000})]  # scanned from its start, at this tick's time
    assert store.cleaned == [{0: END, 1: END}]  # the busy shard is not marked clean


def test_a_shard_whose_look_would_start_at_the_windows_end_is_neither_looked_at_nor_marked_clean() -> None:
    store = Store(marks={0: END, 1: END + 1, 2: NOW}, clean={3: NOW})
    wanted, asked = tick(store, 3)
    assert (wanted, asked.requests) == ([], [])
    assert store.looked == [(2, NOW, END)]
    assert store.cleaned == [{3: NOW, 2: END}]  # the clean map's other shards kept as they were


def test_a_window_of_up_to_five_minute_buckets_is_looked_at_and_a_longer_one_scanned_without_looking() -> None:
    four_and_a_half = END - 4 * MINUTE_MS - MINUTE_MS // 2  # spans 5 buckets at most: looked at
    five = END - 5 * MINUTE_MS  # spans 6 buckets: scanned at once
    store = Store(marks={0: four_and_a_half, 1: five})
    wanted, _ = tick(store, 2)
    assert store.looked == [(0, four_and_a_half, END)]
    assert wanted == [1]


def test_never_scanned_shards_are_asked_for_first_then_the_furthest_behind() -> None:
    store = Store(marks={0: END - 10 * MINUTE_MS, 1: None, 2: END - 20 * MINUTE_MS, 3: None})
    wanted, asked = tick(store, 4)
    assert wanted == [1, 3, 2, 0]
    assert asked.requests[0][2] == {1: None, 3: None, 2: END - 20 * MINUTE_MS, 0: END - 10 * MINUTE_MS}


def test_a_never_scanned_shard_with_a_clean_mark_is_looked_at_from_it() -> None:
    store = Store(marks={0: None}, clean={0: NOW - 1_000})
    wanted, _ = tick(store, 1)
    assert (wanted, store.looked) == ([], [(0, NOW - 1_000, END)])


def scan(store: Store, tick_ms: int | None, since_ms: int | None) -> tuple[int, Asked]:
    asked = Asked()
    staged = Scanner(store, asked, TIMING, clock=lambda: NOW).scan(0, tick_ms, since_ms)  # type: ignore[arg-type]
    return staged, asked


def test_a_scan_starts_at_the_later_of_its_mark_and_the_ticks_clean_mark_and_stages_as_of_now() -> None:
    store = Store(marks={0: NOW - 30_000}, items={0: [NOW - 40_000, NOW - 20_000, NOW + 10_000]})
    staged, asked = scan(store, NOW, NOW - 60_000)  # the tick's clean mark is older: the mark wins
    assert store.scanned == [(0, NOW - 30_000, END)]
    assert (staged, [[s.due_ms for s in batch] for batch, _ in asked.staged]) == (2, [[NOW - 20_000, NOW + 10_000]])
    assert [now for _, now in asked.staged] == [NOW]
    assert store.ended == [(0, 7, END)]
    store.scanned.clear()
    scan(store, NOW, NOW - 10_000)  # a later clean mark wins
    assert store.scanned == [(0, NOW - 10_000, END)]


def test_a_scan_request_whose_tick_the_mark_covers_already_does_nothing() -> None:
    store = Store(marks={0: NOW - MINUTE_MS + TIMING.look_ahead_ms}, items={0: [NOW + 100_000]})
    staged, asked = scan(store, NOW - MINUTE_MS, None)  # a request queued behind a slow scan
    assert (staged, store.scanned, asked.staged) == (0, [], [])
    assert store.ended == [(0, 7, NOW - MINUTE_MS + TIMING.look_ahead_ms)]  # its lease given back
    staged, _ = scan(store, NOW - MINUTE_MS + 1, None)  # a mark a millisecond short: scanned
    assert (staged, len(store.scanned)) == (1, 1)
    staged, _ = scan(store, None, None)  # no tick (a recovering trigger's scan): always scanned
    assert (staged, len(store.scanned)) == (1, 2)
