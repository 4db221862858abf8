"""A list page as the API answers it: at most ``limit`` items (the store's page) and at most
``page_bytes`` of them in the answer, since Lambda's answer is at most 6 MB ("Lambda quotas": a
synchronous invocation's response) and 100 large items (tasks, dead letters with 128 KB specs,
jobs with their results) can pass it. A page cut short answers the cursor after its last item."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TypeVar

from pydantic import BaseModel

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


def answer_bytes(item: BaseModel) -> int:
    """What ``item`` takes in the function's answer: its compact JSON (as the API's body is
    written: ASCII, ``\\uXXXX`` for the rest), escaped once more as part of the body string
    the Lambda runtime sends back (a quote is then two bytes, a backslash two), and a comma."""
    body = json.dumps(item.model_dump(mode="json", by_alias=True), separators=(",", ":"))
    return len(json.dumps(body)) - 2 + 1


def fitted(
    items: Sequence[T], cursors: Sequence[str], next_cursor: str | None, view: Callable[[T], M], budget: int
) -> tuple[list[M], str | None]:
    """The views of ``items`` up to the one that would take the page past ``budget`` bytes, and the
    cursor to go on from: after the last one answered when the page stops short (the first item
    always goes in: a page is never empty for its size), else the store's ``next_cursor``."""
    answered: list[M] = []
    used = 0
    for index, item in enumerate(items):
        shown = view(item)
        used += answer_bytes(shown)
        if answered and used > budget:
            assert len(cursors) == len(items), "a store's page has a cursor after each item"
            return answered, cursors[index - 1]
        answered.append(shown)
    return answered, next_cursor
