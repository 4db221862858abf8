"""A task's ``tags`` as the API takes them, and the ``tag`` filter (shared/domain/tags.py, the rules)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from shared.domain import tags as tg

TAGS = f"Labels to select the task by (GET /v1/tasks?tag=key:value, the bulk operations): {tg.RULES}. Default: none."

Tags = Annotated[
    dict[
        Annotated[str, Field(pattern=tg.KEY_PATTERN, max_length=tg.MAX_KEY_LENGTH)],
        Annotated[str, Field(pattern=tg.VALUE_PATTERN, max_length=tg.MAX_VALUE_LENGTH)],
    ],
    Field(
        max_length=tg.MAX_TAGS, json_schema_extra={"additionalProperties": False}
    ),  # a key off the pattern is refused
]
"""At most MAX_TAGS keys and values of the tag rules (the patterns say them, in the document too)."""

TAG_FILTER = "key:value (split at the first colon; key:, an empty value): the tasks that have this tag."
