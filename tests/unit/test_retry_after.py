"""Retry-After (RFC 9110, 10.2.3): delay-seconds or an HTTP-date in any of its three formats, at
most an hour; only a 429 or 503 that asked makes the next attempt wait for it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from shared.delivery import Outcome
from shared.domain.retry import MAX_RETRY_AFTER_SECONDS, retry_after_seconds

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 24, 9, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("3", 3.0),
        (" 120 ", 120.0),
        ("0", 0.0),
        ("Tue, 24 Nov 2026 09:00:30 GMT", 30.0),  # IMF-fixdate
        ("Tuesday, 24-Nov-26 09:01:00 GMT", 60.0),  # obsolete RFC 850
        ("Tue Nov 24 09:02:00 2026", 120.0),  # obsolete asctime
        ("Tue, 24 Nov 2026 08:59:00 GMT", 0.0),  # already past: no wait
        ("86400", MAX_RETRY_AFTER_SECONDS),  # a day: an hour at most
    ],
)
def test_a_retry_after_reads_as_its_wait(header: str, seconds: float) -> None:
    assert retry_after_seconds(header, NOW) == seconds


@pytest.mark.parametrize("header", [None, "", "soon", "-5", "1.5", "\uff13", "Tue, 31 Feb 2026 09:00:00 GMT"])
def test_an_unreadable_retry_after_asks_for_nothing(header: str | None) -> None:
    assert retry_after_seconds(header, NOW) is None


def test_an_http_date_written_by_the_standard_library_reads_back_as_the_same_wait() -> None:
    for seconds in (1, 59, 600, 3599):
        header = format_datetime(NOW + timedelta(seconds=seconds), usegmt=True)
        assert retry_after_seconds(header, NOW) == seconds


def test_only_a_429_or_503_carries_the_wait_it_asked_for() -> None:
    assert Outcome.of_status(429, retry_after_s=3.0).retry_after_s == 3.0
    assert Outcome.of_status(503, retry_after_s=30.0).retry_after_s == 30.0
    assert "Retry-After 3 s" in (Outcome.of_status(429, retry_after_s=3.0).error or "")
    assert Outcome.of_status(500, retry_after_s=3.0).retry_after_s is None
    assert Outcome.of_status(429).retry_after_s is None
    assert Outcome.of_status(200, retry_after_s=3.0).retry_after_s is None
    assert Outcome.of_status(400, retry_after_s=3.0).retry_after_s is None
