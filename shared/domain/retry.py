"""Retry policy: which outcomes are retried, and how long to wait before the next attempt."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

MAX_ATTEMPTS = 10
MAX_INTERVAL_SECONDS = 3600
MAX_DELAY_SECONDS = 900.0
"""A retry waits at most this long: SQS's largest DelaySeconds (longer waits would need the table)."""

RETRYABLE_STATUS = frozenset({408, 429})


class Backoff(StrEnum):
    FIXED = "fixed"
    EXPONENTIAL = "exponential"


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 3
    backoff: Backoff = Backoff.EXPONENTIAL
    interval_seconds: float = 2.0

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


def is_retryable_status(status: int) -> bool:
    """408, 429 and 5xx are retried; any other answer is final (2xx success, 4xx failure)."""
    return status in RETRYABLE_STATUS or 500 <= status <= 599
