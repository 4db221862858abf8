"""The event loop: a heap of (time, sequence, action). Time is in milliseconds."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any


class Loop:
    def __init__(self, start_ms: float = 0.0) -> None:
        self.now = start_ms
        self._heap: list[tuple[float, int, Callable[..., None], tuple[Any, ...]]] = []
        self._seq = 0

    def at(self, time_ms: float, action: Callable[..., None], *args: Any) -> None:
        """Run ``action(*args)`` at ``time_ms`` (never before now: the past is the present)."""
        heapq.heappush(self._heap, (max(time_ms, self.now), self._seq, action, args))
        self._seq += 1

    def run(self, until_ms: float = float("inf")) -> None:
        heap = self._heap
        while heap and heap[0][0] <= until_ms:
            time_ms, _, action, args = heapq.heappop(heap)
            self.now = time_ms
            action(*args)
        self.now = max(self.now, until_ms) if until_ms != float("inf") else self.now

    def __len__(self) -> int:
        return len(self._heap)
