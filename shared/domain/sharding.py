"""How a job's levels are split into shards (docs/jobs.md, section 3). Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from shared.domain.errors import ValidationFailed

T = TypeVar("T")

EXECUTION_HISTORY_EVENTS = 25_000
"""A Standard execution's history holds at most this many events ("Step Functions service
quotas"); past it the execution fails. A job's levels and shards are inline Maps, whose every
iteration's events go into the job's one execution."""
SERVICE_ERROR_RETRIES = 4
"""Retries of a job step that Lambda itself failed (throttled, its service erring, an unknown
error: infra/jobs.py's first retrier), with backoff."""
PROCESSOR_RETRIES = 2
"""Retries of a step whose processor answered something worth retrying (``ProcessorRetryable``)."""
TASK_ATTEMPTS = 1 + SERVICE_ERROR_RETRIES + PROCESSOR_RETRIES
"""The most attempts of one Lambda task state (each retrier counts on its own)."""


def worst_history_events(shards: int, levels: int, attempts: int = TASK_ATTEMPTS) -> int:
    """The most events a job's execution can write: a task state enters and exits (2) and each
    attempt is scheduled, started and ends (3); a shard is an iteration (started, ended) around its
    task; a level is an iteration of the levels Map around the shards Map (entered, started, ended,
    exited); besides, the execution's start and end, the levels Map, pre and post (or the fail
    step), and the final state."""
    task = 2 + 3 * attempts
    return 2 + 4 + 2 * task + 2 + levels * (2 + 4) + shards * (2 + task)


MAX_LEVELS = 100
"""The most priority levels of one job (its data's, or pre's answer's): each level is an iteration
of the levels Map, shards or none."""
MAX_SHARDS_PER_JOB = 800
"""The most shards of one job: with :data:`MAX_LEVELS` levels and every step retried to the end,
``worst_history_events(800, 100)`` is 20,654, inside an execution's 25,000 with room for events
this count does not foresee (docs/jobs.md, section 2). Larger jobs would need a Distributed Map,
whose iterations are child executions with histories of their own."""
MAX_SHARDS_PER_LEVEL = MAX_SHARDS_PER_JOB
"""One level's shards are bounded by the job's."""


@dataclass(frozen=True)
class Sharding:
    min_items_per_shard: int = 1
    max_items_per_shard: int = 100
    max_shards: int = 20

    def __post_init__(self) -> None:
        for name in ("min_items_per_shard", "max_items_per_shard", "max_shards"):
            if getattr(self, name) < 1:
                raise ValidationFailed.on(f"sharding.{name}", "must be at least 1")
        if self.min_items_per_shard > self.max_items_per_shard:
            raise ValidationFailed.on(
                "sharding.min_items_per_shard",
                f"must not exceed max_items_per_shard ({self.max_items_per_shard})",
            )


def shard_count(items: int, rules: Sharding, cap: int = MAX_SHARDS_PER_LEVEL) -> int:
    """How many shards a level of ``items`` items gets: as many as the bounds allow, every shard
    at most ``max_items_per_shard`` (which wins over the minimum when both cannot hold)."""
    if items <= 0:
        return 0
    limit = min(rules.max_shards, cap)
    fewest = -(-items // rules.max_items_per_shard)
    if fewest > limit:
        raise ValidationFailed.on(
            "sharding.max_shards",
            f"{items} items at most {rules.max_items_per_shard} per shard need {fewest} shards; "
            f"at most {limit} are allowed",
        )
    most = max(1, items // rules.min_items_per_shard)
    return max(fewest, min(most, limit))


def split(items: Sequence[T], count: int) -> list[list[T]]:
    """``items`` in order over ``count`` shards whose sizes differ by at most one (the first
    ``len(items) % count`` hold one more)."""
    if count <= 0:
        if items:
            raise ValueError("items need at least one shard")
        return []
    size, extra = divmod(len(items), count)
    shards: list[list[T]] = []
    start = 0
    for index in range(count):
        end = start + size + (1 if index < extra else 0)
        shards.append(list(items[start:end]))
        start = end
    return shards


def plan(levels: Sequence[Sequence[T]], rules: Sharding, cap: int = MAX_SHARDS_PER_LEVEL) -> list[list[list[T]]]:
    """Every level split into its shards, first level first; a job over the per-job cap is refused."""
    if len(levels) > MAX_LEVELS:
        raise ValidationFailed.on("data", f"{len(levels)} levels; a job may have at most {MAX_LEVELS}")
    planned = [split(level, shard_count(len(level), rules, cap)) for level in levels]
    total = sum(len(level) for level in planned)
    if total > MAX_SHARDS_PER_JOB:
        raise ValidationFailed.on(
            "sharding", f"the levels need {total} shards in all; a job may have at most {MAX_SHARDS_PER_JOB}"
        )
    return planned
