"""A tenant's quota of tasks that can still fire (docs/tenancy.md, section 2 step 5): the
arithmetic the store's conditional writes are built from. Pure: no I/O.

A task is *counted* from its registration until the write that says it can no longer fire
(completed, cancelled, or its one-shot run settled); extra runs (run now, redrive) are
occurrences of a counted task, never counted themselves.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable


def limit_of(max_tasks: int | None, default_max_tasks: int) -> int:
    """A tenant's quota: its own ``max_tasks``, or the deployment's default when it has none (a
    tenant without an item, such as the local runtime's ``default``)."""
    return default_max_tasks if max_tasks is None else max_tasks


def ceiling(max_tasks: int, wanted: int) -> int:
    """The highest count of live tasks that still leaves room for ``wanted`` more: a reservation
    of ``wanted`` is admitted when ``live <= ceiling``. Negative when ``wanted`` alone is more
    than the quota (nothing admits it)."""
    if wanted < 1:
        raise ValueError(f"a reservation is of one task at least, got {wanted}")
    return max_tasks - wanted


def fits(live: int | None, max_tasks: int, wanted: int) -> bool:
    """Whether ``wanted`` more tasks fit beside ``live`` (``None``: the tenant has none yet)."""
    return (live or 0) <= ceiling(max_tasks, wanted)


def freed(counted_in: Iterable[str | None]) -> dict[str, int]:
    """The slots each tenant gets back from tasks that can no longer fire, one per task, given the
    tenant each was counted in (``None``: a task that was not counted frees nothing)."""
    return dict(Counter(tenant for tenant in counted_in if tenant is not None))
