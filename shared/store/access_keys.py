"""Access keys for the EventBridge Scheduler API (docs/eventbridge.md, section 5): ``AK#<id>`` /
``AK``, one read to find a key's tenant and secret. The secret is made by the deployment's signing
key mode (shared/store/signing.py's ``SecretValues``, under the label ``access-key:<id>`` so it is
never one of the tenant's signing secrets): shown once at issue, found again from the item."""

from __future__ import annotations

import base64
import secrets

from pynamodb.exceptions import DoesNotExist, PynamoDBException

from shared.domain.errors import KeyNotFound, StorageUnavailable
from shared.domain.tenants import IssuedKey
from shared.store.signing import SecretValues
from shared.store.tenant_items import AccessKeyItem

SK = "AK"
ID_PREFIX = "AKSD"
"""Sundial's access key ids: 20 characters, as AWS's (``AKIA...``), told apart by the prefix."""
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"


def key_pk(key_id: str) -> str:
    return f"AK#{key_id}"


def new_key_id() -> str:
    return ID_PREFIX + "".join(secrets.choice(_ALPHABET) for _ in range(16))


def secret_text(key: bytes) -> str:
    return base64.b64encode(key).decode()


def _label(key_id: str) -> str:
    return f"access-key:{key_id}"


class DynamoAccessKeys:
    def __init__(self, values: SecretValues) -> None:
        self.values = values

    def issue(self, tenant: str, now_ms: int) -> IssuedKey:
        key_id = new_key_id()
        key, stored = self.values.shown(tenant, _label(key_id))
        item = AccessKeyItem(
            key_pk(key_id), SK, tenant=tenant, scheme=self.values.scheme, stored=stored, created_ms=now_ms
        )
        try:
            item.save(condition=AccessKeyItem.pk.does_not_exist())
        except PynamoDBException as exc:
            raise StorageUnavailable(f"access keys: {exc.msg}") from exc
        return IssuedKey(key_id, secret_text(key), now_ms)

    def _item(self, key_id: str) -> AccessKeyItem | None:
        try:
            return AccessKeyItem.get(key_pk(key_id), SK, consistent_read=True)
        except DoesNotExist:
            return None
        except PynamoDBException as exc:
            raise StorageUnavailable(f"access keys: {exc.msg}") from exc

    def revoke(self, tenant: str, key_id: str, now_ms: int) -> None:
        item = self._item(key_id)
        if item is None or item.tenant != tenant:
            raise KeyNotFound(f"tenant {tenant!r} has no access key {key_id!r}")
        if item.revoked_ms is None:
            try:
                item.update(actions=[AccessKeyItem.revoked_ms.set(now_ms)])
            except PynamoDBException as exc:
                raise StorageUnavailable(f"access keys: {exc.msg}") from exc

    def secret(self, key_id: str) -> tuple[str, str] | None:
        """The tenant and secret of a live key (None: unknown, revoked, or made in another signing
        key mode than the deployment's now)."""
        if not key_id.startswith(ID_PREFIX):
            return None
        item = self._item(key_id)
        if item is None or item.revoked_ms is not None or item.scheme != self.values.scheme:
            return None
        return item.tenant, secret_text(self.values.key(item.tenant, _label(key_id), item.stored))
