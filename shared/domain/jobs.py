"""A sharded batch job's facts (docs/jobs.md): its status, what its steps need, what a client
starts and reads, and how a call to its processor fails. Pure: no I/O."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from shared.domain.sharding import PROCESSOR_RETRIES, Sharding

JsonValue = Any


class JobStatus(StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


WATCHED_JOBS = (JobStatus.RUNNING, JobStatus.FAILED)
"""The job statuses the status index holds (docs/status-index.md): ``?status=`` of these reads it,
and they are counted exactly; the others read the listing index."""


def crossed_thresholds(done: int, total: int, step: int) -> list[int]:
    """The multiples of ``step`` (percent) that the ``done``-th of ``total`` shards crosses on
    ending: those in ``((done - 1) * 100 // total, done * 100 // total]``. Each multiple is crossed
    by exactly one shard's end, whatever order parallel shards end in, and a shard that crosses
    several (3 shards, every 10 %: 10, 20 and 30 at the first) crosses each."""
    if step <= 0 or total <= 0 or not 0 < done <= total:
        return []
    before, now = (done - 1) * 100 // total, done * 100 // total
    return [threshold for threshold in range(step, 101, step) if before < threshold <= now]


def thresholds_between(before: int, after: int, total: int, step: int) -> list[int]:
    """The multiples of ``step`` (percent) that items done moving from ``before`` to ``after`` of
    ``total`` cross: those in ``(before * 100 // total, after * 100 // total]``."""
    if step <= 0 or total <= 0 or after <= before:
        return []
    low, high = before * 100 // total, min(after, total) * 100 // total
    return [threshold for threshold in range(step, 101, step) if low < threshold <= high]


class JobStep(StrEnum):
    """A job's steps, as its failures name them."""

    PRE = "pre"
    SHARD = "shard"
    NOTIFY = "notify"
    POST = "post"


ANSWER_EXCERPT_CHARS = 300
"""How much of a processor's answer a failure keeps (on one line): enough to read the error the
processor gave, never a 6 MB body on the job's item."""
PROCESSOR_ATTEMPTS = 1 + PROCESSOR_RETRIES
"""The attempts a step has when its processor answers something worth retrying."""


def excerpt(body: bytes | str | None, limit: int = ANSWER_EXCERPT_CHARS) -> str | None:
    """The start of an answer's body as text on one line, at most ``limit`` characters (an
    ellipsis marks a cut); None for an empty one."""
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else (body or "")
    line = " ".join(text[: limit * 4].split())
    if not line:
        return None
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


REPORTED_TYPE_CHARS = 100
"""How much of the type a processor says it raised a failure keeps (the receiver kit sends at most
as much)."""
REPORTED_MESSAGE_CHARS = 500
"""How much of the message a processor says it raised a failure keeps (the receiver kit sends at
most as much)."""
REPORTED_ANSWER_BYTES = 16 * 1024
"""A failed answer longer than this is not read for a reported error (the receiver kit's is under
1 KiB): an answer is the processor's to write, up to 6 MB."""


def one_line(text: str, limit: int) -> str:
    """``text`` on one line, control characters as spaces, at most ``limit`` characters (an
    ellipsis marks a cut)."""
    printable = "".join(ch if ch.isprintable() else " " for ch in text[: limit * 4])
    line = " ".join(printable.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


@dataclass(frozen=True)
class ReportedError:
    """The error a processor says its step raised: the ``{"error": {"type", "message"}}`` of a
    failed answer (what the receiver kit answers for a method that raised, ``KeyError`` and
    ``'user_id'``), each on one line and bounded (:data:`REPORTED_TYPE_CHARS`,
    :data:`REPORTED_MESSAGE_CHARS`)."""

    type: str
    message: str

    def __str__(self) -> str:
        return f"{self.type}: {self.message}" if self.message else self.type

    def to_dict(self) -> dict[str, str]:
        return {"type": self.type, "message": self.message}

    @classmethod
    def from_dict(cls, data: Any) -> ReportedError | None:
        """``{"type": "KeyError", "message": "'user_id'"}``, bounded; None for anything else (a
        type that is not a non-empty string, a message that is not a string)."""
        if not isinstance(data, dict):
            return None
        kind, message = data.get("type"), data.get("message")
        if not isinstance(kind, str) or not isinstance(message, str):
            return None
        kind = one_line(kind, REPORTED_TYPE_CHARS)
        if not kind:
            return None
        return cls(kind, one_line(message, REPORTED_MESSAGE_CHARS))

    @classmethod
    def of_answer(cls, body: bytes | str | None) -> ReportedError | None:
        """The error a failed answer reports: its body is a JSON object whose ``error`` is
        ``{"type", "message"}``; None for any other body (which the failure keeps as it always
        has, as the start of its answer), or one over :data:`REPORTED_ANSWER_BYTES`."""
        if not body:
            return None
        raw = body.encode("utf-8", errors="replace") if isinstance(body, str) else body
        if len(raw) > REPORTED_ANSWER_BYTES:
            return None
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):  # not JSON, not UTF-8, nested past the parser's depth
            return None
        return cls.from_dict(data.get("error")) if isinstance(data, dict) else None


@dataclass(frozen=True)
class StepFailure:
    """Which step of a job failed, on which attempt, with what answer: what ``GET /v1/jobs/{id}``
    answers as ``failure`` (and, in words, as ``error``)."""

    step: JobStep
    reason: str
    """Why, in words: "the processor answered HTTP 500", "the processor could not be called:
    connection refused", "the answer is not JSON"..."""
    level: int | None = None
    shard: int | None = None
    attempt: int | None = None
    """1 for the first call of the step; None when not known (a failure outside the step)."""
    status: int | None = None
    """The processor's HTTP status, when it answered."""
    answer: str | None = None
    """The start of its answer (:data:`ANSWER_EXCERPT_CHARS` at most)."""
    retryable: bool = False
    """The step was retried on this kind of failure (so it failed on its last attempt)."""
    threshold: int | None = None
    """A notify's percent."""
    error: ReportedError | None = None
    """The error the processor said it raised (``KeyError: 'user_id'``), when its answer said."""

    def where(self) -> str:
        if self.step is JobStep.SHARD:
            if self.shard is None:
                return "level ?" if self.level is None else f"level {self.level}"
            return f"shard {self.shard} of level {self.level}"
        if self.step is JobStep.NOTIFY:
            return "the notify" + (f" at {self.threshold} %" if self.threshold is not None else "")
        return f"the {self.step.value} step"

    def sentence(self) -> str:
        """The failure in words: ``the pre step failed on attempt 3 of 3: the processor answered
        HTTP 500: <the start of its answer>``, or with the error the processor reported, ``...
        attempt 3 of 3: KeyError: 'user_id' (the processor answered HTTP 500)``."""
        attempt = ""
        if self.attempt is not None:
            of = f" of {PROCESSOR_ATTEMPTS}" if self.retryable and self.attempt <= PROCESSOR_ATTEMPTS else ""
            attempt = f" on attempt {self.attempt}{of}"
        if self.error is not None:
            return f"{self.where()} failed{attempt}: {self.error} ({self.reason})"
        answer = f": {self.answer}" if self.answer else ""
        return f"{self.where()} failed{attempt}: {self.reason}{answer}"

    def at(self, attempt: int) -> StepFailure:
        return replace(self, attempt=attempt)

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step.value,
            "level": self.level,
            "shard": self.shard,
            "attempt": self.attempt,
            "status": self.status,
            "answer": self.answer,
            "reason": self.reason,
            "retryable": self.retryable,
            "threshold": self.threshold,
            **({"error": self.error.to_dict()} if self.error is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: Any) -> StepFailure | None:
        """A failure written by :meth:`to_dict`; None for anything else."""
        if not isinstance(data, dict) or data.get("step") not in {s.value for s in JobStep}:
            return None
        if not isinstance(data.get("reason"), str):
            return None

        def number(name: str) -> int | None:
            value = data.get(name)
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        answer = data.get("answer")
        return cls(
            step=JobStep(data["step"]),
            reason=data["reason"][:1000],
            level=number("level"),
            shard=number("shard"),
            attempt=number("attempt"),
            status=number("status"),
            answer=excerpt(answer) if isinstance(answer, str) else None,
            retryable=data.get("retryable") is True,
            threshold=number("threshold"),
            error=ReportedError.from_dict(data.get("error")),
        )

    def message(self) -> str:
        """How the failure crosses from the job function to its ``fail`` step: a Lambda error's
        ``errorMessage`` (which Step Functions hands over as the error's cause), as JSON that
        :meth:`from_message` reads back, its sentence included for whoever reads it in a log."""
        return json.dumps({"message": self.sentence(), "failure": self.to_dict()}, ensure_ascii=False)

    @classmethod
    def from_message(cls, text: str | None) -> StepFailure | None:
        if not text or not text.startswith("{"):
            return None
        try:
            data = json.loads(text)
        except ValueError:
            return None
        return cls.from_dict(data.get("failure")) if isinstance(data, dict) else None


class ProcessorError(Exception):
    """A processor call failed; ``failure`` says where and how (None when raised with a bare
    message). Its message is the failure's :meth:`StepFailure.message`."""

    def __init__(self, what: str | StepFailure) -> None:
        self.failure = what if isinstance(what, StepFailure) else None
        super().__init__(what.message() if isinstance(what, StepFailure) else what)

    def at(self, attempt: int) -> ProcessorError:
        """The same failure, known to be the step's ``attempt``-th."""
        if self.failure is None:
            return self
        return type(self)(self.failure.at(attempt))


class ProcessorRetryable(ProcessorError):
    """The processor failed in a way worth retrying (timeout, refused connection, 408/429/5xx).
    The state machine's Retry blocks match this exception's name."""

    def __init__(self, what: str | StepFailure) -> None:
        super().__init__(replace(what, retryable=True) if isinstance(what, StepFailure) else what)


class ProcessorFailed(ProcessorError):
    """The processor refused the step (other 4xx, or an answer that is not the contract's)."""


@dataclass(frozen=True)
class JobSpec:
    """What a job's steps need from the job item."""

    job_id: str
    sharding: Sharding
    notify_every_percent: int | None
    status: JobStatus = JobStatus.RUNNING
    """As read when the step began: a step of a job that is no longer running calls no processor."""
    levels_counted: bool = False
    """Its item counts shards done per level (``pre`` planned it so): a shard adds to its level's
    count. A job planned before the item had per-level counts only counts in all."""
    items_counted: bool = False
    """Its item counts items done per shard (``pre`` planned it so): a shard's end sets its count."""
    progress_key: str | None = None
    """The job's own key for its shards' progress tokens (docs/jobs.md, section 7)."""
    api_url: str | None = None
    """Where the API that started the job answers: a shard call's progress URL is under it (none
    for a job a task's target started: its shards report no progress)."""
    commands_pending: bool = False
    """Commands were sent to it that no progress report has taken yet (shared/domain/job_commands.py)."""


@dataclass(frozen=True)
class JobRequest:
    """A validated ``POST /v1/jobs`` body."""

    processor: Any
    """An ``HttpTarget`` or ``LambdaTarget``."""
    processor_dict: dict[str, Any]
    data: list[list[JsonValue]]
    sharding: Sharding
    notify_every_percent: int | None
    name: str | None = None


@dataclass(frozen=True)
class NewJobRecord:
    """A job as it is first recorded."""

    job_id: str
    tenant: str
    name: str | None
    processor: dict[str, Any]
    sharding: Sharding
    notify_every_percent: int | None
    created_ms: int
    progress_key: str | None = None
    api_url: str | None = None


INLINE_RESULT_BYTES = 64 * 1024
"""Post's result is kept on the job's item up to this size as JSON, and beyond it in the jobs
bucket: a DynamoDB item holds 400 KB in all ("Service, account, and table quotas in Amazon
DynamoDB"), a processor's answer may be 6 MB, and a result on the item is read, and paid for, with
every read of the job (64 KiB: 16 read units a strongly consistent read)."""
RESULT_LINK_SECONDS = 3_600
"""How long a link to a result kept in the bucket works."""


@dataclass(frozen=True)
class JobView:
    """A job as a client reads it."""

    id: str
    name: str | None
    status: JobStatus
    done_shards: int
    total_shards: int | None
    level: int | None
    result: JsonValue
    error: str | None
    created_ms: int
    finished_ms: int | None
    finishing: bool = False
    """The ``post`` step has begun: the job can no longer be cancelled."""
    result_ref: str | None = None
    """Where a result too large for the job's item is kept (the jobs bucket's key); ``result`` is
    then None."""
    result_bytes: int | None = None
    """The size of such a result, as JSON."""
    result_url: str | None = None
    """A link to such a result that its reader can follow (for a while): the API's answer."""
    processor: dict[str, Any] | None = None
    """The processor as it was given (the API's form, secrets included: the API redacts them)."""
    sharding: Sharding | None = None
    notify_every_percent: int | None = None
    pre_started_ms: int | None = None
    pre_finished_ms: int | None = None
    """When ``pre``'s answer was planned into shards."""
    levels: tuple[LevelProgress, ...] | None = None
    """Per level, once ``pre`` has planned them."""
    post_started_ms: int | None = None
    failure: StepFailure | None = None
    """Which step failed it, and how (a failed job)."""
    notify_failure: StepFailure | None = None
    """The last ``notify`` that failed (a failed notify does not fail the job)."""
    done_items: int | None = None
    """Items done: each shard's latest report, or its size once it ended (None: not counted)."""
    total_items: int | None = None
    """Items in all shards, once ``pre`` has planned them."""

    @property
    def pre(self) -> Span | None:
        if self.pre_started_ms is None and self.pre_finished_ms is None:
            return None
        return Span(self.pre_started_ms, self.pre_finished_ms)

    @property
    def post(self) -> Span | None:
        """``post``'s start, and its end: the job's, once it ended after ``post`` began."""
        if self.post_started_ms is None:
            return None
        ended = self.finished_ms if self.status in (JobStatus.SUCCEEDED, JobStatus.FAILED) else None
        return Span(self.post_started_ms, ended)

    def level_spans(self) -> list[Span]:
        """When each level ran. Levels run strictly in order, each once the one before it has
        ended (the first once ``pre`` has): a level starts when its predecessor ends, and ends
        when its last shard is counted (a level with no shards, as it starts)."""
        spans: list[Span] = []
        started = self.pre_finished_ms
        for level in self.levels or ():
            ended = None
            if started is not None and level.done_shards >= level.total_shards:
                ended = level.last_done_ms if level.total_shards and level.last_done_ms else started
            spans.append(Span(started, ended))
            started = ended
        return spans


@dataclass(frozen=True)
class LevelProgress:
    """One level of a job: its shards, those done, and when the last of them was counted."""

    level: int
    total_shards: int
    done_shards: int
    last_done_ms: int | None = None


@dataclass(frozen=True)
class Span:
    """When a step began and ended (None: not yet, or not known)."""

    started_ms: int | None
    finished_ms: int | None


def failure_outside_step(view: JobView, reason: str) -> StepFailure:
    """A failure that no processor call reported (the job function failed or timed out, the
    execution ended): the step it came in, as far as the job's item tells -- ``pre`` until it
    planned the shards, then the first level with shards left, then ``post``."""
    if view.post_started_ms is not None:
        return StepFailure(JobStep.POST, reason)
    if view.levels is None:
        return StepFailure(JobStep.PRE, reason)
    level = next((lv.level for lv in view.levels if lv.done_shards < lv.total_shards), None)
    if level is None:  # every shard done: what came next was post
        return StepFailure(JobStep.POST, reason)
    return StepFailure(JobStep.SHARD, reason, level=level)


def cancel_refusal(view: JobView) -> str | None:
    """Why the job cannot be cancelled (``409 job_finished``), or None when it can: a running
    job whose ``post`` step has not begun is cancelled, and a cancelled one is cancelled again
    harmlessly, as a task is (docs/jobs.md, "Cancelling")."""
    if view.status is JobStatus.CANCELLED:
        return None
    if view.status is not JobStatus.RUNNING:
        return f"job {view.id} has already ended ({view.status.value})"
    if view.finishing:
        return f"job {view.id} is finishing: its post step has begun"
    return None


@dataclass(frozen=True)
class JobPage:
    items: list[JobView]
    next_cursor: str | None
    cursors: tuple[str, ...] = ()
    """The cursor that goes on after each item (as :class:`shared.domain.tasks.Page`)."""
