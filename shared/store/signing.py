"""A tenant's callback signing secrets in the task table, encrypted with the stack's KMS key
(docs/tenancy.md, sections 1 and 4). Implements shared.services.ports.SigningSecrets.

Items: ``T#<tenant>`` / ``S#<created ms>#<id>`` (:class:`SigningSecretItem`: the ciphertext) and
``T#<tenant>`` / ``S`` (:class:`SigningGuardItem`: the current secret's id). Creating the first
secret and every rotation is one transaction conditioned on the guard: two triggers making a
tenant's first secret at once make one (the loser reads the winner's).

KMS permissions: the API rotates (``kms:Encrypt`` of fresh random bytes; ``kms:Decrypt`` is not
needed there); the trigger and the job function read (``kms:Decrypt``) and, for a tenant that has
no secret yet, make one with ``kms:GenerateDataKeyWithoutPlaintext``: KMS makes the random key
and returns it only encrypted, so they never hold an encrypt permission. Values never reach a
log: errors name the tenant and the secret id only.
"""

from __future__ import annotations

import base64
import os
import uuid
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError
from pynamodb.exceptions import PynamoDBException, TransactWriteError
from pynamodb.transactions import TransactWrite

from shared.domain.errors import ConcurrentUpdate, StorageUnavailable
from shared.domain.signing import SECRET_BYTES, NewSecret, SecretInfo, secret_text
from shared.domain.times import from_ms
from shared.store.models import SigningGuardItem, SigningSecretItem, is_conflict

EXPIRED_KEPT = timedelta(days=7)
"""A rotated-out secret's item is dropped (DynamoDB TTL) this long after it stops signing."""
GUARD_SK = "S"
SECRET_SK_PREFIX = "S#"  # noqa: S105 (a sort key prefix)


SIGNING_KEY_DESCRIPTION = "Sundial: encrypts the tenants' callback signing secrets"


def create_signing_key(kms: Any) -> str:
    """A new symmetric KMS key for the signing secrets, with rotation on; its ARN (the local
    runtime and the tests: the stack makes its own, infra/signing.py)."""
    arn: str = kms.create_key(Description=SIGNING_KEY_DESCRIPTION, KeyUsage="ENCRYPT_DECRYPT")["KeyMetadata"]["Arn"]
    kms.enable_key_rotation(KeyId=arn)
    return arn


def tenant_pk(tenant: str) -> str:
    return f"T#{tenant}"


def secret_sk(created_ms: int, secret_id: str) -> str:
    return f"{SECRET_SK_PREFIX}{created_ms:013d}#{secret_id}"


def _info(item: SigningSecretItem) -> SecretInfo:
    expires = item.expires_ms
    return SecretInfo(item.secret_id, int(item.created_ms), int(expires) if expires is not None else None)


def _context(tenant: str, secret_id: str) -> dict[str, str]:
    return {"sundial:tenant": tenant, "sundial:secret": secret_id}


def _secret_item(tenant: str, secret_id: str, ciphertext: bytes, now_ms: int) -> SigningSecretItem:
    return SigningSecretItem(
        tenant_pk(tenant),
        secret_sk(now_ms, secret_id),
        secret_id=secret_id,
        ciphertext=base64.b64encode(ciphertext).decode("ascii"),
        created_ms=now_ms,
    )


