"""The request headers the API reads: ``Idempotency-Key`` (a POST that creates) and ``If-Match``
(a task's PATCH)."""

from __future__ import annotations

from shared.domain.errors import ValidationFailed

IDEMPOTENCY_KEY = "Idempotency-Key"
MAX_IDEMPOTENCY_KEY = 255


def parse_version(header: str) -> int:
    """An ``If-Match`` header: the task's ``version`` (as its ``ETag``, quoted or not)."""
    text = header.strip().removeprefix("W/").strip('"')
    if not text.isdigit() or len(text) > 18:
        raise ValidationFailed.on("If-Match", 'is the task\'s version, as GET returns it in ETag (e.g. "3")')
    return int(text)
