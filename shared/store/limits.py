"""A tenant's limits per destination in the task table (docs/receivers.md, section 1). Implements
shared.services.ports.tenants.LimitStore.

Items: ``T#<tenant>`` / ``L#<name>`` (:class:`LimitItem`: the limit as put), ``T#<tenant>`` /
``LO#<origin>`` (:class:`LimitOriginItem`: which limit has an origin, so two limits never share
one) and ``LIMIT#<tenant>#<name>#<k>`` / ``S`` (:class:`LimitStateItem`: sub-bucket ``k``'s state,
written by the trigger's bookings). A put is one transaction: the limit with its version bumped,
its origin entry (conditional on the origin being free or already this limit's; a changed origin
frees the old one), and the limit's version on the state item of every sub-bucket the limit has
or had, so a booking made under the old version fails its condition and is made again; the
state's TAT, hold and slots are kept. A delete removes all of it in one transaction.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pynamodb.exceptions import DoesNotExist, PynamoDBException, TransactWriteError
from pynamodb.transactions import TransactWrite

from shared.domain.errors import ConcurrentUpdate, LimitNotFound, OriginTaken, StorageUnavailable
from shared.domain.limits import MAX_PER_SECOND, SUB_BUCKET_RATE, Limit, LimitSpec
from shared.domain.times import from_ms
from shared.store.models import is_conflict
from shared.store.signing import tenant_pk
from shared.store.tenant_items import LimitItem, LimitOriginItem, LimitStateItem

LIMIT_SK_PREFIX = "L#"
ORIGIN_SK_PREFIX = "LO#"
STATE_SK = "S"
MAX_SUB_BUCKETS = math.ceil(MAX_PER_SECOND / SUB_BUCKET_RATE)
"""The most state items a limit can ever have had: a delete removes every one of them (a limit
made slower keeps its former sub-buckets' items, so its current count is not enough)."""
PUT_ATTEMPTS = 3


def limit_sk(name: str) -> str:
    return f"{LIMIT_SK_PREFIX}{name}"


def origin_sk(origin: str) -> str:
    return f"{ORIGIN_SK_PREFIX}{origin}"


def state_pk(tenant: str, name: str, k: int) -> str:
    """The partition of sub-bucket ``k`` of a tenant's limit (one per sub-bucket: bookings never
    share a partition with anything else)."""
    return f"LIMIT#{tenant}#{name}#{k}"


def _unavailable(exc: PynamoDBException) -> StorageUnavailable:
    return StorageUnavailable(f"the task store did not answer: {exc.msg}")


def _limit(tenant: str, item: LimitItem) -> Limit:
    return Limit(
        tenant=tenant,
        name=item.name,
        per_second=_number(item.per_second),
        burst=int(item.burst),
        max_in_flight=int(item.max_in_flight) if item.max_in_flight is not None else None,
        origin=item.origin,
        version=int(item.version),
        created_at=from_ms(int(item.created_ms)),
        updated_at=from_ms(int(item.updated_ms)),
    )


def _number(value: float) -> float:
    """A rate as it was put: 2 stays 2 (an int), 0.5 stays 0.5."""
    return int(value) if float(value).is_integer() else float(value)


class DynamoLimits:
    def _read(self, tenant: str, name: str) -> LimitItem | None:
        try:
            return LimitItem.get(tenant_pk(tenant), limit_sk(name), consistent_read=True)
        except DoesNotExist:
            return None
        except PynamoDBException as exc:
            raise _unavailable(exc) from exc

    def _origin_owner(self, tenant: str, origin: str) -> str | None:
        try:
            return LimitOriginItem.get(tenant_pk(tenant), origin_sk(origin), consistent_read=True).name
        except DoesNotExist:
            return None
        except PynamoDBException as exc:
            raise _unavailable(exc) from exc

    def put(self, tenant: str, name: str, spec: LimitSpec, now_ms: int) -> Limit:
        """Create or replace the limit; a put that races another put of the same limit (or of the
        origin) reads again and tries once more, a few times."""
        for attempt in range(1, PUT_ATTEMPTS + 1):
            old = self._read(tenant, name)
            try:
                return self._put(tenant, name, spec, now_ms, old)
            except TransactWriteError as exc:
                if not is_conflict(exc):
                    raise _unavailable(exc) from exc
                if spec.origin is not None and (owner := self._origin_owner(tenant, spec.origin)) not in (None, name):
                    raise OriginTaken(
                        f"limit {owner!r} has the origin {spec.origin} already: one limit per origin"
                    ) from exc
                if attempt == PUT_ATTEMPTS:
                    raise ConcurrentUpdate(f"limit {name!r} was changed meanwhile: try again") from exc
            except PynamoDBException as exc:
                raise _unavailable(exc) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _put(self, tenant: str, name: str, spec: LimitSpec, now_ms: int, old: LimitItem | None) -> Limit:
        version = int(old.version) + 1 if old is not None else 1
        created_ms = int(old.created_ms) if old is not None else now_ms
        item = LimitItem(
            tenant_pk(tenant),
            limit_sk(name),
            name=name,
            per_second=spec.per_second,
            burst=spec.burst,
            max_in_flight=spec.max_in_flight,
            origin=spec.origin,
            version=version,
            created_ms=created_ms,
            updated_ms=now_ms,
        )
        limit = _limit(tenant, item)
        before = _limit(tenant, old).sub_buckets if old is not None else 0
        connection = LimitItem._get_connection().connection
        with TransactWrite(connection=connection) as transaction:
            transaction.save(
                item,
                condition=(LimitItem.version == old.version if old is not None else LimitItem.pk.does_not_exist()),
            )
            if spec.origin is not None:
                transaction.save(
                    LimitOriginItem(tenant_pk(tenant), origin_sk(spec.origin), name=name),
                    condition=LimitOriginItem.pk.does_not_exist() | (LimitOriginItem.name == name),
                )
            if old is not None and old.origin is not None and old.origin != spec.origin:
                transaction.delete(
                    LimitOriginItem(tenant_pk(tenant), origin_sk(old.origin)),
                    condition=LimitOriginItem.pk.does_not_exist() | (LimitOriginItem.name == name),
                )
            for k in range(max(before, limit.sub_buckets)):
                transaction.update(
                    LimitStateItem(state_pk(tenant, name, k), STATE_SK), actions=[LimitStateItem.version.set(version)]
                )
        return limit

    def get(self, tenant: str, name: str) -> Limit:
        item = self._read(tenant, name)
        if item is None:
            raise LimitNotFound(f"no limit {name!r}")
        return _limit(tenant, item)

    def delete(self, tenant: str, name: str) -> None:
        item = self._read(tenant, name)
        if item is None:
            raise LimitNotFound(f"no limit {name!r}")
        connection = LimitItem._get_connection().connection
        try:
            with TransactWrite(connection=connection) as transaction:
                transaction.delete(item, condition=LimitItem.version == item.version)
                if item.origin is not None:
                    transaction.delete(
                        LimitOriginItem(tenant_pk(tenant), origin_sk(item.origin)),
                        condition=LimitOriginItem.pk.does_not_exist() | (LimitOriginItem.name == name),
                    )
                for k in range(MAX_SUB_BUCKETS):
                    transaction.delete(LimitStateItem(state_pk(tenant, name, k), STATE_SK))
        except TransactWriteError as exc:
            if is_conflict(exc):
                raise ConcurrentUpdate(f"limit {name!r} was changed meanwhile: read it and try again") from exc
            raise _unavailable(exc) from exc
        except PynamoDBException as exc:
            raise _unavailable(exc) from exc

    def for_tenant(self, tenant: str) -> Sequence[Limit]:
        """One strongly consistent query (``begins_with(sk, "L#")``: the origin entries, ``LO#``,
        do not match), in name order."""
        try:
            items = list(
                LimitItem.query(tenant_pk(tenant), LimitItem.sk.startswith(LIMIT_SK_PREFIX), consistent_read=True)
            )
        except PynamoDBException as exc:
            raise _unavailable(exc) from exc
        return [_limit(tenant, item) for item in items]