class DynamoSigningSecrets:
    def __init__(
        self,
        key_arn: str,
        kms: Any | None = None,
        *,
        randbytes: Callable[[int], bytes] = os.urandom,
        new_id: Callable[[], str] = lambda: uuid.uuid4().hex,
    ) -> None:
        self.key_arn = key_arn
        self._kms = kms
        self._randbytes = randbytes
        self._new_id = new_id

    @property
    def kms(self) -> Any:
        if self._kms is None:
            self._kms = boto3.client("kms")
        return self._kms

    def _items(self, tenant: str) -> list[SigningSecretItem]:
        """The tenant's secrets, newest first (strongly consistent: a rotation is seen at once)."""
        try:
            return list(
                SigningSecretItem.query(
                    tenant_pk(tenant),
                    SigningSecretItem.sk.startswith(SECRET_SK_PREFIX),
                    scan_index_forward=False,
                    consistent_read=True,
                )
            )
        except PynamoDBException as exc:
            raise StorageUnavailable(f"the task store did not answer: {exc.msg}") from exc

    def infos(self, tenant: str) -> Sequence[SecretInfo]:
        return [_info(item) for item in self._items(tenant)]

    def active(self, tenant: str, now_ms: int) -> Sequence[str]:
        """The values of the tenant's active secrets, newest first; its first one is made now
        when it has none."""
        items = [item for item in self._items(tenant) if _info(item).active(now_ms)]
        if not items:
            items = [self._first(tenant, now_ms)]
        return [secret_text(self._decrypt(tenant, item)) for item in items]

    def rotate(self, tenant: str, previous_expires_in_ms: int, now_ms: int) -> NewSecret:
        """A new current secret; every other active one stops signing at ``now + previous_expires_in_ms``
        at the latest."""
        items = self._items(tenant)
        current = next((item for item in items if item.expires_ms is None), None)
        secret_id = self._new_id()
        key = self._randbytes(SECRET_BYTES)
        try:
            answer = self.kms.encrypt(KeyId=self.key_arn, Plaintext=key, EncryptionContext=_context(tenant, secret_id))
        except (ClientError, BotoCoreError) as exc:
            raise StorageUnavailable(f"KMS did not encrypt the new signing secret: {type(exc).__name__}") from exc
        item = _secret_item(tenant, secret_id, answer["CiphertextBlob"], now_ms)
        until = now_ms + previous_expires_in_ms
        guard = SigningGuardItem(tenant_pk(tenant), GUARD_SK, current=secret_id)
        try:
            with TransactWrite(connection=SigningSecretItem._get_connection().connection) as transaction:
                if current is None:
                    transaction.save(guard, condition=SigningGuardItem.pk.does_not_exist())
                else:
                    transaction.save(guard, condition=SigningGuardItem.current == current.secret_id)
                transaction.save(item, condition=SigningSecretItem.pk.does_not_exist())
                for old in items:
                    expires = old.expires_ms
                    if expires is None or expires > until:
                        transaction.update(
                            old,
                            actions=[
                                SigningSecretItem.expires_ms.set(until),
                                SigningSecretItem.expires_at.set(from_ms(until) + EXPIRED_KEPT),
                            ],
                        )
        except TransactWriteError as exc:
            if is_conflict(exc):
                raise ConcurrentUpdate("the signing secrets were rotated meanwhile: try again") from exc
            raise StorageUnavailable(f"the task store did not answer: {exc.msg}") from exc
        except PynamoDBException as exc:
            raise StorageUnavailable(f"the task store did not answer: {exc.msg}") from exc
        return NewSecret(_info(item), secret_text(key))

    def _first(self, tenant: str, now_ms: int) -> SigningSecretItem:
        """Make the tenant's first secret, or read the one another writer just made."""
        secret_id = self._new_id()
        try:
            answer = self.kms.generate_data_key_without_plaintext(
                KeyId=self.key_arn, NumberOfBytes=SECRET_BYTES, EncryptionContext=_context(tenant, secret_id)
            )
        except (ClientError, BotoCoreError) as exc:
            raise StorageUnavailable(f"KMS did not make a signing secret: {type(exc).__name__}") from exc
        item = _secret_item(tenant, secret_id, answer["CiphertextBlob"], now_ms)
        try:
            with TransactWrite(connection=SigningSecretItem._get_connection().connection) as transaction:
                transaction.save(
                    SigningGuardItem(tenant_pk(tenant), GUARD_SK, current=secret_id),
                    condition=SigningGuardItem.pk.does_not_exist(),
                )
                transaction.save(item, condition=SigningSecretItem.pk.does_not_exist())
        except TransactWriteError as exc:
            if not is_conflict(exc):
                raise StorageUnavailable(f"the task store did not answer: {exc.msg}") from exc
            current = next((old for old in self._items(tenant) if old.expires_ms is None), None)
            if current is None:
                raise StorageUnavailable("the tenant's signing secret could not be read") from exc
            return current
        except PynamoDBException as exc:
            raise StorageUnavailable(f"the task store did not answer: {exc.msg}") from exc
        return item

    def _decrypt(self, tenant: str, item: SigningSecretItem) -> bytes:
        try:
            answer = self.kms.decrypt(
                KeyId=self.key_arn,
                CiphertextBlob=base64.b64decode(item.ciphertext),
                EncryptionContext=_context(tenant, item.secret_id),
            )
        except (ClientError, BotoCoreError) as exc:
            raise StorageUnavailable(
                f"KMS did not decrypt signing secret {item.secret_id}: {type(exc).__name__}"
            ) from exc
        plaintext: bytes = answer["Plaintext"]
        return plaintext
