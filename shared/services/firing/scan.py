"""Staging: the tick asks for a scan of each bucket shard that has something in its window, and
a scan of one shard puts what it has due on the delay queues (docs/design.md, 2.2)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from shared.domain.buckets import MINUTE_MS
from shared.domain.errors import StorageUnavailable
from shared.domain.firing import Timing, scan_window
from shared.domain.times import now_ms
from shared.observability import logger
from shared.services.ports.pipeline import PipelineStore, ScanRequester, Stager, StrandedQueue

PEEK_MINUTES = 5
"""A shard whose window spans more minute buckets than this is scanned without looking first (a
tick missed for minutes: the scan catches up, at most ``max_catch_up_ms`` at once)."""
PEEKS_AT_ONCE = 8


@dataclass
class Ticker:
    """The minute tick: a scan request for each shard with work, none for an empty one.

    An empty shard's scan cost two writes (its lease and its mark), a scan request sent,
    received and deleted, and an invocation; sixteen of them a minute were most of an idle
    stack's bill (bench/bill.py). The requests are asynchronous invocations of the scanner now
    (shared/adapters/scans.py). The tick reads every mark with one BatchGetItem and looks at
    each shard's window past its mark, ``[max(mark, clean), now + look_ahead)``, with a Query of
    at most one item per minute bucket. A shard with anything there (staged or not: the scan
    decides) is scanned from that start; a shard with nothing is *clean* up to the window's end,
    which the tick keeps for all shards in one item (``W#clean``, one write a minute).

    Why a clean shard loses nothing: whatever is written later into a window the tick found
    empty is due before its writer's now + look_ahead + guard, and its writer stages it itself
    (``writer_stages``), as for a window a scan has passed; the tick's look is earlier than the
    scan it replaces, so the guard covers the same writes in flight. Every value the tick keeps
    is such a statement and stays true, so neither two ticks racing (EventBridge may deliver one
    twice) nor an eventually consistent read of an older version can make the tick skip work.
    The looks are eventually consistent reads like the scan's own Query, and the same guard
    covers them. (The local runtime's moto reads are always current: it models no read lag on
    the table, so tests/unit/test_ticker.py checks stale and racing clean maps directly.)

    Then, with ``stranded``, the tick looks at the stranded queue and asks for one drain of it when
    messages wait there (shared/adapters/stranded.py): whatever the scans did, and a failure of either
    fails neither the tick nor its scans (the next tick looks again)."""

    store: PipelineStore
    requests: ScanRequester
    timing: Timing
    shards: int
    clock: Callable[[], int] = now_ms
    stranded: StrandedQueue | None = None

    def tick(self) -> list[int]:
        """Ask for the scans this minute needs; returns the shards asked for."""
        try:
            return self._scan_requests()
        finally:
            self._look_at_stranded()

    def _look_at_stranded(self) -> None:
        """One drain asked for when the stranded queue holds messages; a failure is logged."""
        if self.stranded is None:
            return
        try:
            if self.stranded.waiting():
                self.stranded.drain()
        except StorageUnavailable as exc:
            logger.warning("the stranded queue: left to the next tick", extra={"error": str(exc)})

    def _scan_requests(self) -> list[int]:
        now = self.clock()
        end = now + self.timing.look_ahead_ms
        marks, clean = self.store.scan_marks(range(self.shards))
        starts = {shard: _later(mark, clean.get(shard)) for shard, mark in marks.items()}
        with ThreadPoolExecutor(max_workers=min(PEEKS_AT_ONCE, self.shards)) as pool:
            busy = dict(pool.map(lambda shard: (shard, self._busy(starts[shard], end, shard)), starts))
        # The furthest behind first (a shard never scanned before any): every group starts with
        # them, so a shard a scanner ran out of time for is not last again at the next tick.
        wanted = sorted((shard for shard, is_busy in busy.items() if is_busy), key=lambda shard: _behind(starts[shard]))
        if wanted:
            self.requests.request(wanted, now, {shard: starts[shard] for shard in wanted})
        found_clean = {
            shard: end
            for shard, is_busy in busy.items()
            if not is_busy and (start := starts[shard]) is not None and start < end
        }
        if found_clean:
            self.store.mark_clean({**clean, **found_clean})
        return wanted

    def _busy(self, start: int | None, end: int, shard: int) -> bool:
        if start is None:
            return True  # never scanned: its first scan sets its mark
        if start >= end:
            return False
        if (end - start) // MINUTE_MS + 1 > PEEK_MINUTES:
            return True
        return self.store.has_items(shard, start, end)


def _behind(start: int | None) -> tuple[bool, int]:
    """Order shards by how far behind their window starts: never scanned first, then oldest."""
    return (start is not None, start or 0)


def _later(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


SCAN_LEASE_MS = 50_000
"""A scan holds its shard this long at most (the scanner function's timeout is 60 s)."""


@dataclass
class Scanner:
    store: PipelineStore
    stager: Stager
    timing: Timing
    clock: Callable[[], int] = now_ms

    def scan(self, shard: int, tick_ms: int | None = None, since_ms: int | None = None) -> int:
        """Stage what ``shard`` has due from its mark to now + look-ahead; returns how many.

        One scan of a shard at a time (a lease on its mark); a request whose tick is already
        covered by the mark (requests that queued up behind a slow scan) does nothing.
        ``since_ms``: where the tick found the shard clean up to (:class:`Ticker`); the scan
        starts there when its mark is earlier."""
        now = self.clock()
        taken = self.store.begin_scan(shard, now, SCAN_LEASE_MS)
        if taken is None:
            return 0
        mark, lease = taken
        mark = _later(mark, since_ms)
        if tick_ms is not None and mark is not None and mark >= tick_ms + self.timing.look_ahead_ms:
            self.store.end_scan(shard, lease, mark)
            return 0
        start, end = scan_window(mark, now, self.timing)
        due = self.store.due(shard, start, end)
        self.stager.stage(due, now)
        if not self.store.end_scan(shard, lease, end):
            logger.warning("a scan outlived its lease", extra={"shard": shard})
        return len(due)


SCAN_RESERVE_MS = 10_000
"""A shard's scan starts only while this much of the scanner's timeout (60 s) is left: a scan cut
off by the timeout leaves its shard leased until the lease runs out. A shard not started is asked
for again by the next tick (its mark did not move)."""

ShardRequest = tuple[int, int | None, int | None]
"""(shard, the tick's time, where the tick found it clean): one shard of a scan invocation."""


@dataclass(frozen=True)
class GroupScan:
    staged: int
    scanned: list[int]
    failed: list[int]
    left: list[int]
    """Not started: too little of the invocation's time was left."""


def scan_group(
    scan: Callable[[int, int | None, int | None], int],
    requests: Sequence[ShardRequest],
    time_left_ms: Callable[[], int],
    reserve_ms: int = SCAN_RESERVE_MS,
) -> GroupScan:
    """The shards of one scanner invocation, one after another, each while ``reserve_ms`` of the
    invocation is left; a shard whose scan fails is logged and the others go on (the invocation
    then fails, and Lambda runs it again: the shards already scanned find their marks past the
    tick and do nothing)."""
    staged, scanned, failed = 0, [], []
    for shard, tick_ms, since_ms in requests:
        if time_left_ms() < reserve_ms:
            break
        try:
            staged += scan(shard, tick_ms, since_ms)
        except Exception:
            logger.exception("scan failed", extra={"shard": shard})
            failed.append(shard)
        else:
            scanned.append(shard)
    left = [shard for shard, _, _ in requests[len(scanned) + len(failed) :]]
    return GroupScan(staged, scanned, failed, left)
