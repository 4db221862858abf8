"""What one call of one target came to: success, a failure worth retrying, or a final failure."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from shared.domain.retry import RETRY_AFTER_STATUS, is_retryable_status

MAX_ERROR_LENGTH = 300
"""``error`` is a short sentence for a run's ``last_error``; longer texts are cut to fit."""


def short(text: str, limit: int = MAX_ERROR_LENGTH - 1) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis marks a cut)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


@dataclass(frozen=True)
class Outcome:
    ok: bool
    retryable: bool
    """A failure the task's retry policy may try again (never set on a success)."""
    status: int | None
    """The receiver's HTTP status (for AWS targets, the AWS API's), when there was an answer."""
    error: str | None
    """Why it failed, as a short human sentence; ``None`` on success."""
    duration_ms: int
    body: bytes = field(default=b"", repr=False)
    """The first bytes of an HTTP answer (at most the client's ``max_response_bytes``)."""
    retry_after_s: float | None = None
    """How long the receiver asked to be left alone (``Retry-After`` on a 429 or 503): the next
    attempt waits at least this long."""
    started: str | None = None
    """The ARN of what a successful call started (a Step Functions execution, an ECS task): the
    run records it (``Run.started``)."""

    def __post_init__(self) -> None:
        if self.ok and (self.retryable or self.error is not None):
            raise ValueError("a success is neither retryable nor has an error")
        if not self.ok and not self.error:
            raise ValueError("a failure says why")
        if self.error is not None:
            object.__setattr__(self, "error", short(self.error))

    @classmethod
    def success(
        cls, status: int | None = None, *, duration_ms: int = 0, body: bytes = b"", started: str | None = None
    ) -> Outcome:
        return cls(True, False, status, None, duration_ms, body, started=started)

    @classmethod
    def retry(cls, error: str, *, status: int | None = None, duration_ms: int = 0, body: bytes = b"") -> Outcome:
        """A failure worth another attempt: a timeout, a refused connection, 408, 429, 5xx, throttling."""
        return cls(False, True, status, error, duration_ms, body)

    @classmethod
    def fail(cls, error: str, *, status: int | None = None, duration_ms: int = 0, body: bytes = b"") -> Outcome:
        """A final failure: retrying would get the same answer (4xx, a refused address, no such queue)."""
        return cls(False, False, status, error, duration_ms, body)

    @classmethod
    def of_status(
        cls, status: int, *, duration_ms: int = 0, body: bytes = b"", retry_after_s: float | None = None
    ) -> Outcome:
        """An HTTP answer: 2xx succeeds, 408, 429 and 5xx are retried (after ``retry_after_s``
        at least, on a 429 or 503 that asked for it), anything else is final."""
        if 200 <= status <= 299:
            return cls.success(status, duration_ms=duration_ms, body=body)
        if is_retryable_status(status):
            wait = retry_after_s if status in RETRY_AFTER_STATUS else None
            error = f"HTTP {status}" + (f", Retry-After {wait:g} s" if wait is not None else "")
            return cls(False, True, status, error, duration_ms, body, wait)
        return cls.fail(f"HTTP {status}", status=status, duration_ms=duration_ms, body=body)

    @property
    def final(self) -> bool:
        """A failure that no retry can fix."""
        return not self.ok and not self.retryable

    def timed(self, duration_ms: int) -> Outcome:
        return replace(self, duration_ms=duration_ms)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form kept on a run (without the response body)."""
        return {
            "ok": self.ok,
            "retryable": self.retryable,
            "status": self.status,
            "error": self.error,
            "duration_ms": self.duration_ms,
        }
