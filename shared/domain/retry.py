"""Retry policy: which outcomes are retried, and how long to wait before the next attempt."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from enum import StrEnum

MAX_ATTEMPTS = 10
MAX_INTERVAL_SECONDS = 3600
MAX_AGE_SECONDS = 86_400
"""A retry policy's ``max_age_seconds`` is at most a day (as EventBridge Scheduler's
``MaximumEventAgeInSeconds``: 60 to 86,400)."""
MIN_AGE_SECONDS = 60
MAX_DELAY_SECONDS = 900.0
"""A retry waits at most this long: SQS's largest DelaySeconds (longer waits would need the table)."""

RETRYABLE_STATUS = frozenset({408, 429})
RETRY_AFTER_STATUS = frozenset({429, 503})
"""The answers whose ``Retry-After`` the next attempt waits for."""
MAX_RETRY_AFTER_SECONDS = 3600.0
"""A receiver's ``Retry-After`` is believed up to an hour."""


def retry_after_seconds(value: str | None, now: datetime) -> float | None:
    """How long a ``Retry-After`` header asks to wait (RFC 9110, 10.2.3: delay-seconds or an
    HTTP-date), at most an hour, from ``now``; None when there is none or it cannot be read."""
    if value is None:
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():
        seconds = float(int(text))
    else:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # "-0000": UTC, time zone unknown (RFC 5322)
            when = when.replace(tzinfo=UTC)
        seconds = (when - now).total_seconds()
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_SECONDS)


class Backoff(StrEnum):
    FIXED = "fixed"
    EXPONENTIAL = "exponential"


class Exhausted(StrEnum):
    """Which bound ended an occurrence's retries."""

    ATTEMPTS = "attempts"
    AGE = "age"


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 3
    backoff: Backoff = Backoff.EXPONENTIAL
    interval_seconds: float = 2.0
    max_age_seconds: int | None = None
    """No attempt starts later than this after the occurrence's due time (the EventBridge
    Scheduler API's ``MaximumEventAgeInSeconds``); None: attempts alone bound the retries."""

    def too_old(self, due_ms: int, start_ms: int) -> bool:
        """Whether an attempt starting at ``start_ms`` is past the occurrence's age limit."""
        return self.max_age_seconds is not None and start_ms - due_ms > self.max_age_seconds * 1000

    def delay_after(self, attempt: int) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based) before the next one."""
        if attempt < 1:
            raise ValueError("attempts are numbered from 1")
        if self.backoff is Backoff.FIXED:
            delay = self.interval_seconds
        else:
            delay = self.interval_seconds * 2 ** min(attempt - 1, 30)
        return min(delay, MAX_DELAY_SECONDS)

    def has_attempt_after(self, attempt: int) -> bool:
        return attempt < self.max_attempts


def next_attempt_due(
    policy: RetryPolicy, attempt: int, attempt_due_ms: int, ended_ms: int, retry_after_ms: int | None = None
) -> int:
    """The instant attempt ``attempt + 1`` is due, after attempt ``attempt`` (due at
    ``attempt_due_ms``) failed and was over at ``ended_ms``: the backoff after the attempt was
    due, so attempts keep their schedule whatever their calls took (fixed 2 s: attempts due 2 s
    apart); when that instant had passed before the attempt was over (an answer slower than the
    backoff, a timeout), the backoff after its end, so the receiver is never called again at
    once; and never before a receiver's ``Retry-After`` (``retry_after_ms``, from the end)."""
    backoff_ms = round(policy.delay_after(attempt) * 1000)
    due = attempt_due_ms + backoff_ms
    if due < ended_ms:
        due = ended_ms + backoff_ms
    if retry_after_ms is not None:
        due = max(due, ended_ms + retry_after_ms)
    return due


def is_retryable_status(status: int) -> bool:
    """408, 429 and 5xx are retried; any other answer is final (2xx success, 4xx failure)."""
    return status in RETRYABLE_STATUS or 500 <= status <= 599
