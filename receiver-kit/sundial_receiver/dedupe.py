"""Drop repeats by run id: Sundial delivers at least once, and every attempt of one occurrence
carries the same run id. A store *claims* a run id the first time only; a handler that failed
*releases* it, so Sundial's retry is processed."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

DEFAULT_TTL_SECONDS = 7 * 24 * 3600
"""How long a processed run id is remembered: longer than Sundial retries an occurrence."""


class Store(Protocol):
    def claim(self, run_id: str, ttl: int = DEFAULT_TTL_SECONDS) -> bool:
        """True the first time ``run_id`` is claimed (within ``ttl`` seconds), False after."""
        ...

    def release(self, run_id: str) -> None:
        """Forget ``run_id`` (its processing failed): the next delivery of it is claimed again."""
        ...


class MemoryStore:
    """One process's memory: for tests and single-process receivers (a restart forgets)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._until: dict[str, float] = {}
        self._lock = threading.Lock()
        self._clock = clock

    def claim(self, run_id: str, ttl: int = DEFAULT_TTL_SECONDS) -> bool:
        now = self._clock()
        with self._lock:
            if self._until.get(run_id, 0.0) > now:
                return False
            if len(self._until) > 10_000:  # now and then, drop the expired
                self._until = {k: v for k, v in self._until.items() if v > now}
            self._until[run_id] = now + ttl
            return True

    def release(self, run_id: str) -> None:
        with self._lock:
            self._until.pop(run_id, None)


class DynamoDBStore:
    """A DynamoDB table keyed by a string ``key_attribute`` (``pk`` by default): a claim is a
    conditional PutItem (``attribute_not_exists``, or an item whose ``expires`` time has passed);
    turn on the table's TTL on ``ttl_attribute`` so old items go away. Needs boto3
    (``pip install sundial-receiver[dynamodb]``), or pass a client of your own."""

    def __init__(
        self,
        table_name: str,
        client: Any = None,
        key_attribute: str = "pk",
        ttl_attribute: str = "expires",
        prefix: str = "sundial-run#",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.table_name, self.key_attribute, self.ttl_attribute, self.prefix = (
            table_name,
            key_attribute,
            ttl_attribute,
            prefix,
        )
        self._client = client
        self._clock = clock

    @property
    def client(self) -> Any:
        if self._client is None:
            import boto3  # noqa: PLC0415 (optional: only this store needs it)

            self._client = boto3.client("dynamodb")
        return self._client

    def claim(self, run_id: str, ttl: int = DEFAULT_TTL_SECONDS) -> bool:
        now = int(self._clock())
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item={
                    self.key_attribute: {"S": self.prefix + run_id},
                    self.ttl_attribute: {"N": str(now + ttl)},
                },
                ConditionExpression="attribute_not_exists(#k) OR #t < :now",
                ExpressionAttributeNames={"#k": self.key_attribute, "#t": self.ttl_attribute},
                ExpressionAttributeValues={":now": {"N": str(now)}},
            )
        except Exception as exc:
            if _error_code(exc) == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def release(self, run_id: str) -> None:
        self.client.delete_item(TableName=self.table_name, Key={self.key_attribute: {"S": self.prefix + run_id}})


def _error_code(exc: Exception) -> str | None:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        code = (response.get("Error") or {}).get("Code")
        return str(code) if code else None
    return None


class RedisStore:
    """Any Redis-like client with ``set(name, value, nx=True, ex=seconds)`` and ``delete(name)``
    (redis-py, valkey, fakeredis...): a claim is ``SET key 1 NX EX ttl``."""

    def __init__(self, client: Any, prefix: str = "sundial-run:") -> None:
        self.client = client
        self.prefix = prefix

    def claim(self, run_id: str, ttl: int = DEFAULT_TTL_SECONDS) -> bool:
        return bool(self.client.set(self.prefix + run_id, "1", nx=True, ex=ttl))

    def release(self, run_id: str) -> None:
        self.client.delete(self.prefix + run_id)
