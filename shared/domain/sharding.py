"""How a job's levels are split into shards (docs/jobs.md, section 3). Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from shared.domain.errors import ValidationFailed

T = TypeVar("T")

MAX_SHARDS_PER_LEVEL = 1_000
"""The deployment's cap on one level's shards: an inline Map's history grows with its shards."""
MAX_SHARDS_PER_JOB = 2_000
"""About 6 history events per shard: 2,000 shards stay well inside an execution's 25,000."""


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
    planned = [split(level, shard_count(len(level), rules, cap)) for level in levels]
    total = sum(len(level) for level in planned)
    if total > MAX_SHARDS_PER_JOB:
        raise ValidationFailed.on(
            "sharding", f"the levels need {total} shards in all; a job may have at most {MAX_SHARDS_PER_JOB}"
        )
    return planned
