"""A task's tags: a string map (``{"team": "orders", "env": "prod"}``) that lists and bulk operations
select tasks by (``GET /v1/tasks?tag=team:orders``, ``POST /v1/tasks:pause`` with ``{"tag": ...}``).
Pure: no I/O.

The rules follow AWS's for resource tags ("Tag naming limits and requirements",
https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html): a key of 1 to 128 characters,
a value of 0 to 256, case-sensitive, of letters, digits, spaces and ``_ . : / = + - @``. Three
differences, each with its reason:

* **at most 10 tags a task**, not 50: each tag is an index entry written with the task (one more
  write unit per tag at every registration and every change, docs/bulk.md), so ten bound a
  100-task batch's extra writes at 1,000;
* **no ``:`` in a key**: the list's filter is ``tag=<key>:<value>``, split at its first ``:``
  (a value may hold ``:``). AWS's reserved ``aws:`` prefix cannot occur either;
* **ASCII letters, digits and space only**: "a letter" is read three ways by JSON Schema's regular
  expressions (ECMA-262: a word character is ASCII), Python's (Unicode) and the validator's (Rust's), so the
  OpenAPI document's pattern could not say what the API takes; ASCII reads the same everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from shared.domain.errors import ValidationFailed

MAX_TAGS = 10
MAX_KEY_LENGTH = 128
MAX_VALUE_LENGTH = 256
SEPARATOR = ":"
"""Between a key and its value in a filter (``tag=team:orders``)."""
KEY_PATTERN = rf"^[A-Za-z0-9 _./=+\-@]{{1,{MAX_KEY_LENGTH}}}$"
VALUE_PATTERN = rf"^[A-Za-z0-9 _.:/=+\-@]{{0,{MAX_VALUE_LENGTH}}}$"
"""What a key and a value are (in the OpenAPI document too); checked with ``re.fullmatch``, as
Python's ``$`` also matches before a final newline."""

RULES = (
    f"at most {MAX_TAGS} tags; a key is 1 to {MAX_KEY_LENGTH} characters, a value 0 to {MAX_VALUE_LENGTH}, "
    "of ASCII letters, digits, spaces and _ . / = + - @ (a value may also hold :)"
)
"""The rules in words (the API's descriptions, the errors)."""


def key_problem(key: str) -> str | None:
    """What is wrong with ``key`` as a tag key (None: nothing)."""
    if re.fullmatch(KEY_PATTERN[1:-1], key):
        return None
    if not 1 <= len(key) <= MAX_KEY_LENGTH:
        return f"a tag key is 1 to {MAX_KEY_LENGTH} characters"
    hint = " (: separates a key from its value in a filter)" if SEPARATOR in key else ""
    return f"a tag key holds ASCII letters, digits, spaces and _ . / = + - @{hint}"


def value_problem(value: str) -> str | None:
    """What is wrong with ``value`` as a tag value (None: nothing)."""
    if re.fullmatch(VALUE_PATTERN[1:-1], value):
        return None
    if len(value) > MAX_VALUE_LENGTH:
        return f"a tag value is at most {MAX_VALUE_LENGTH} characters"
    return "a tag value holds ASCII letters, digits, spaces and _ . : / = + - @"


def check_tags(tags: Mapping[str, str], member: str = "tags") -> dict[str, str]:
    """``tags`` as a task keeps them (sorted by key), or a :class:`ValidationFailed` naming
    ``member`` (too many) or ``member.<key>`` (a bad key or value)."""
    if len(tags) > MAX_TAGS:
        raise ValidationFailed.on(member, f"has {len(tags)} tags; at most {MAX_TAGS}")
    for key, value in tags.items():
        problem = key_problem(key) or value_problem(value)
        if problem is not None:
            raise ValidationFailed.on(f"{member}.{key}", problem)
    return dict(sorted(tags.items()))


def parse_filter(text: str, member: str = "tag") -> tuple[str, str]:
    """``<key>:<value>`` (split at the first ``:``) as a key and a value, or a
    :class:`ValidationFailed` naming ``member``."""
    key, separator, value = text.partition(SEPARATOR)
    if not separator:
        raise ValidationFailed.on(member, f"is <key>:<value> (team:orders; an empty value: team:), not {text!r}")
    problem = key_problem(key) or value_problem(value)
    if problem is not None:
        raise ValidationFailed.on(member, problem)
    return key, value


def has_tag(tags: Mapping[str, str], tag: tuple[str, str]) -> bool:
    """Whether ``tags`` hold ``tag`` (key and value), exactly (tags are case-sensitive)."""
    key, value = tag
    return tags.get(key) == value


FILTER_PATTERN = f"^{KEY_PATTERN[1:-1]}{SEPARATOR}{VALUE_PATTERN[1:-1]}$"
"""``<key>:<value>``, as the list's ``tag`` and the CLI's ``--tag`` take it."""
