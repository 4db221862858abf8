"""Where the OpenAPI document's patterns and the API's own checks could read a string apart,
they read it alike: a cron expression's fields and an HTTP URL's authority (both were found by
the fuzzer: a value the document allows that the API refused)."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from shared.api.models.calls import HttpCall
from shared.api.models.schedules import CRON_FIELDS
from shared.domain.errors import ValidationFailed
from shared.domain.schedules import check_cron

pytestmark = pytest.mark.unit


def schema_allows(pattern: str, value: str) -> bool:
    """JSON Schema's reading of ``pattern`` for these ASCII-only patterns (``$`` is the end)."""
    return re.fullmatch(pattern, value) is not None


@pytest.mark.parametrize(
    ("expression", "valid"),
    [
        ("0 9 * * 1-5", True),
        ("\t0  9 * * mon-fri ", True),
        ("*/5 * * * * *", True),
        ("0\x1c9 * * * *", False),  # str.split() splits on \x1c, JSON Schema's \s does not
        ("0 9 * *\x85*", False),
        ("0 9 * * *\n", False),
        ("0 9 * *", False),
        ("0 9 * * * * 2030", False),
        ("0 9 \uff0a * *", False),  # a fullwidth asterisk
    ],
)
def test_a_cron_expression_is_read_as_the_document_reads_it(expression, valid):
    assert schema_allows(CRON_FIELDS, expression) is valid
    if valid:
        check_cron(expression)
    else:
        with pytest.raises(ValidationFailed):
            check_cron(expression)


@pytest.mark.parametrize(
    "url",
    ["https://example.com/x#frag@ment", "https://example.com/a@b", "https://example.com/?to=a@b.c", "http://h:80#@"],
)
def test_an_at_sign_outside_the_authority_is_not_a_credential(url):
    assert HttpCall(url=url).url == url


@pytest.mark.parametrize("url", ["https://user:pw@example.com/x", "https://user@example.com", "http://a@b#c"])
def test_credentials_in_the_authority_are_refused(url):
    with pytest.raises(ValidationError, match="credentials"):
        HttpCall(url=url)
