"""Building blocks of the API's models: the instant type, "exactly one of" unions, and
validator errors that name the member they are about.

A validator that checks a rule across fields raises :class:`Problem` with the member it is
about (``end``, ``days``...), relative to the model it validates; :func:`shared.api.errors.
from_pydantic` appends it to pydantic's location, so the client reads ``schedule.end`` or
``tasks[3].schedule.repeat.days`` whatever model the rule sits in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    PlainSerializer,
    WithJsonSchema,
)

from shared.domain.errors import ValidationFailed
from shared.domain.times import iso, truncate_ms


class Problem(ValueError):
    """A rule broken by ``member`` (dotted, relative to the model being validated; ``""`` for
    the model itself)."""

    def __init__(self, member: str, message: str) -> None:
        super().__init__(message)
        self.member = member
        self.message = message


@contextmanager
def named(prefix: str) -> Iterator[None]:
    """Turn a domain :class:`ValidationFailed` raised inside into a :class:`Problem` relative to
    the model: the domain names ``schedule.repeat.days``, the model is ``schedule.repeat``."""
    try:
        yield
    except ValidationFailed as exc:
        detail = exc.details[0] if exc.details else None
        if detail is None:
            raise Problem("", exc.message) from exc
        member = detail.field
        if prefix and (member == prefix or member.startswith(prefix + ".")):
            member = member[len(prefix) :].lstrip(".")
        raise Problem(member, detail.message) from exc


class Model(BaseModel):
    """Every API model refuses members it does not know (``additionalProperties: false``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def _utc_ms(value: datetime) -> datetime:
    try:
        return truncate_ms(value.astimezone(UTC))
    except (OverflowError, ValueError) as exc:
        raise ValueError("is out of range (years 1 to 9999 in UTC)") from exc


def _text_or_time(value: object) -> object:
    """A number is not a time here (pydantic would read it as seconds since 1970)."""
    if not isinstance(value, str | datetime):
        raise ValueError("must be an ISO 8601 time with an offset or Z, as a string")
    return value


Instant = Annotated[
    AwareDatetime,
    BeforeValidator(_text_or_time),
    AfterValidator(_utc_ms),
    PlainSerializer(iso, return_type=str),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
"""An ISO 8601 time with an offset or ``Z``; answered in UTC with milliseconds."""


def is_none(value: object) -> bool:
    return value is None


def one_of(kinds: Sequence[str], what: str) -> Discriminator:
    """A discriminator for an object that has exactly one of ``kinds`` as a member: the OpenAPI
    document gets a ``oneOf``; an object with none or several is refused with one message.
    The union's members are tagged ``~<kind>`` (:func:`tag`); the API's field names skip them."""

    def kind(value: Any) -> str | None:
        if isinstance(value, dict):
            present = [k for k in kinds if value.get(k) is not None]
        elif isinstance(value, BaseModel):
            present = [k for k in kinds if getattr(value, _attribute(k), None) is not None]
        else:
            return None
        return tag(present[0]) if len(present) == 1 else None

    return Discriminator(
        kind,
        custom_error_type="one_of",
        custom_error_message=f"give exactly one of {', '.join(kinds)} ({what})",
    )


def tag(kind: str) -> str:
    return f"~{kind}"


def _attribute(kind: str) -> str:
    return "lambda_" if kind == "lambda" else kind


def exactly_one_schema(*members: str) -> Callable[[dict[str, Any]], None]:
    """``json_schema_extra`` saying a model has exactly one of ``members`` set (present and not
    null, as the model's validator counts them): at least one (``anyOf``) and not two (``not``).
    Said so rather than as a ``oneOf`` of partial schemas, which code generators cannot read."""

    def extra(schema: dict[str, Any]) -> None:
        schema["anyOf"] = [_given(member) for member in members]
        schema["not"] = {"anyOf": [_given(a, b) for i, a in enumerate(members) for b in members[i + 1 :]]}

    return extra


def _given(*names: str) -> dict[str, Any]:
    """Every one of ``names`` present and not null."""
    return {"required": list(names), "properties": {name: {"not": {"type": "null"}} for name in names}}
