"""Field types and bounds that request models of several routes share: a time zone, a limit's
name, and integers given as JSON numbers."""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, Field

from shared.domain import tasks as t
from shared.domain.limits import NAME_PATTERN

MAX_ZONE_LENGTH = 64

LIMIT_NAME = NAME_PATTERN.pattern
ZONE = r"^[A-Za-z0-9_+\-]+(/[A-Za-z0-9_+\-]+)*$"


def whole(value: object) -> object:
    """JSON's ``5.0`` is the integer 5 (JSON Schema's ``integer`` admits it) for a strict integer
    field, which still refuses ``5.5``, ``"5"`` and ``false``."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


FailureCount = Annotated[int, Field(strict=True, ge=1, le=t.MAX_FAILURE_COUNT), BeforeValidator(whole)]
"""1 to MAX_FAILURE_COUNT, an integer (``5.0`` is 5; ``"5"`` and ``true`` are refused)."""
