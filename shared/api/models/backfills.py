"""``POST /v1/tasks/{task_id}/backfill``: the past window and the pace (docs/backfill.md)."""

from __future__ import annotations

from pydantic import Field

from shared.api.types import Instant, Model
from shared.domain import backfills as bf


class BackfillIn(Model):
    """Every occurrence of the task's schedule in ``[from, to)``, fired oldest first, at most
    ``per_second`` a second."""

    start: Instant = Field(
        alias="from", description=f"The window's start, included (at most {bf.MAX_AGE.days} days back)."
    )
    end: Instant = Field(alias="to", description="The window's end, excluded; not after now.")
    per_second: float = Field(
        strict=True,
        ge=bf.MIN_PER_SECOND,
        le=bf.MAX_PER_SECOND,
        description=f"At most this many occurrences fire in any second ({bf.MIN_PER_SECOND} to {bf.MAX_PER_SECOND}; "
        "fractions are fine: 0.5 is one every 2 s).",
    )
