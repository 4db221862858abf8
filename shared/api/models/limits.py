"""``PUT /v1/limits/{name}``: a limit per destination (docs/receivers.md, section 1)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from shared.api.models.fields import whole
from shared.api.types import Model
from shared.domain import tasks as t
from shared.domain.limits import MAX_BURST as MAX_LIMIT_BURST
from shared.domain.limits import MAX_IN_FLIGHT, MAX_PER_SECOND, MIN_PER_SECOND, LimitSpec, parse_origin

PORT = r"(0?[0-9]{0,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
ORIGIN = rf"^[Hh][Tt][Tt][Pp][Ss]?://(\[[0-9A-Fa-f:.]+\]|[^/?#@\[\]:\x00-\x20\x7f]+)(:{PORT})?/?$"
"""An origin: http(s), a host or a bracketed IPv6 address, an optional port, nothing after."""


class DestinationLimitIn(Model):
    """``PUT /v1/limits/{name}``: the limit as a whole (a member left out takes its default)."""

    origin: str | None = Field(
        None,
        min_length=1,
        max_length=t.MAX_URL_LENGTH,
        description="`scheme://host[:port]` (http or https; the scheme's default port may be left out, it is "
        "the same origin): every HTTP target of the tenant whose URL has this origin is held to the limit, "
        "unless it names another. At most one limit per origin (`409 origin_taken`). Without it, the limit "
        "holds only the targets that name it (`limit`).",
        json_schema_extra={"pattern": ORIGIN},  # checked by _origin, with a message that says why
    )
    per_second: float = Field(
        strict=True,
        ge=MIN_PER_SECOND,
        le=MAX_PER_SECOND,
        allow_inf_nan=False,
        description=f"Calls a second, on average (fractions allowed: 0.5 is one call every 2 s; at least "
        f"{MIN_PER_SECOND}, one every {round(1 / MIN_PER_SECOND):,} s).",
    )
    burst: int = Field(
        1,
        strict=True,
        ge=1,
        le=MAX_LIMIT_BURST,
        description="Calls that may go at once after a quiet spell (1: evenly spaced).",
    )
    max_in_flight: int | None = Field(
        None,
        strict=True,
        ge=1,
        le=MAX_IN_FLIGHT,
        description="Calls outstanding at once (a call's end frees its place); null: no such cap.",
    )

    _whole = field_validator("burst", "max_in_flight", mode="before")(whole)

    @field_validator("origin")
    @classmethod
    def _origin(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            urlsplit(value.strip()).hostname  # noqa: B018 (it is the parse that checks)
        except ValueError as exc:  # a bracketed host that is no IPv6 address, or NFKC trouble
            raise ValueError(f"has no valid host ({exc})") from exc
        origin = parse_origin(value)
        # the parser strips spaces, drops tabs and newlines and takes an empty query or fragment: the
        # document's pattern (ECMA-262: its $ is the end, not a final newline) has the last word
        if not re.fullmatch(ORIGIN, value):
            raise ValueError(
                "an origin is scheme://host[:port] and nothing else (no spaces, control characters, ? or #)"
            )
        return origin

    def to_spec(self) -> LimitSpec:
        return LimitSpec(
            per_second=self.per_second, burst=self.burst, max_in_flight=self.max_in_flight, origin=self.origin
        )
