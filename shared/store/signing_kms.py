"""The "kms" mode of ``sundial:signingKey``: each signing secret is 32 random bytes, stored
encrypted with the stack's customer-managed KMS key (docs/tenancy.md, sections 1 and 4).
Implements shared.store.signing.SecretValues.

KMS permissions: the API rotates (``kms:Encrypt`` of fresh random bytes; ``kms:Decrypt`` is not
needed there); the signers (the triggers and the job function) read (``kms:Decrypt``) and, for a
tenant that has no secret yet, make one with ``kms:GenerateDataKeyWithoutPlaintext``: KMS makes the
random key and returns it only encrypted, so they never hold an encrypt permission and cannot make
a secret of their own choosing. Every encrypt and decrypt is a CloudTrail event of the key. The
encryption context names the tenant and the secret's id, so a ciphertext cannot be moved to
another tenant's item. The price: the key is $1 a month (https://aws.amazon.com/kms/pricing/),
and each decrypt a request ($0.03 per 10,000).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from shared.domain.errors import StorageUnavailable
from shared.domain.signing import SECRET_BYTES

SCHEME = "kms"
SIGNING_KEY_DESCRIPTION = "Sundial: encrypts the tenants' callback signing secrets"


def create_signing_key(kms: Any) -> str:
    """A new symmetric KMS key for the signing secrets, with rotation on; its ARN (the local
    runtime and the tests: the stack makes its own, infra/signing.py)."""
    arn: str = kms.create_key(Description=SIGNING_KEY_DESCRIPTION, KeyUsage="ENCRYPT_DECRYPT")["KeyMetadata"]["Arn"]
    kms.enable_key_rotation(KeyId=arn)
    return arn


def _context(tenant: str, secret_id: str) -> dict[str, str]:
    return {"sundial:tenant": tenant, "sundial:secret": secret_id}


class KmsSecretValues:
    """Values encrypted with the KMS key ``key_arn``; an item stores base64 of the ciphertext."""

    scheme = SCHEME

    def __init__(self, key_arn: str, kms: Any | None = None, *, randbytes: Callable[[int], bytes] = os.urandom) -> None:
        self.key_arn = key_arn
        self._kms = kms
        self._randbytes = randbytes

    @property
    def kms(self) -> Any:
        if self._kms is None:
            self._kms = boto3.client("kms")
        return self._kms

    def made(self, tenant: str, secret_id: str) -> str | None:
        try:
            answer = self.kms.generate_data_key_without_plaintext(
                KeyId=self.key_arn, NumberOfBytes=SECRET_BYTES, EncryptionContext=_context(tenant, secret_id)
            )
        except (ClientError, BotoCoreError) as exc:
            raise StorageUnavailable(f"KMS did not make a signing secret: {type(exc).__name__}") from exc
        return base64.b64encode(answer["CiphertextBlob"]).decode("ascii")

    def shown(self, tenant: str, secret_id: str) -> tuple[bytes, str | None]:
        key = self._randbytes(SECRET_BYTES)
        try:
            answer = self.kms.encrypt(KeyId=self.key_arn, Plaintext=key, EncryptionContext=_context(tenant, secret_id))
        except (ClientError, BotoCoreError) as exc:
            raise StorageUnavailable(f"KMS did not encrypt the new signing secret: {type(exc).__name__}") from exc
        return key, base64.b64encode(answer["CiphertextBlob"]).decode("ascii")

    def key(self, tenant: str, secret_id: str, stored: str | None) -> bytes:
        if stored is None:
            raise StorageUnavailable(f"signing secret {secret_id} of tenant {tenant} has no ciphertext")
        try:
            answer = self.kms.decrypt(
                KeyId=self.key_arn,
                CiphertextBlob=base64.b64decode(stored),
                EncryptionContext=_context(tenant, secret_id),
            )
        except (ClientError, BotoCoreError) as exc:
            raise StorageUnavailable(f"KMS did not decrypt signing secret {secret_id}: {type(exc).__name__}") from exc
        plaintext: bytes = answer["Plaintext"]
        return plaintext
