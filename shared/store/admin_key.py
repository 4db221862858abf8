"""The deployment's admin key in the task table (docs/tenancy.md, section 2): stored as a tenant's
key is, as its SHA-256 only, so the authorizer finds it with the one ``GetItem`` it makes for any
key, and nothing stored reveals it.

Items: ``K#<sha-256>`` / ``K`` with ``role`` ``admin`` (:class:`shared.store.models.KeyItem`: what
the authorizer reads) and ``ADMIN`` / ``K`` (:data:`ADMIN_PK`: which hash is the admin key now, so
a rotation knows which item to delete). Both are written in one transaction conditioned on the
pointer: two creations racing make one admin key, two rotations racing replace it once (the loser
is told to run again). The key itself is made and shown by whoever writes it (the operator's
``sundial admin-key create``, the local runtime), never by the stack: the writer's own AWS
credentials write these items, with the plain DynamoDB client (no model binding), so the command
line can use this module without the functions' settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from shared.domain.errors import StorageUnavailable
from shared.domain.times import now_ms

ADMIN_PK = "ADMIN"
"""The admin key's pointer item: ``ADMIN`` / ``K``, holding ``key_hash`` (the current key's)."""
ADMIN_SK = "K"
ADMIN_ROLE = "admin"
"""``role`` of the admin key's ``K#<sha-256>`` item (a tenant's key item has none)."""
ADMIN_KEY_ID = "admin"
KEY_SK = "K"
"""The sort key of every key's item, a tenant's or the admin's (``K#<sha-256>`` / ``K``)."""


class AdminKeyExists(Exception):
    """The deployment has an admin key already: ``rotate`` replaces it."""


class AdminKeyChanged(Exception):
    """The admin key changed between a rotation's read and its write (another rotation won)."""


@dataclass(frozen=True)
class AdminKeyStore:
    """The admin key's items in one table, written with a DynamoDB client (``boto3.client("dynamodb")``)."""

    client: Any
    table: str

    def current_hash(self) -> str | None:
        """The hash of the admin key now (strongly consistent); None when the table has none."""
        try:
            item = self.client.get_item(TableName=self.table, Key=_key(ADMIN_PK, ADMIN_SK), ConsistentRead=True).get(
                "Item"
            )
        except (ClientError, BotoCoreError) as exc:
            raise _unavailable(exc) from exc
        return item["key_hash"]["S"] if item else None

    def create(self, key_hash: str) -> None:
        """The admin key with this hash; :class:`AdminKeyExists` when the table has one."""
        now = now_ms()
        pointer = {**_key(ADMIN_PK, ADMIN_SK), "key_hash": {"S": key_hash}, "created_ms": {"N": str(now)}}
        self._transact(
            [
                {"Put": {"TableName": self.table, "Item": pointer, "ConditionExpression": "attribute_not_exists(pk)"}},
                _put_key(self.table, key_hash, now),
            ],
            AdminKeyExists("this deployment has an admin key: rotate replaces it"),
        )

    def rotate(self, key_hash: str) -> None:
        """The admin key with this hash replaces the current one (whose item is deleted: the old key
        is refused by the authorizer's next read); with none yet, this creates it."""
        old = self.current_hash()
        if old is None:
            try:
                self.create(key_hash)
            except AdminKeyExists as exc:
                raise AdminKeyChanged("an admin key was created meanwhile: run the rotation again") from exc
            return
        now = now_ms()
        self._transact(
            [
                {
                    "Update": {
                        "TableName": self.table,
                        "Key": _key(ADMIN_PK, ADMIN_SK),
                        "UpdateExpression": "SET key_hash = :new, created_ms = :now",
                        "ConditionExpression": "key_hash = :old",
                        "ExpressionAttributeValues": {
                            ":new": {"S": key_hash},
                            ":now": {"N": str(now)},
                            ":old": {"S": old},
                        },
                    }
                },
                {"Delete": {"TableName": self.table, "Key": _key(key_pk(old), KEY_SK)}},
                _put_key(self.table, key_hash, now),
            ],
            AdminKeyChanged("the admin key changed meanwhile: run the rotation again"),
        )

    def _transact(self, items: list[dict[str, Any]], refused: Exception) -> None:
        """One transaction of ``items``; ``refused`` raised when one of its conditions did not hold."""
        try:
            self.client.transact_write_items(TransactItems=items)
        except ClientError as exc:
            if _cancelled(exc):
                raise refused from exc
            raise _unavailable(exc) from exc
        except BotoCoreError as exc:
            raise _unavailable(exc) from exc


def key_pk(key_hash: str) -> str:
    """The partition key of a key's item, a tenant's or the admin's."""
    return f"K#{key_hash}"


def _key(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def _put_key(table: str, key_hash: str, created_ms: int) -> dict[str, Any]:
    item = {
        **_key(key_pk(key_hash), KEY_SK),
        "role": {"S": ADMIN_ROLE},
        "key_id": {"S": ADMIN_KEY_ID},
        "created_ms": {"N": str(created_ms)},
    }
    return {"Put": {"TableName": table, "Item": item, "ConditionExpression": "attribute_not_exists(pk)"}}


def _cancelled(exc: ClientError) -> bool:
    """A transaction DynamoDB refused because one of its conditions did not hold."""
    error = exc.response.get("Error", {})
    if error.get("Code") == "ConditionalCheckFailedException":
        return True
    reasons = exc.response.get("CancellationReasons") or []
    return error.get("Code") == "TransactionCanceledException" and (
        not reasons or any(reason.get("Code") == "ConditionalCheckFailed" for reason in reasons)
    )


def _unavailable(exc: Exception) -> StorageUnavailable:
    return StorageUnavailable(f"the task table did not answer: {type(exc).__name__}: {exc}")
