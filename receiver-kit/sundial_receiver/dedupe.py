"""Drop repeats by run id: Sundial delivers at least once, and every attempt of one occurrence
carries the same run id. A store *claims* a run id the first time only; a handler that failed
*releases* it, so Sundial's retry is processed.

A job's processor needs more than a claim: a retried step must get the answer the first call
gave, so the stores also *save* an answer under the step's key and *load* it back
(:class:`AnswerStore`, used by ``sundial_receiver.jobs``)."""

from __future__ import annotations

import threading
import time
import zlib
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


class AnswerStore(Store, Protocol):
    """A store that also keeps an answer: a job step's key is claimed while it runs (for a short
    lease), then its answer is saved for ``ttl`` seconds and a retry of the step loads it."""

    def save(self, key: str, answer: bytes, ttl: int) -> None:
        """Keep ``answer`` (the exact bytes answered) under ``key`` for ``ttl`` seconds; the key
        stays claimed as long."""
        ...

    def load(self, key: str) -> bytes | None:
        """The answer saved under ``key`` and not expired, or None (never saved, or only claimed)."""
        ...


class MemoryStore:
    """One process's memory: for tests and single-process receivers (a restart forgets)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._until: dict[str, float] = {}
        self._answers: dict[str, tuple[bytes, float]] = {}
        self._lock = threading.Lock()
        self._clock = clock

    def claim(self, run_id: str, ttl: int = DEFAULT_TTL_SECONDS) -> bool:
        now = self._clock()
        with self._lock:
            if self._until.get(run_id, 0.0) > now:
                return False
            if len(self._until) > 10_000:  # now and then, drop the expired
                self._until = {k: v for k, v in self._until.items() if v > now}
                self._answers = {k: v for k, v in self._answers.items() if v[1] > now}
            self._until[run_id] = now + ttl
            return True

    def release(self, run_id: str) -> None:
        with self._lock:
            self._until.pop(run_id, None)
            self._answers.pop(run_id, None)

    def save(self, key: str, answer: bytes, ttl: int) -> None:
        until = self._clock() + ttl
        with self._lock:
            self._answers[key] = (bytes(answer), until)
            self._until[key] = until

    def load(self, key: str) -> bytes | None:
        with self._lock:
            saved = self._answers.get(key)
            if saved is None or saved[1] <= self._clock():
                return None
            return saved[0]


DYNAMODB_PART_BYTES = 350_000
"""An answer is kept in parts of at most this many bytes (after zlib), one item each: an item
holds at most 400 KB, and a processor may answer 6 MB."""


class DynamoDBStore:
    """A DynamoDB table keyed by a string ``key_attribute`` (``pk`` by default): a claim is a
    conditional PutItem (``attribute_not_exists``, or an item whose ``expires`` time has passed);
    turn on the table's TTL on ``ttl_attribute`` so old items go away. Needs boto3
    (``pip install sundial-receiver[dynamodb]``), or pass a client of your own.

    A saved answer is zlib-compressed into the claim's item (``answer``, binary); one larger
    than :data:`DYNAMODB_PART_BYTES` is split, its further parts in items of their own
    (``<key>#part<n>``, written before the first, with the same ``expires``)."""

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

    def save(self, key: str, answer: bytes, ttl: int) -> None:
        expires = {"N": str(int(self._clock()) + ttl)}
        packed = zlib.compress(bytes(answer))
        parts = [packed[i : i + DYNAMODB_PART_BYTES] for i in range(0, len(packed), DYNAMODB_PART_BYTES)] or [b""]
        for number, part in enumerate(parts[1:], start=1):  # the first item last: once read, all are there
            self.client.put_item(
                TableName=self.table_name,
                Item={
                    self.key_attribute: {"S": f"{self.prefix}{key}#part{number}"},
                    self.ttl_attribute: expires,
                    "part": {"B": part},
                },
            )
        self.client.put_item(
            TableName=self.table_name,
            Item={
                self.key_attribute: {"S": self.prefix + key},
                self.ttl_attribute: expires,
                "answer": {"B": parts[0]},
                "parts": {"N": str(len(parts))},
                "bytes": {"N": str(len(answer))},
            },
        )

    def load(self, key: str) -> bytes | None:
        item = self._get(self.prefix + key)
        if item is None or "answer" not in item:
            return None
        packed = [bytes(item["answer"]["B"])]
        for number in range(1, int(item.get("parts", {}).get("N", "1"))):
            part = self._get(f"{self.prefix}{key}#part{number}")
            if part is None or "part" not in part:  # expired or deleted meanwhile: as if never saved
                return None
            packed.append(bytes(part["part"]["B"]))
        answer = zlib.decompress(b"".join(packed))
        return answer if len(answer) == int(item["bytes"]["N"]) else None

    def _get(self, key: str) -> dict[str, Any] | None:
        """The item of ``key`` unless its ``expires`` has passed (DynamoDB's TTL deletes late)."""
        item = self.client.get_item(
            TableName=self.table_name, Key={self.key_attribute: {"S": key}}, ConsistentRead=True
        ).get("Item")
        if item is None or float(item.get(self.ttl_attribute, {}).get("N", "0")) <= int(self._clock()):
            return None
        return dict(item)


def _error_code(exc: Exception) -> str | None:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        code = (response.get("Error") or {}).get("Code")
        return str(code) if code else None
    return None


class RedisStore:
    """Any Redis-like client with ``set(name, value, nx=True, ex=seconds)`` and ``delete(name)``
    (redis-py, valkey, fakeredis...): a claim is ``SET key 1 NX EX ttl``. A job step's answer is
    ``SET answer:<key> <bytes> EX ttl`` and read back with ``get(name)``."""

    def __init__(self, client: Any, prefix: str = "sundial-run:") -> None:
        self.client = client
        self.prefix = prefix

    def claim(self, run_id: str, ttl: int = DEFAULT_TTL_SECONDS) -> bool:
        return bool(self.client.set(self.prefix + run_id, "1", nx=True, ex=ttl))

    def release(self, run_id: str) -> None:
        self.client.delete(self.prefix + run_id)

    def save(self, key: str, answer: bytes, ttl: int) -> None:
        self.client.set(self.prefix + "answer:" + key, bytes(answer), ex=ttl)
        self.client.set(self.prefix + key, "1", ex=ttl)  # claimed as long as the answer is kept

    def load(self, key: str) -> bytes | None:
        value = self.client.get(self.prefix + "answer:" + key)
        if value is None:
            return None
        return value.encode("utf-8") if isinstance(value, str) else bytes(value)  # decode_responses=True
