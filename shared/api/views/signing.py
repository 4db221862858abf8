"""``/v1/signing-secrets``: a signing secret (its value only when it is made)."""

from __future__ import annotations

from shared.api.responses import NewSigningSecretOut, SigningSecretOut
from shared.domain.signing import NewSecret, SecretInfo
from shared.domain.times import from_ms


def signing_secret_view(info: SecretInfo) -> SigningSecretOut:
    expires = from_ms(info.expires_ms) if info.expires_ms is not None else None
    return SigningSecretOut(id=info.id, created_at=from_ms(info.created_ms), expires_at=expires)


def new_signing_secret_view(created: NewSecret) -> NewSigningSecretOut:
    return NewSigningSecretOut(id=created.info.id, secret=created.secret, created_at=from_ms(created.info.created_ms))
