"""Staging: a scan of one bucket shard puts what it has due on the delay queues (docs/design.md, 2.2)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from shared.domain.firing import Timing, scan_window
from shared.domain.times import now_ms
from shared.observability import logger
from shared.services.ports import PipelineStore, Stager

SCAN_LEASE_MS = 50_000
"""A scan holds its shard this long at most (the scanner function's timeout is 60 s)."""


@dataclass
class Scanner:
    store: PipelineStore
    stager: Stager
    timing: Timing
    clock: Callable[[], int] = now_ms

    def scan(self, shard: int, tick_ms: int | None = None) -> int:
        """Stage what ``shard`` has due from its mark to now + look-ahead; returns how many.

        One scan of a shard at a time (a lease on its mark); a request whose tick is already
        covered by the mark (requests that queued up behind a slow scan) does nothing."""
        now = self.clock()
        taken = self.store.begin_scan(shard, now, SCAN_LEASE_MS)
        if taken is None:
            return 0
        mark, lease = taken
        if tick_ms is not None and mark is not None and mark >= tick_ms + self.timing.look_ahead_ms:
            self.store.end_scan(shard, lease, mark)
            return 0
        start, end = scan_window(mark, now, self.timing)
        due = self.store.due(shard, start, end)
        self.stager.stage(due, now)
        if not self.store.end_scan(shard, lease, end):
            logger.warning("a scan outlived its lease", extra={"shard": shard})
        return len(due)
