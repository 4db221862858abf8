"""Signed callbacks, Standard Webhooks v1 (docs/tenancy.md, section 4): pure computation.

A tenant's signing secret is ``whsec_<base64 of 32 random bytes>``; the HMAC key is the decoded
bytes. Every HTTP call Sundial makes carries ``webhook-id``, ``webhook-timestamp`` (Unix seconds
of this attempt) and ``webhook-signature``: ``v1,<base64 HMAC-SHA256(key,
"{id}.{timestamp}.{body}")>`` for every active secret of the tenant, newest first,
space-separated. The body signed is exactly the bytes sent.

In the parameter mode of ``sundial:signingKey`` (the default) a secret's key bytes are not stored
but derived (:func:`derived_key`) from the deployment's root key, the tenant and the secret's id.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass, field

SECRET_PREFIX = "whsec_"  # noqa: S105 (the format's prefix, not a secret)
SECRET_BYTES = 32
"""Standard Webhooks accepts 24 to 64 random bytes; Sundial makes 32 (256 bits)."""
MIN_SECRET_BYTES = 24
MAX_SECRET_BYTES = 64
ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"
SIGNATURE_HEADERS = frozenset({ID_HEADER, TIMESTAMP_HEADER, SIGNATURE_HEADER})
CACHE_SECONDS = 60
"""A tenant's secrets (decrypted or derived) are kept this long per container: a rotation takes
effect within it."""
MAX_PREVIOUS_EXPIRES_IN_SECONDS = 604_800
"""A rotated-out secret stays active at most a week."""
DEFAULT_PREVIOUS_EXPIRES_IN_SECONDS = 86_400
ROOT_BYTES = 32
"""The parameter mode's root key: 32 random bytes (256 bits), the HMAC key of every derivation."""
DERIVATION_LABEL = "sundial signing secret v1"
"""The first field of every derivation: names what is derived and its version, so the root key
derives nothing else with the same inputs (a new scheme takes a new label)."""
FIELD_LENGTH_BYTES = 4


def secret_text(key: bytes) -> str:
    """The secret as the tenant is given it: ``whsec_`` + base64 of the key bytes."""
    if not MIN_SECRET_BYTES <= len(key) <= MAX_SECRET_BYTES:
        raise ValueError(f"a signing key has {MIN_SECRET_BYTES}-{MAX_SECRET_BYTES} bytes, got {len(key)}")
    return SECRET_PREFIX + base64.b64encode(key).decode("ascii")


def derivation_input(tenant: str, secret_id: str) -> bytes:
    """What the root key signs to make a secret: three fields, the label, the tenant and the
    secret's id, each its UTF-8 bytes preceded by their length as 4 bytes big-endian. The lengths
    make the encoding unambiguous: no two (tenant, id) pairs give the same bytes (``("ab", "c")``
    and ``("a", "bc")`` differ), whatever characters they hold."""
    fields = (DERIVATION_LABEL, tenant, secret_id)
    return b"".join(
        len(encoded).to_bytes(FIELD_LENGTH_BYTES, "big") + encoded for encoded in (f.encode("utf-8") for f in fields)
    )


def derived_key(root: bytes, tenant: str, secret_id: str) -> bytes:
    """A secret's key bytes in the parameter mode: HMAC-SHA256(root, :func:`derivation_input`), 32
    bytes (:data:`SECRET_BYTES`). Whoever holds the root can make every tenant's secrets: that is
    the mode's trade (docs/tenancy.md, section 4)."""
    if len(root) != ROOT_BYTES:
        raise ValueError(f"the signing root has {ROOT_BYTES} bytes, got {len(root)}")
    return hmac.new(root, derivation_input(tenant, secret_id), hashlib.sha256).digest()


def secret_key(secret: str) -> bytes:
    """The HMAC key of a ``whsec_`` secret."""
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError("a signing secret starts with whsec_")
    return base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)


def signature(key: bytes, message_id: str, timestamp: int, body: bytes) -> str:
    """One ``v1,<base64>`` signature of ``body`` sent as ``message_id`` at ``timestamp``."""
    signed = b"%s.%d.%s" % (message_id.encode("utf-8"), timestamp, body)
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode("ascii")


@dataclass(frozen=True)
class Signer:
    """Signs one tenant's calls with its active keys (newest first)."""

    keys: tuple[bytes, ...] = field(repr=False)

    def __post_init__(self) -> None:
        if not self.keys:
            raise ValueError("a signer needs at least one key")

    @classmethod
    def of(cls, secrets: Sequence[str]) -> Signer:
        return cls(tuple(secret_key(secret) for secret in secrets))

    def headers(self, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
        """The three Standard Webhooks headers of ``body`` sent as ``message_id`` at ``timestamp``."""
        return {
            ID_HEADER: message_id,
            TIMESTAMP_HEADER: str(timestamp),
            SIGNATURE_HEADER: " ".join(signature(key, message_id, timestamp, body) for key in self.keys),
        }


@dataclass(frozen=True)
class SecretInfo:
    """What anybody may see of a signing secret: never its value."""

    id: str
    created_ms: int
    expires_ms: int | None
    """When it stops signing (set when it was rotated out); None for the current one."""

    def active(self, now_ms: int) -> bool:
        return self.expires_ms is None or self.expires_ms > now_ms


@dataclass(frozen=True)
class NewSecret:
    """A secret just created: the one time its value is shown."""

    info: SecretInfo
    secret: str = field(repr=False)
