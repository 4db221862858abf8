"""Serve a Sundial job's processor: Sundial calls it once per step of a job (``pre`` once, ``shard``
for each shard, ``notify`` at each progress threshold, ``post`` once) and takes its JSON answer.

    from sundial_receiver.jobs import JobProcessorReceiver, ShardingProcessor

    class Reindex(ShardingProcessor):
        def sharding_process(self, ctx):
            return {"indexed": len(ctx.items)}  # answered as {"result": {"indexed": ...}}

    receiver = JobProcessorReceiver("whsec_...", Reindex())
    answer = receiver.handle(body_bytes, headers)  # send back answer.status, answer.content()

Each step's ``Idempotency-Key`` (``<job id>:<phase>``, ``:<level>:<shard>`` for a shard,
``:<threshold>`` for a notify) is the same on every retry of the step: the receiver runs the
method once per key and answers a retry with the very bytes it answered first.
"""

from __future__ import annotations

import abc
import json
import logging
import re
import threading
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from sundial_receiver.dedupe import AnswerStore, MemoryStore
from sundial_receiver.receiver import Answer
from sundial_receiver.verify import Headers, VerificationError, Verifier

log = logging.getLogger("sundial_receiver.jobs")

PHASES = ("pre", "shard", "notify", "post")
MAX_ANSWER_BYTES = 6 * 1024 * 1024
"""Sundial reads at most this many bytes of a processor's answer (6 MiB, 6,291,456 bytes: its
``MAX_ANSWER_BYTES``, Lambda's own limit on a synchronous answer); a longer one fails the job."""
DEFAULT_ANSWER_TTL_SECONDS = 24 * 3600
"""How long a step's answer is kept for a retry: Sundial retries a step within seconds."""
DEFAULT_LEASE_SECONDS = 900
"""How long a step stays claimed while its method runs (a process that dies meanwhile holds it
this long): at least the longest step (a Lambda function runs at most 900 s)."""
PROGRESS_TIMEOUT_SECONDS = 5.0
IDEMPOTENCY_KEY_HEADER = "Idempotency-Key"
ATTEMPT_HEADER = "Sundial-Attempt"
STEP_PREFIX = "job-step:"
"""Namespaces a step's key in the store, so one store can serve callbacks and processors."""
MAX_ERROR_TYPE_CHARS = 100
"""A failure's answer names the exception's type in at most this many characters."""
MAX_ERROR_MESSAGE_CHARS = 500
"""A failure's answer carries at most this many characters of the exception's message."""
REDACTED = "[redacted]"
"""What a failure's answer says in place of a secret the message held."""


class InvalidJobCall(ValueError):
    """A body that is not a phase call of Sundial's (not JSON, an unknown phase, a member missing
    or of the wrong type): answered 400, which Sundial does not retry."""


class InvalidAnswer(ValueError):
    """What a method returned cannot be the phase's answer (not JSON, or ``pre``'s data not
    levels): answered 422, which Sundial does not retry (it would refuse the answer too)."""


class AnswerTooLarge(InvalidAnswer):
    """An answer longer than Sundial reads (:data:`MAX_ANSWER_BYTES`): refused here, with its size,
    rather than cut short by Sundial into JSON it cannot read."""

    def __init__(self, phase: str, size: int, limit: int = MAX_ANSWER_BYTES) -> None:
        super().__init__(
            f"the {phase} answer is {size} bytes as JSON, more than the {limit} bytes (6 MiB) Sundial "
            "takes from a processor: keep large results elsewhere (S3...) and answer a reference"
        )
        self.phase, self.size, self.limit = phase, size, limit


def step_key(content: Mapping[str, Any]) -> str:
    """The step's ``Idempotency-Key`` as Sundial makes it from the body (shared/delivery/processor.py,
    ``PhaseCall.step``): what a ``lambda`` processor, which gets no headers, de-duplicates on."""
    phase = str(content["phase"])
    parts = [str(content["job_id"]), phase]
    if phase == "shard":
        parts += [str(content["level"]), str(content["shard"])]
    if phase == "notify":
        progress = content["progress"]
        parts.append(str(progress.get("threshold", progress.get("percent"))))
    return ":".join(parts)


