"""A tenant's count of tasks that can still fire: ``live_tasks`` on its item ``T#<tenant>`` /
``T`` (docs/tenancy.md, section 2 step 5), bounded by the item's ``max_tasks`` or, when it has
none, by the deployment's default.

* One registration counts itself in its own transaction (:meth:`TenantQuota.count_one`): the
  condition compares the item's two attributes, so it needs no read and a concurrent change of
  the limit is never missed.
* A batch reserves its whole size first with one conditional ``UpdateItem``
  (:meth:`TenantQuota.reserve`), then writes (``BatchWriteItem`` takes no conditions) and gives
  back what was not written (:meth:`TenantQuota.release`).
* A task that can no longer fire gives its slot back (:func:`free`) in the same transaction as
  the write that says so, which also removes the task's ``counted`` mark: no second write can
  give it back again.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from typing import Any

from pynamodb.exceptions import PynamoDBException, TransactWriteError
from pynamodb.expressions.condition import Condition
from pynamodb.transactions import TransactWrite

from shared.domain.errors import QuotaExceeded, StorageUnavailable
from shared.domain.quota import ceiling, fits, limit_of
from shared.domain.tenants import MAX_TASKS
from shared.store.models import TaskItem, is_conflict
from shared.store.tenant_items import TenantItem
from shared.store.tenants import read_tenant, tenant_item

CONFLICT_PAUSES_S = (0.01, 0.03, 0.09)
"""A transaction cancelled because another was writing one of its items at that moment (the
tenant's counter is shared by all of its writers) is sent again after these pauses (jittered)."""
RESERVE_ATTEMPTS = 3
"""A reservation is read and tried again when the tenant's limit changed between its read and
its write; past this many attempts it is refused."""


def refused(tenant: str, max_tasks: int, wanted: int = 1) -> QuotaExceeded:
    what = "one more task" if wanted == 1 else f"{wanted} more tasks"
    return QuotaExceeded(
        f"tenant {tenant!r} has {max_tasks} tasks that can still fire (its max_tasks): {what} would be over "
        "it; nothing was stored. A task frees its place once it completes or is cancelled."
    )


def failed_conditions(exc: Exception) -> set[int]:
    """The positions, in a cancelled transaction, of the items whose condition did not hold."""
    reasons = getattr(exc, "cancellation_reasons", None) or []
    return {i for i, reason in enumerate(reasons) if reason is not None and reason.code == "ConditionalCheckFailed"}


def conflicted(exc: Exception) -> bool:
    """A transaction cancelled only because another was writing one of its items meanwhile."""
    reasons = getattr(exc, "cancellation_reasons", None) or []
    return not failed_conditions(exc) and any(r is not None and r.code == "TransactionConflict" for r in reasons)


def _update(item: TenantItem, actions: list[Any], condition: Condition | None = None) -> None:
    """One UpdateItem of a tenant's counter; sent again, with a short pause, when a transaction
    was writing the item at that moment (``TransactionConflictException``, not retried by the
    SDK)."""
    for pause in (*CONFLICT_PAUSES_S, None):
        try:
            item.update(actions=actions, condition=condition)
            return
        except PynamoDBException as exc:
            if pause is None or exc.cause_response_code != "TransactionConflictException":
                raise
            time.sleep(pause * (1 + random.random()))  # noqa: S311 (jitter, not a secret)  # wall: DynamoDB's backoff


def transact(
    build: Callable[[TransactWrite], None],
    sleep: Callable[[float], None] = time.sleep,  # wall: DynamoDB's backoff
) -> None:
    """Run the transaction ``build`` writes, on the task table; sent again, with a short pause,
    when it lost a race for one of its items (``TransactionConflict``), which DynamoDB does not
    retry itself. Any other failure is raised (``TransactWriteError``)."""
    for pause in (*CONFLICT_PAUSES_S, None):
        try:
            with TransactWrite(connection=TaskItem._get_connection().connection) as transaction:
                build(transaction)
            return
        except TransactWriteError as exc:
            if pause is None or not conflicted(exc):
                raise
            sleep(pause * (1 + random.random()))  # noqa: S311 (jitter, not a secret)


def free(transaction: TransactWrite, counts: Mapping[str, int]) -> None:
    """Give tenants back ``counts`` slots (tenant -> tasks that can no longer fire), in
    ``transaction``: one ``ADD -k`` per tenant. Unconditional: a decrement is never refused."""
    for tenant, count in sorted(counts.items()):
        if count:
            transaction.update(tenant_item(tenant), actions=[TenantItem.live_tasks.add(-count)])


class TenantQuota:
    """The counter's writes that need the limit: a registration's and a batch's."""

    def __init__(self, default_max_tasks: int = MAX_TASKS) -> None:
        self.default_max_tasks = default_max_tasks

    def admits(self, wanted: int = 1) -> Condition:
        """The condition on the tenant item under which ``wanted`` more tasks fit. For one task it
        compares ``live_tasks`` with ``max_tasks`` on the item itself (no read needed; an item
        without ``max_tasks`` has the default); for more, see :meth:`reserve`."""
        empty = TenantItem.live_tasks.does_not_exist()
        own = TenantItem.max_tasks.exists() & (empty | (TenantItem.live_tasks < TenantItem.max_tasks))
        default = TenantItem.max_tasks.does_not_exist() & (
            empty | (TenantItem.live_tasks <= ceiling(self.default_max_tasks, wanted))
        )
        return own | default

    def count_one(self, tenant: str) -> None:
        """Count one new task before it is written (:class:`QuotaExceeded` when it does not fit):
        one conditional ``UpdateItem``, no read. Not in a transaction with the task's put: every
        registration of a tenant writes this one item, and transactions on one item conflict
        with each other (``TransactionConflict``) where plain writes queue; a transaction also
        costs twice the write units. The task is written after this; :meth:`release` gives the
        place back if it is not, and a crash in between over-counts one (the safe side)."""
        try:
            _update(tenant_item(tenant), [TenantItem.live_tasks.add(1)], self.admits(1))
        except PynamoDBException as exc:
            if is_conflict(exc):
                raise self.exceeded(tenant) from exc
            raise StorageUnavailable(f"the quota of tenant {tenant!r}: {exc.msg}") from exc

    def exceeded(self, tenant: str, wanted: int = 1) -> QuotaExceeded:
        """The refusal of ``wanted`` more tasks, naming the limit as it is now."""
        return refused(tenant, self.limit(self._read(tenant)), wanted)

    def limit(self, item: TenantItem | None) -> int:
        return limit_of(int(item.max_tasks) if item and item.max_tasks is not None else None, self.default_max_tasks)

    def reserve(self, tenant: str, wanted: int) -> None:
        """Count ``wanted`` new tasks at once, or none (:class:`QuotaExceeded`): one consistent
        read of the limit, then one ``UpdateItem`` conditioned on the count leaving room for all
        of them *and* on the limit being the one read (a limit changed in between is read again).

        The tasks are written after this (:meth:`release` gives back those that were not). A
        crash between the two leaves the tenant counted for tasks it does not have: an
        over-count, the safe side (it can register fewer tasks, never more than its quota)."""
        for _ in range(RESERVE_ATTEMPTS):
            item = self._read(tenant)
            max_tasks = self.limit(item)
            live = int(item.live_tasks) if item and item.live_tasks is not None else None
            if not fits(live, max_tasks, wanted):
                raise refused(tenant, max_tasks, wanted)
            same_limit = (
                TenantItem.max_tasks == max_tasks
                if item is not None and item.max_tasks is not None
                else TenantItem.max_tasks.does_not_exist()
            )
            room = TenantItem.live_tasks.does_not_exist() | (TenantItem.live_tasks <= ceiling(max_tasks, wanted))
            try:
                _update(tenant_item(tenant), [TenantItem.live_tasks.add(wanted)], same_limit & room)
                return
            except PynamoDBException as exc:
                if not is_conflict(exc):
                    raise StorageUnavailable(f"the quota of tenant {tenant!r}: {exc.msg}") from exc
        raise self.exceeded(tenant, wanted)

    @staticmethod
    def release(tenant: str, count: int) -> None:
        """Give back ``count`` places: those a reservation took for tasks that were not written,
        or those of tasks that can no longer fire."""
        if count <= 0:
            return
        try:
            _update(tenant_item(tenant), [TenantItem.live_tasks.add(-count)])
        except PynamoDBException as exc:
            raise StorageUnavailable(f"the quota of tenant {tenant!r}: {exc.msg}") from exc

    def live(self, tenant: str) -> int:
        """The tenant's count of tasks that can still fire."""
        item = self._read(tenant)
        return int(item.live_tasks) if item is not None and item.live_tasks is not None else 0

    @staticmethod
    def _read(tenant: str) -> TenantItem | None:
        return read_tenant(tenant)


__all__ = ["TenantQuota", "conflicted", "failed_conditions", "free", "refused", "transact"]
