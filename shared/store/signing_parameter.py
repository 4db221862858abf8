"""The "parameter" mode of ``sundial:signingKey`` (the default): no signing secret is stored, each
is derived from one root key of the deployment (docs/tenancy.md, sections 1 and 4). Implements
shared.store.signing.SecretValues.

A secret's key bytes are HMAC-SHA256(root, label, tenant, secret id) (shared.domain.signing
``derived_key``: the fields length-prefixed); its item keeps its id and dates, no ciphertext. The
root is 32 random bytes (base64) in a Parameter Store ``SecureString`` parameter named after the
stack (``/<stack name>/signing-root``), standard tier (no charge), encrypted with the account's AWS
managed key ``aws/ssm`` (no monthly fee). CloudFormation cannot create a ``SecureString``, so the
first function that needs the root creates it (:class:`SigningRoot`): GetParameter; when there is
none, PutParameter without overwrite; when another function made it meanwhile
(``ParameterAlreadyExists``), its value is read. Each process keeps the root once read.

What this mode gives up, against the "kms" mode (a customer-managed key, $1 a month):

* whoever can read the parameter can derive every tenant's secrets, as whoever may decrypt with
  the KMS key could decrypt them; the ``aws/ssm`` key lets every principal of the account decrypt
  through Parameter Store ("Restricting decryption of SecureString parameter values",
  https://docs.aws.amazon.com/systems-manager/latest/userguide/ps-restrict-decryption.html), so
  ``ssm:GetParameter`` on the parameter (or ``ssm:GetParameter*`` on ``*``) is the whole gate, where
  the KMS key had a key policy of the deployment's own;
* the signers (the triggers, the job function) hold the root, so they could derive a secret they
  were never given, where with KMS they could only have KMS make one and decrypt it;
* no per-use audit: CloudTrail records the function's GetParameter at its cold start, not each
  secret it makes (KMS records every Encrypt and Decrypt);
* switching modes changes every tenant's secrets (shared/store/signing.py: a tenant's calls are
  refused until its secret is rotated);
* each new container's first read is a GetParameter, from Parameter Store's default throughput
  (40 a second per account and Region, shared with the account's other reads), where KMS's
  request quota is thousands a second: a throttled read is retried by the SDK, then the call's
  attempt (never sent unsigned).
"""

from __future__ import annotations

import base64
import binascii
import os
import threading
from collections.abc import Callable
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from shared.domain.errors import StorageUnavailable
from shared.domain.signing import ROOT_BYTES, derived_key

SCHEME = "parameter"
ROOT_DESCRIPTION = (
    "Sundial: the root key every tenant's callback signing secret is derived from "
    "(made by the deployment's functions; replacing or deleting it changes every secret)"
)
ROOT_TIER = "Standard"
"""Named in the PutParameter: without it the account's default tier decides, which may be
Advanced ($0.05 a month) or Intelligent-Tiering ("Specifying a default parameter tier",
https://docs.aws.amazon.com/systems-manager/latest/userguide/ps-default-tier.html)."""
NOT_READ = "Parameter Store did not read the signing root"
NOT_MADE = "Parameter Store did not make the signing root"
ROOT_READS = 3
"""GetParameter calls at most before giving up (a second read follows a lost race; a third covers
a read that does not see the winner's write yet)."""


def root_parameter_name(stack_name: str) -> str:
    """The root's parameter: ``/<stack name>/signing-root`` (infra/signing.py names it so)."""
    return f"/{stack_name}/signing-root"


def _error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


class SigningRoot:
    """The deployment's root key, read once per process (made when there is none yet)."""

    def __init__(self, name: str, ssm: Any | None = None, *, randbytes: Callable[[int], bytes] = os.urandom) -> None:
        self.name = name
        self._ssm = ssm
        self._randbytes = randbytes
        self._root: bytes | None = None
        self._lock = threading.Lock()

    @property
    def ssm(self) -> Any:
        if self._ssm is None:
            self._ssm = boto3.client("ssm")
        return self._ssm

    def get(self) -> bytes:
        """The root's 32 bytes: read (or made) by the first caller, kept for the process's life
        (the root never changes while the deployment lives); the others wait for that read."""
        root = self._root
        if root is not None:
            return root
        with self._lock:
            if self._root is None:
                self._root = self._read_or_make()
            return self._root

    def _read_or_make(self) -> bytes:
        for _ in range(ROOT_READS):
            value = self._read()
            if value is not None:
                return self._decoded(value)
            root = self._randbytes(ROOT_BYTES)
            try:
                self.ssm.put_parameter(
                    Name=self.name,
                    Description=ROOT_DESCRIPTION,
                    Value=base64.b64encode(root).decode("ascii"),
                    Type="SecureString",
                    Tier=ROOT_TIER,
                    Overwrite=False,
                )
            except ClientError as exc:
                if _error_code(exc) == "ParameterAlreadyExists":
                    continue  # another function made it first: read that one
                raise StorageUnavailable(f"{NOT_MADE}: {_error_code(exc)}") from exc
            except BotoCoreError as exc:
                raise StorageUnavailable(f"{NOT_MADE}: {type(exc).__name__}") from exc
            return root
        raise StorageUnavailable(f"the signing root {self.name} exists but could not be read")

    def _read(self) -> str | None:
        """The parameter's value; None when there is no such parameter."""
        try:
            answer = self.ssm.get_parameter(Name=self.name, WithDecryption=True)
        except ClientError as exc:
            if _error_code(exc) == "ParameterNotFound":
                return None
            raise StorageUnavailable(f"{NOT_READ}: {_error_code(exc)}") from exc
        except BotoCoreError as exc:
            raise StorageUnavailable(f"{NOT_READ}: {type(exc).__name__}") from exc
        value: str = answer["Parameter"]["Value"]
        return value

    def _decoded(self, value: str) -> bytes:
        """Never a derivation from anything but the 32 bytes this module writes."""
        try:
            root = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            root = b""
        if len(root) != ROOT_BYTES:
            raise StorageUnavailable(f"the signing root {self.name} does not hold {ROOT_BYTES} bytes in base64")
        return root


class ParameterSecretValues:
    """Values derived from the root; an item stores nothing of them."""

    scheme = SCHEME

    def __init__(self, root: SigningRoot) -> None:
        self.root = root

    def made(self, tenant: str, secret_id: str) -> str | None:
        return None

    def shown(self, tenant: str, secret_id: str) -> tuple[bytes, str | None]:
        return derived_key(self.root.get(), tenant, secret_id), None

    def key(self, tenant: str, secret_id: str, stored: str | None) -> bytes:
        return derived_key(self.root.get(), tenant, secret_id)