def _int(content: Mapping[str, Any], name: str, *, where: str = "", minimum: int = 0) -> int:
    value = content.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidJobCall(f"{where}{name} is required, an integer from {minimum}")
    return value


def _list(content: Mapping[str, Any], name: str) -> list[Any]:
    value = content.get(name)
    if not isinstance(value, list):
        raise InvalidJobCall(f"{name} is required, a list")
    return value


class JobLogger(logging.LoggerAdapter[logging.Logger]):
    """Logs with the step in the message (``[job 01J... shard 0/3] ...``) and in ``extra``
    (``job_id``, ``phase``, ``level``, ``shard``) for structured handlers."""

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        extra = dict(self.extra or {})
        extra.update(kwargs.get("extra") or {})
        kwargs["extra"] = extra
        return f"[{extra.get('step')}] {msg}", kwargs


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A progress report is never redirected (its bearer token goes to the URL Sundial gave)."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect())


MAX_ACKNOWLEDGED = 100
"""Command ids one progress report acknowledges at most (Sundial takes up to 100)."""
MAX_PROGRESS_ANSWER_BYTES = 262_144
"""A progress report's answer is read up to this: its commands are at most 20 of about 4.2 KB."""


@dataclass(frozen=True)
class Command:
    """A command sent to the job (``POST /v1/jobs/{job_id}/commands``), as a progress report's
    answer carried it: what :meth:`JobContext.commands` returns."""

    id: str
    command: str
    args: dict[str, Any]
    sent_at: str

    @classmethod
    def of(cls, value: Any) -> Command | None:
        """One of an answer's ``commands``; None for what is not one (logged by the caller)."""
        if not isinstance(value, dict) or not isinstance(value.get("command"), str):
            return None
        args = value.get("args")
        return cls(
            str(value.get("id", "")),
            value["command"],
            args if isinstance(args, dict) else {},
            str(value.get("sent_at", "")),
        )


