"""The tick scans only the shards with work (shared/services/firing/scan.py, ``Ticker``), on the
in-memory pipeline store (held to DynamoDB's contract) under a fake clock: an idle stack's tick
asks for no scan, a shard that gets a task is scanned from where the tick found it clean, and
nothing due is ever left unstaged, whatever the ticks and the writers do in between."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.domain.buckets import MINUTE_MS
from shared.domain.firing import Staged, Timing, writer_stages
from shared.domain.registration import new_task
from shared.domain.schedules import At
from shared.domain.tasks import HttpTarget, TaskSpec
from shared.domain.times import from_ms, to_ms
from shared.services.firing import Scanner, Ticker
from shared.services.firing.scan import PEEK_MINUTES
from tests.support.fakes import InMemoryTaskRepository
from tests.support.firing import FakeClock
from tests.support.pipeline_store import InMemoryPipelineStore

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
TIMING = Timing()
SHARDS = 4


@dataclass
class Requests:
    """The scanner's invocations: what the tick asked for, scanned at once."""

    scanner: Scanner | None = None
    asked: list[tuple[int, int | None]] = field(default_factory=list)

    def request(self, shards: Sequence[int], tick_ms: int, since: Mapping[int, int | None] | None = None) -> None:
        for shard in shards:
            start = (since or {}).get(shard)
            self.asked.append((shard, start))
            assert self.scanner is not None
            self.scanner.scan(shard, tick_ms, start)


@dataclass
class Staging:
    staged: list[Staged] = field(default_factory=list)

    def stage(self, occurrences: Sequence[Staged], now_ms: int) -> None:
        self.staged.extend(occurrences)


@dataclass
class World:
    clock: FakeClock
    repository: InMemoryTaskRepository
    store: InMemoryPipelineStore
    requests: Requests
    staging: Staging
    ticker: Ticker
    writes: list[dict[int, int]] = field(default_factory=list)

    def register(self, due_ms: int, shard: int) -> str:
        """A writer registers a one-shot task; it stages it itself when it is due before its now +
        look-ahead + guard (the API does: shared/services/tasks.py)."""
        spec = TaskSpec(At(from_ms(due_ms)), (HttpTarget("https://example.com/hook"),))
        task = new_task(spec, tenant="acme", now=from_ms(self.clock.now), shard=shard)
        staged_now = writer_stages(due_ms, self.clock.now, TIMING)
        self.repository.create(task, staged=staged_now)
        if staged_now:
            self.staging.stage([Staged(task.id, due_ms, "r")], self.clock.now)
        return task.id

    def staged_ids(self) -> set[str]:
        return {staged.task_id for staged in self.staging.staged}


def world(shards: int = SHARDS) -> World:
    clock = FakeClock(to_ms(NOW))
    repository = InMemoryTaskRepository(retention=timedelta(days=30))
    store = InMemoryPipelineStore(repository, retention_ms=30 * 86_400_000)
    staging = Staging()
    requests = Requests()
    requests.scanner = Scanner(store, staging, TIMING, clock=clock)
    ticker = Ticker(store, requests, TIMING, shards, clock=clock)
    built = World(clock, repository, store, requests, staging, ticker)
    clean = store.mark_clean

    def counted(until: dict[int, int]) -> None:
        built.writes.append(dict(until))
        clean(until)

    store.mark_clean = counted  # type: ignore[method-assign]
    return built


def test_the_first_tick_scans_every_shard_and_then_an_idle_minute_asks_for_none():
    w = world()
    assert w.ticker.tick() == [0, 1, 2, 3]  # no mark yet: each shard's first scan sets it
    assert w.writes == []
    w.clock.advance(MINUTE_MS)
    assert w.ticker.tick() == []
    end = w.clock.now + TIMING.look_ahead_ms
    assert w.writes == [dict.fromkeys(range(SHARDS), end)]  # one write: every shard clean to the window's end
    w.clock.advance(MINUTE_MS)
    assert w.ticker.tick() == []
    assert len(w.writes) == 2


def test_a_task_beyond_the_writers_window_gets_its_shard_scanned_from_where_the_tick_found_it_clean():
    w = world()
    w.ticker.tick()
    for _ in range(60):  # an hour idle: the marks stay, the clean item moves
        w.clock.advance(MINUTE_MS)
        w.ticker.tick()
    clean_to = w.writes[-1][2]
    due = w.clock.now + TIMING.look_ahead_ms + TIMING.guard_ms + 30_000  # not the writer's to stage
    task = w.register(due, shard=2)
    assert task not in w.staged_ids()
    w.requests.asked.clear()
    for _ in range(5):
        if task in w.staged_ids():
            break
        w.clock.advance(MINUTE_MS)
        w.ticker.tick()
    ((shard, since),) = w.requests.asked
    assert shard == 2
    assert since is not None
    assert since >= clean_to  # not from its hour-old mark
    assert w.clock.now <= due - TIMING.lead_ms  # staged in time
    assert w.store.watermarks[2].staged_until_ms is not None


