"""``POST /v1/signing-secrets:rotate`` (docs/tenancy.md, section 4)."""

from __future__ import annotations

from pydantic import Field, field_validator

from shared.api.models.fields import whole
from shared.api.types import Model
from shared.domain.signing import DEFAULT_PREVIOUS_EXPIRES_IN_SECONDS, MAX_PREVIOUS_EXPIRES_IN_SECONDS


class SigningRotateIn(Model):
    """``POST /v1/signing-secrets:rotate``: how long the current secret keeps signing next to the new one."""

    previous_expires_in_seconds: int = Field(
        DEFAULT_PREVIOUS_EXPIRES_IN_SECONDS,
        strict=True,  # false is not 0
        ge=0,
        le=MAX_PREVIOUS_EXPIRES_IN_SECONDS,
        description=(
            "The secrets in use keep signing (a second signature) this long; 0 stops them at once. Up to a week."
        ),
    )

    _whole = field_validator("previous_expires_in_seconds", mode="before")(whole)