@dataclass(eq=False)
class JobContext:
    """One phase call: what Sundial sent, and what the method may do with it. ``data`` is ``pre``'s
    (the submitted levels of items), ``items`` a ``shard``'s, ``results`` ``post``'s (every
    shard's result, in order); ``done_shards``, ``total_shards``, ``percent`` and ``threshold``
    a ``notify``'s. ``progress`` is a shard call's ``{"url", "token"}`` for :meth:`report_progress`
    (None when Sundial sent none). ``attempt`` is Sundial's, when it says (None otherwise)."""

    job_id: str
    phase: str
    key: str = ""
    """The step's ``Idempotency-Key``: the same on every retry of this step."""
    level: int | None = None
    shard: int | None = None
    shard_count: int | None = None
    data: Any = None
    items: list[Any] | None = None
    results: list[Any] | None = None
    progress: dict[str, Any] | None = None
    done_shards: int | None = None
    total_shards: int | None = None
    percent: int | None = None
    threshold: int | None = None
    attempt: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Members this kit does not know yet (a newer Sundial's): kept, never refused."""
    progress_timeout: float = PROGRESS_TIMEOUT_SECONDS
    logger: JobLogger = field(init=False, repr=False)
    _result: Any = field(default=None, init=False, repr=False)
    _has_result: bool = field(default=False, init=False, repr=False)
    _cancelled: bool = field(default=False, init=False, repr=False)
    _told_no_progress: bool = field(default=False, init=False, repr=False)
    _commands: list[Command] = field(default_factory=list, init=False, repr=False)
    _commands_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _received: set[str] = field(default_factory=set, init=False, repr=False)
    """The ids of the commands the answers carried: one carried again is not handed out again."""
    _unacknowledged: list[str] = field(default_factory=list, init=False, repr=False)
    """Ids received that no report answered 2xx has acknowledged yet (sent with the next report)."""

    KNOWN = frozenset(
        {"job_id", "phase", "level", "shard", "shard_count", "items", "data", "results", "progress", "attempt"}
    )

    def __post_init__(self) -> None:
        where = f"job {self.job_id} {self.phase}"
        if self.phase == "shard":
            where += f" {self.level}/{self.shard}"
        elif self.phase == "notify":
            where += f" {self.threshold}%"
        self.logger = JobLogger(
            log, {"job_id": self.job_id, "phase": self.phase, "level": self.level, "shard": self.shard, "step": where}
        )

    @classmethod
    def from_dict(
        cls,
        content: Any,
        *,
        key: str | None = None,
        attempt: int | None = None,
        progress_timeout: float = PROGRESS_TIMEOUT_SECONDS,
    ) -> JobContext:
        """The context of a phase call's body (parsed JSON); ``key`` defaults to :func:`step_key`."""
        if not isinstance(content, dict):
            raise InvalidJobCall("a phase call is a JSON object")
        job_id, phase = content.get("job_id"), content.get("phase")
        if not isinstance(job_id, str) or not job_id:
            raise InvalidJobCall("job_id is required, a string")
        if phase not in PHASES:
            raise InvalidJobCall(f"phase is one of {', '.join(PHASES)}, not {phase!r}")
        given = content.get("attempt", attempt)
        fields: dict[str, Any] = {
            "job_id": job_id,
            "phase": phase,
            "attempt": given if isinstance(given, int) and not isinstance(given, bool) else None,
            "progress_timeout": progress_timeout,
            "extra": {k: v for k, v in content.items() if k not in cls.KNOWN},
        }
        if phase == "pre":
            fields["data"] = content.get("data")
        elif phase == "shard":
            fields["level"] = _int(content, "level")
            fields["shard"] = _int(content, "shard")
            fields["shard_count"] = _int(content, "shard_count", minimum=1)
            fields["items"] = _list(content, "items")
            progress = content.get("progress")
            if isinstance(progress, dict) and isinstance(progress.get("url"), str):
                fields["progress"] = progress
        elif phase == "notify":
            progress = content.get("progress")
            if not isinstance(progress, dict):
                raise InvalidJobCall("progress is required, an object")
            for name in ("done_shards", "total_shards", "percent"):
                fields[name] = _int(progress, name, where="progress.")
            # the multiple crossed (a Sundial before thresholds sent the percent alone)
            fields["threshold"] = _int(progress, "threshold", where="progress.") if "threshold" in progress else None
            if fields["threshold"] is None:
                fields["threshold"] = fields["percent"]
        else:
            fields["results"] = _list(content, "results")
        try:
            fields["key"] = key or step_key(content)
        except (KeyError, AttributeError) as exc:
            raise InvalidJobCall(f"no step key in the call: {exc}") from None
        return cls(**fields)

    @classmethod
    def parse(cls, body: bytes | str, **kwargs: Any) -> JobContext:
        """The context of a phase call's body (bytes or text of JSON)."""
        try:
            content = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise InvalidJobCall(f"the body is not JSON: {exc}") from None
        return cls.from_dict(content, **kwargs)

    def set_result(self, value: Any) -> None:
        """The step's answer, when the method does not return it (a method that returns something
        other than None answers that instead)."""
        self._result, self._has_result = value, True

    @property
    def cancelled(self) -> bool:
        """True once a progress report was answered ``cancelled`` (or 401: the job has ended):
        stop early and return what is done (Sundial keeps a finished shard's result)."""
        return self._cancelled

    def commands(self) -> list[Command]:
        """The commands sent to the job (``POST /v1/jobs/{job_id}/commands``) that the answers to
        this context's progress reports carried since the last call, oldest first: each is
        returned once (an answer may carry one again, when the report that acknowledges it did
        not reach Sundial in time: its id was seen, it is passed over). The next report
        acknowledges the ids received, and Sundial drops them; one a processor never acknowledges
        (its answer was lost and it never reported again within Sundial's 60 s lease) is offered
        to the next report of any shard: a processor that must act on a command once across
        shards dedupes by :attr:`Command.id`. Thread-safe: workers of one shard may report and
        read side by side."""
        with self._commands_lock:
            taken, self._commands = self._commands, []
        return taken

    def report_progress(self, done_items: int) -> bool:
        """POST ``{"done_items": done_items}`` to the shard call's progress URL (its token as a
        bearer); answers :attr:`cancelled`. A call without a progress URL sends nothing (logged
        once); a network failure or an unexpected answer is logged, never raised."""
        if isinstance(done_items, bool) or not isinstance(done_items, int) or done_items < 0:
            raise TypeError("done_items is an integer from 0")
        url = (self.progress or {}).get("url")
        if not isinstance(url, str) or not url:
            if not self._told_no_progress:
                self._told_no_progress = True
                self.logger.info("report_progress: this call carries no progress URL, nothing is sent")
            return self._cancelled
        if not url.lower().startswith(("https://", "http://")):
            self.logger.warning("progress not reported: %r is not an http(s) URL", url)
            return self._cancelled
        with self._commands_lock:
            acknowledging = self._unacknowledged[:MAX_ACKNOWLEDGED]
        sent = self._post(url, done_items, acknowledging)
        if sent is None:
            return self._cancelled
        status, answer = sent
        if 200 <= status < 300 and acknowledging:  # Sundial has them: not sent again
            with self._commands_lock:
                done = set(acknowledging)
                self._unacknowledged = [i for i in self._unacknowledged if i not in done]
        if status == 401:  # the token is refused: the job has ended (cancelled, failed...)
            if not self._cancelled:
                self.logger.info("progress refused (401): the job has ended, cancelled from now on")
            self._cancelled = True
        elif status in (200, 202):
            self._heard(answer)
        else:
            self.logger.warning("progress not reported (%d items): HTTP %d", done_items, status)
        return self._cancelled

    def _heard(self, answer: bytes) -> None:
        """What a report's answer says: cancelled, and the commands it carries."""
        try:
            said = json.loads(answer) if answer.strip() else {}
        except ValueError:
            said = {}
        if not isinstance(said, dict):
            return
        if said.get("cancelled") is True:
            if not self._cancelled:
                self.logger.info("progress answered cancelled: the job was cancelled")
            self._cancelled = True
        listed = said.get("commands")
        received = [c for c in map(Command.of, listed) if c is not None] if isinstance(listed, list) else []
        if received:
            with self._commands_lock:
                for command in received:
                    if command.id and command.id in self._received:
                        if command.id not in self._unacknowledged:  # its acknowledgment was lost
                            self._unacknowledged.append(command.id)
                        continue
                    self._commands.append(command)
                    if command.id:
                        self._received.add(command.id)
                        self._unacknowledged.append(command.id)

    def _post(self, url: str, done_items: int, acknowledged: list[str] | None = None) -> tuple[int, bytes] | None:
        """The progress report's status and answer, or None when it could not be sent (logged)."""
        request = urllib.request.Request(  # noqa: S310 (the scheme is checked by the caller)
            url,
            data=json.dumps(
                {"done_items": done_items, **({"acknowledged": acknowledged} if acknowledged else {})}
            ).encode("utf-8"),
            method="POST",
            headers={
                "Content-Type": "application/json",
                "Authorization": f"Bearer {(self.progress or {}).get('token', '')}",
            },
        )
        try:
            try:
                with _OPENER.open(request, timeout=self.progress_timeout) as response:
                    return int(response.status), bytes(response.read(MAX_PROGRESS_ANSWER_BYTES))
            except urllib.error.HTTPError as exc:
                exc.close()
                return exc.code, b""
        except Exception as exc:  # the network's failure is never the processor's
            self.logger.warning("progress not reported (%d items): %s", done_items, exc)
            return None


class ShardingProcessor(abc.ABC):
    """A job's processor: implement :meth:`sharding_process`, and the other phases if you need
    them. Each method takes the :class:`JobContext` and returns the step's value (or passes it to
    ``ctx.set_result``); the kit answers it in the phase's shape:

    ========== ============================ =====================================================
    phase      the method returns            answered
    ========== ============================ =====================================================
    ``pre``    None, or the levels of items  ``{}`` (keep the submitted data) or ``{"data": ...}``
    ``shard``  the shard's result (any JSON) ``{"result": ...}``
    ``notify`` anything (ignored)            ``{}``
    ``post``   the job's result (any JSON)   ``{"result": ...}``
    ========== ============================ =====================================================
    """

    def pre_process(self, ctx: JobContext) -> Any:
        """Once, before any shard: ``ctx.data`` is the submitted levels of items; return new levels
        (a list of lists) to replace them, or None to keep them."""
        return None

    @abc.abstractmethod
    def sharding_process(self, ctx: JobContext) -> Any:
        """Each shard (``ctx.level``, ``ctx.shard`` of ``ctx.shard_count``, its ``ctx.items``):
        return the shard's result."""

    def notify(self, ctx: JobContext) -> Any:
        """At each multiple of the job's ``notify_every_percent`` crossed (``ctx.threshold``,
        ``ctx.done_shards`` of ``ctx.total_shards``): Sundial ignores the answer."""
        return None

    def post_process(self, ctx: JobContext) -> Any:
        """Once, after every shard: ``ctx.results`` is every shard's result, in order; return the
        job's result."""
        return None


def _method(processor: ShardingProcessor, phase: str) -> Any:
    return {
        "pre": processor.pre_process,
        "shard": processor.sharding_process,
        "notify": processor.notify,
        "post": processor.post_process,
    }[phase]


def shaped(phase: str, value: Any) -> dict[str, Any]:
    """The phase's answer for a method's value (see :class:`ShardingProcessor`)."""
    if phase == "pre":
        if value is None:
            return {}
        if not isinstance(value, list) or not all(isinstance(level, list) for level in value):
            raise InvalidAnswer("pre_process returns the levels of items, a list of lists (or None)")
        return {"data": value}
    if phase == "notify":
        return {}
    return {"result": value}


def encode(phase: str, value: Any, limit: int = MAX_ANSWER_BYTES) -> bytes:
    """The answer's bytes (compact JSON, UTF-8), refused beyond ``limit``."""
    try:
        raw = json.dumps(shaped(phase, value), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, InvalidAnswer):
            raise
        raise InvalidAnswer(f"the {phase} answer is not JSON: {exc}") from None
    data = raw.encode("utf-8")
    if len(data) > limit:
        raise AnswerTooLarge(phase, len(data), limit)
    return data


def _bounded(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def error_of(exc: BaseException, secrets: Iterable[str] = ()) -> dict[str, str]:
    """What a failure answers of the exception a method raised: ``{"type", "message"}``, its
    type's name and its message (``str(exc)``: ``'user_id'`` for ``KeyError('user_id')``), every
    occurrence of each of ``secrets`` replaced by :data:`REDACTED`, then cut to
    :data:`MAX_ERROR_TYPE_CHARS` and :data:`MAX_ERROR_MESSAGE_CHARS` (an ellipsis marks a cut).
    No traceback: the kit logs it, Sundial is not told it."""
    try:
        message = str(exc)
    except Exception:  # an exception whose __str__ raises is still answered
        message = ""
    kept = sorted({s for s in secrets if isinstance(s, str) and s}, key=lambda s: (-len(s), s))
    # one pass, longest first: a shorter secret is never looked for inside a longer one, nor inside
    # what replaced it; redacted before the cut, so a cut never leaves part of a secret behind
    pattern = re.compile("|".join(re.escape(s) for s in kept)) if kept else None

    def redact(text: str) -> str:
        return pattern.sub(REDACTED, text) if pattern is not None else text

    return {
        "type": _bounded(redact(type(exc).__name__), MAX_ERROR_TYPE_CHARS),
        "message": _bounded(redact(message), MAX_ERROR_MESSAGE_CHARS),
    }


@dataclass(frozen=True)
class JobAnswer(Answer):
    """What to answer Sundial for a phase call: 200 with the step's answer (``raw``; ``replayed``
    when it is a retry's), 400 (not a phase call), 401 (not verified), 422 (the method's value
    cannot be an answer: too large, not JSON), 500 (the method raised: ``{"error": {"type",
    "message"}, "key"}``, see :func:`error_of`; Sundial retries it) or 503 (the step is running
    already: Sundial retries it)."""

    context: JobContext | None = field(default=None, compare=False)
    replayed: bool = False


class JobCallFailed(RuntimeError):
    """A ``lambda`` processor's call that is not answered (its method raised, or the step is running
    already): raised, so Lambda reports a function error and Sundial retries the step. Its message
    (Lambda's ``errorMessage``) is the answer's ``message``, or the answer as JSON when it has
    none: for a method that raised, ``{"error": {"type", "message"}, "key"}``, which Sundial reads
    as it reads an HTTP processor's. ``answer`` is the :class:`JobAnswer`."""

    def __init__(self, answer: JobAnswer) -> None:
        message = answer.body.get("message")
        if not isinstance(message, str):
            message = json.dumps(answer.body, separators=(",", ":"), ensure_ascii=False)
        super().__init__(message)
        self.answer = answer


class JobProcessorReceiver:
    """``JobProcessorReceiver(secrets, processor, store)``: ``secrets`` is the tenant's ``whsec_``
    signing secret (several during a rotation, or a :class:`Verifier`; None for a ``lambda``
    processor, whose calls are not signed); ``store`` keeps each step's answer (a
    :class:`MemoryStore` by default; a ``DynamoDBStore`` or ``RedisStore`` when several processes
    serve the processor). :meth:`handle` serves a signed HTTP call, :meth:`invoke` a Lambda
    invocation."""

    def __init__(
        self,
        secrets: str | bytes | Iterable[str | bytes] | Verifier | None,
        processor: ShardingProcessor,
        store: AnswerStore | None = None,
        ttl: int = DEFAULT_ANSWER_TTL_SECONDS,
        lease: int = DEFAULT_LEASE_SECONDS,
        progress_timeout: float = PROGRESS_TIMEOUT_SECONDS,
    ) -> None:
        if not isinstance(processor, ShardingProcessor):
            raise TypeError("processor is a ShardingProcessor (implement sharding_process)")
        if secrets is None:
            self.verifier: Verifier | None = None
        else:
            self.verifier = secrets if isinstance(secrets, Verifier) else Verifier(secrets)
        self.processor = processor
        self.store: AnswerStore = store if store is not None else MemoryStore()
        self.ttl, self.lease, self.progress_timeout = ttl, lease, progress_timeout

    def handle(self, body: bytes | str, headers: Headers) -> JobAnswer:
        """Verify a signed HTTP phase call (the exact body bytes received), parse it, and answer it:
        the step's method runs once per ``Idempotency-Key`` (the verified ``webhook-id``)."""
        if self.verifier is None:
            raise RuntimeError("this receiver has no signing secret: it serves Lambda invocations only")
        try:
            key = self.verifier.verify(body, headers)
        except VerificationError as exc:
            return JobAnswer(401, {"error": exc.reason, "message": str(exc)})
        try:
            context = JobContext.parse(body, key=key, attempt=_attempt(headers), progress_timeout=self.progress_timeout)
        except InvalidJobCall as exc:
            return JobAnswer(400, {"error": "invalid_job_call", "message": str(exc)})
        return self.serve(context)

    def invoke(self, event: Any) -> dict[str, Any]:
        """Answer a ``lambda`` processor's invocation (the event is the phase call's body; not
        signed: IAM says who may invoke). The method runs once per step; a method that raises
        makes it raise :class:`JobCallFailed`, whose message is the failure's answer (the
        exception's type and message, bounded and redacted: never its traceback), so Lambda
        reports a function error and Sundial retries the step; so do a step running already
        (:class:`JobCallFailed`) and a refused answer (:class:`InvalidAnswer`)."""
        context = (
            JobContext.parse(event, progress_timeout=self.progress_timeout)
            if isinstance(event, str | bytes)
            else JobContext.from_dict(event, progress_timeout=self.progress_timeout)
        )
        answer = self.serve(context, reraise=True)
        if answer.status != 200 or answer.raw is None:
            raise JobCallFailed(answer)
        result: dict[str, Any] = json.loads(answer.raw)
        return result

    def serve(self, context: JobContext, *, reraise: bool = False) -> JobAnswer:
        """Answer a parsed (and verified) call: the saved answer of its step if there is one, 503
        while it runs elsewhere, else run the phase's method and save what it answered (500 with
        the exception's type and message when it raised; ``reraise``: a refused answer raises
        :class:`InvalidAnswer` rather than answer 422)."""
        stored_key = STEP_PREFIX + context.key
        saved = self.store.load(stored_key)
        if saved is None and not self.store.claim(stored_key, self.lease):
            saved = self.store.load(stored_key)  # saved between the load and the claim
            if saved is None:
                context.logger.info("step %s is running already: answered 503 for Sundial's retry", context.key)
                message = f"step {context.key} is running already (a retry of a call still under way)"
                body = {"error": "in_flight", "key": context.key, "message": message}
                return JobAnswer(503, body, raw=None, headers=(("Retry-After", "1"),), context=context)
        if saved is not None:
            context.logger.info("step %s answered before: the same answer again", context.key)
            return JobAnswer(200, {}, raw=saved, context=context, replayed=True)
        try:
            value = _method(self.processor, context.phase)(context)
            if value is None and context._has_result:
                value = context._result
            raw = encode(context.phase, value)
        except InvalidAnswer as exc:
            self.store.release(stored_key)
            context.logger.error("step %s refused: %s", context.key, exc)
            if reraise:
                raise
            body = {"error": "answer_too_large" if isinstance(exc, AnswerTooLarge) else "invalid_answer"}
            return JobAnswer(422, {**body, "key": context.key, "message": str(exc)}, context=context)
        except Exception as exc:
            self.store.release(stored_key)
            context.logger.exception("step %s failed: released for Sundial's retry", context.key)
            failure: dict[str, Any] = {"error": error_of(exc, self._secrets(context)), "key": context.key}
            return JobAnswer(500, failure, context=context)
        try:
            self.store.save(stored_key, raw, self.ttl)
        except Exception:  # answered all the same: a retry (if any) runs the step again
            context.logger.exception("step %s's answer could not be saved", context.key)
            try:
                self.store.release(stored_key)
            except Exception:
                context.logger.exception("step %s could not be released either", context.key)
        return JobAnswer(200, {}, raw=raw, context=context)

    def _secrets(self, context: JobContext) -> list[str]:
        """What a failure's answer never echoes: the signing secrets (as text writes them) and the
        call's progress token."""
        known = list(self.verifier.secret_texts()) if self.verifier is not None else []
        token = (context.progress or {}).get("token")
        if isinstance(token, str):
            known.append(token)
        return known


def _attempt(headers: Headers) -> int | None:
    """Sundial's attempt, should a phase call carry ``Sundial-Attempt`` (it does not today)."""
    lowered = ATTEMPT_HEADER.lower()
    value = headers.get(ATTEMPT_HEADER) or next((v for k, v in headers.items() if k.lower() == lowered), None)
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


__all__ = [
    "DEFAULT_ANSWER_TTL_SECONDS",
    "DEFAULT_LEASE_SECONDS",
    "MAX_ANSWER_BYTES",
    "MAX_ERROR_MESSAGE_CHARS",
    "MAX_ERROR_TYPE_CHARS",
    "REDACTED",
    "AnswerTooLarge",
    "InvalidAnswer",
    "InvalidJobCall",
    "JobAnswer",
    "JobCallFailed",
    "JobContext",
    "JobLogger",
    "JobProcessorReceiver",
    "ShardingProcessor",
    "encode",
    "error_of",
    "shaped",
    "step_key",
]
