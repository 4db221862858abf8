"""The port of backfills (shared/services/backfills.py): their records, the marks of the
occurrences they took, and the extra runs that fire them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from shared.domain.backfills import Backfill, LeftOut, Progress
from shared.domain.tasks import Page, Task


class BackfillStore(Protocol):
    def fired_and_taken(self, task_id: str, from_ms: int, to_ms: int) -> tuple[set[int], set[int], dict[int, str]]:
        """Of the task's occurrences scheduled in ``[from_ms, to_ms)``, by their ms: those the task
        fired itself (its run on record, not skipped), those a backfill holds (its run fired, fires
        or may), and those a backfill's run gave up without a call (each with that run's id: a new
        backfill may take it over)."""
        ...

    def start(self, backfill: Backfill, runs: Sequence[Task], free: Mapping[int, str]) -> dict[int, LeftOut]:
        """Store the backfill, then each occurrence's mark, its extra run (``runs``, in the plan's
        order; ``schedule.at`` the occurrence) and its place in the task's runs, each occurrence in
        one transaction conditional on nobody holding it (``free``: held by the run named there,
        which ended without a call) nor the task having fired it, and on the backfill not being
        cancelled. The occurrences that could not be taken, and why."""
        ...

    def get(self, task_id: str, backfill_id: str) -> Backfill:
        """The backfill (``BackfillNotFound``), without its progress."""
        ...

    def list(self, task_id: str, *, limit: int, cursor: str | None) -> Page[Backfill]:
        """The task's backfills, newest first."""
        ...

    def progress(self, backfill: Backfill) -> Progress:
        """Where its runs stand, read from their items."""
        ...

    def cancel(self, backfill: Backfill, now_ms: int) -> Backfill:
        """Cancel it: none of its runs not yet fired fires from now on (their occurrences' marks
        are given back, so a later backfill may take them); one being called finishes. Cancelling
        twice is harmless."""
        ...