def test_the_shards_furthest_behind_are_asked_for_first():
    """A scanner that ran out of time left its last shards' marks behind: at the next tick they
    lead every group (shared/adapters/scans.py deals the list round robin), instead of coming last again."""
    w = world()
    w.ticker.tick()  # every shard gets its mark
    w.clock.advance(MINUTE_MS)
    behind = w.store.watermarks[3].staged_until_ms
    for shard in (0, 1, 2):  # shards 0-2 scanned a minute on; 3 was left behind
        w.requests.scanner.scan(shard, w.clock.now)  # type: ignore[union-attr]
    for shard in range(SHARDS):  # something in every shard's next window (staged or not: busy)
        w.register(w.clock.now + TIMING.look_ahead_ms + 30_000, shard=shard)
    w.clock.advance(MINUTE_MS)
    asked = w.ticker.tick()
    assert sorted(asked) == [0, 1, 2, 3]
    assert asked[0] == 3
    assert behind is not None
    assert behind < w.store.watermarks[0].staged_until_ms  # type: ignore[operator]


def test_a_window_longer_than_the_peek_is_scanned_without_looking():
    w = world()
    w.ticker.tick()
    w.clock.advance(MINUTE_MS)
    w.ticker.tick()
    peeks: list[int] = []
    has_items = w.store.has_items

    def counting(shard: int, start: int, end: int) -> bool:
        peeks.append(shard)
        return has_items(shard, start, end)

    w.store.has_items = counting  # type: ignore[method-assign,assignment]
    w.clock.advance(PEEK_MINUTES * MINUTE_MS)  # ticks missed for minutes
    assert w.ticker.tick() == [0, 1, 2, 3]
    assert peeks == []


def test_a_stale_clean_map_written_late_only_widens_the_next_look():
    w = world()
    w.ticker.tick()
    w.clock.advance(MINUTE_MS)
    w.ticker.tick()
    older = dict(w.writes[-1])
    w.clock.advance(MINUTE_MS)
    w.ticker.tick()
    w.store.clean = older  # an earlier tick's write lands last
    due = w.clock.now + TIMING.look_ahead_ms + TIMING.guard_ms + 1_000
    task = w.register(due, shard=1)
    for _ in range(5):
        if task in w.staged_ids():
            break
        w.clock.advance(MINUTE_MS)
        w.ticker.tick()
    assert task in w.staged_ids()
    assert w.clock.now <= due - TIMING.lead_ms


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=SHARDS - 1),
            st.integers(min_value=1, max_value=12 * MINUTE_MS),  # when it is registered, from the start
            st.integers(min_value=0, max_value=6 * MINUTE_MS),  # how long after that it is due
        ),
        max_size=12,
    ),
    st.lists(st.booleans(), min_size=14, max_size=14),
    st.data(),
)
def test_after_every_tick_whatever_was_missed_everything_due_in_its_window_is_staged_once(tasks, ticks, data):
    """Minute ticks over 14 minutes, some missed (EventBridge gives no guarantee), writers
    registering at any moment, and each tick reading any version of ``W#clean`` ever written (an
    eventually consistent BatchGetItem may answer an older one; ticks racing may write them in any
    order): after each tick that runs at t, every task registered and due before t + look-ahead
    is staged, by its writer or a scan, and none twice."""
    w = world()
    read_marks = w.store.scan_marks

    def stale_marks(shards):
        marks, _ = read_marks(shards)
        versions = [{}, *w.writes]
        version = versions[data.draw(st.integers(min_value=0, max_value=len(versions) - 1), label="clean version")]
        return marks, {shard: ms for shard, ms in version.items() if shard in marks}

    w.store.scan_marks = stale_marks  # type: ignore[method-assign]
    start = w.clock.now
    pending = sorted((start + at, start + at + after, shard) for shard, at, after in tasks)
    due_of: dict[str, int] = {}
    for minute, ticking in enumerate(ticks):
        tick_at = start + minute * MINUTE_MS
        while pending and pending[0][0] < tick_at:
            at, due, shard = pending.pop(0)
            w.clock.now = at
            due_of[w.register(due, shard)] = due
        w.clock.now = tick_at
        if ticking or minute == 0:
            w.ticker.tick()
            window_end = tick_at + TIMING.look_ahead_ms
            missing = {task for task, due in due_of.items() if due < window_end} - w.staged_ids()
            assert not missing, [due_of[t] - start for t in missing]
    staged = [s.task_id for s in w.staging.staged]
    assert len(staged) == len(set(staged))
