"""The API's model of a limit per destination (``PUT /v1/limits/{name}``): the OpenAPI document's
origin pattern and the API's own check read an origin alike (what the document allows is accepted,
but for the hosts no pattern can tell: accepted refusals of the fuzzer), numbers are strict, and a
task's HTTP target carries ``limit`` while a job's processor does not."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from shared.api.models.calls import HttpProcessor, HttpTarget
from shared.api.models.fields import LIMIT_NAME
from shared.api.models.jobs import JobIn
from shared.api.models.limits import ORIGIN, DestinationLimitIn
from shared.domain.limits import NAME_PATTERN

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("origin", "normalised"),
    [
        ("https://api.example.com", "https://api.example.com"),
        ("HTTPS://API.Example.COM:443/", "https://api.example.com"),
        ("http://api.example.com:80", "http://api.example.com"),
        ("http://api.example.com:443", "http://api.example.com:443"),
        ("https://api.example.com:08443", "https://api.example.com:8443"),
        ("http://127.0.0.1:65535", "http://127.0.0.1:65535"),
        ("http://[::1]:8080", "http://[::1]:8080"),
        ("http://h:", "http://h"),
    ],
)
def test_an_origin_the_document_allows_is_accepted_and_normalised(origin, normalised):
    assert re.fullmatch(ORIGIN, origin)
    assert DestinationLimitIn(origin=origin, per_second=1).origin == normalised


@pytest.mark.parametrize(
    "origin",
    [
        "ftp://api.example.com",
        "https://api.example.com/v1",
        "https://api.example.com?x",
        "https://api.example.com#x",
        "https://u:p@api.example.com",
        "https://api.example.com:65536",
        "https://api.example.com:123456",
        "https://",
        "api.example.com",
        " https://api.example.com",
    ],
)
def test_an_origin_the_document_refuses_is_refused(origin):
    assert not re.fullmatch(ORIGIN, origin)
    if origin.strip() != origin:
        return  # surrounding spaces: the document is stricter than the API, which strips them
    with pytest.raises(ValidationError) as refused:
        DestinationLimitIn(origin=origin, per_second=1)
    assert refused.value.errors()[0]["loc"] == ("origin",)


@pytest.mark.parametrize("value", ["5", True, None, float("inf"), float("nan"), 0, 5e-324, 0.00009, 10_000.01])
def test_per_second_is_a_number_above_0_and_at_most_the_maximum(value):
    with pytest.raises(ValidationError):
        DestinationLimitIn.model_validate({"per_second": value})


def test_the_document_and_the_domain_share_the_name_pattern():
    assert NAME_PATTERN.pattern == LIMIT_NAME
    target = HttpTarget.model_validate({"http": {"url": "https://x.example.com/", "limit": "a.b_c-9"}})
    assert target.http.limit == "a.b_c-9"
    with pytest.raises(ValidationError):
        HttpTarget.model_validate({"http": {"url": "https://x.example.com/", "limit": "Not_a_name"}})
    with pytest.raises(ValidationError):
        HttpProcessor.model_validate({"http": {"url": "https://x.example.com/", "limit": "a"}})
    job = JobIn.model_validate({"processor": {"http": {"url": "https://x.example.com/"}}, "data": [[1]]})
    assert isinstance(job.processor, HttpProcessor)
