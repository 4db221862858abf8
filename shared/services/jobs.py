"""The steps of a job's state machine (docs/jobs.md, section 2): what each Lambda task state
does, behind ports for the job item, the job's objects and the processor, so the orchestration
is tested without AWS. The Step Functions definition (infra/jobs.py) calls these in order:
``pre`` once, ``shard`` for every shard of every level (levels in order), ``post`` once, and
``fail`` when anything fails for good."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from shared.domain.codec import compact_json, target_from_dict
from shared.domain.errors import JobFinished, JobNotFound, StorageUnavailable, TooManyCommands, Unauthorized
from shared.domain.job_commands import MAX_PENDING_COMMANDS, JobCommand, Refusal, checked_args, checked_command
from shared.domain.jobs import (
    INLINE_RESULT_BYTES,
    RESULT_LINK_SECONDS,
    JobPage,
    JobRequest,
    JobSpec,
    JobStatus,
    JobStep,
    JobView,
    JsonValue,
    NewJobRecord,
    ProcessorError,
    ProcessorFailed,
    StepFailure,
    cancel_refusal,
    crossed_thresholds,
    excerpt,
    failure_outside_step,
    thresholds_between,
)
from shared.domain.own import OwnResources
from shared.domain.progress import ShardRef, is_genuine, new_progress_key, progress_token, token_shard
from shared.domain.sharding import Sharding, plan
from shared.observability import logger
from shared.services.ports.jobs import Blobs, ExecutionStarter, JobNotifier, JobRecords, JobStore, Processor


def levels_key(job_id: str) -> str:
    return f"jobs/{job_id}/levels.json"


def items_key(job_id: str, level: int, shard: int) -> str:
    return f"jobs/{job_id}/L{level}/S{shard}.json"


def result_key(job_id: str, level: int, shard: int) -> str:
    return f"jobs/{job_id}/results/L{level}/S{shard}.json"


def final_result_key(job_id: str) -> str:
    """Post's result, when it is too large for the job's item."""
    return f"jobs/{job_id}/result.json"


@dataclass
class JobSteps:
    store: JobStore
    blobs: Blobs
    processor: Processor
    known: JobSpec | None = None
    """The job's spec when whoever built the steps has just read it (one read less a step)."""

    def _spec(self, job_id: str) -> JobSpec:
        if self.known is not None and self.known.job_id == job_id:
            return self.known
        return self.store.spec(job_id)

    def _call(self, job_id: str, body: dict[str, JsonValue], attempt: int) -> dict[str, Any]:
        """The processor's answer to one call of a step; a failure says it was the step's
        ``attempt``-th (1 for the first: Step Functions retries the step, not the call)."""
        try:
            return self.processor.call(job_id, body)
        except ProcessorError as exc:
            raise exc.at(attempt) from exc

    def pre(self, job_id: str, attempt: int = 1) -> dict[str, JsonValue]:
        """Call ``pre`` with the submitted data; its answer's ``data`` (or the submitted data, if
        it answers ``{}``) is split into shards, each written as its own object. Returns what the
        Maps iterate over: per level, its shard numbers."""
        spec = self._spec(job_id)
        if spec.status is not JobStatus.RUNNING:  # cancelled before it began: nothing to run
            logger.info("job not running: pre skipped", extra={"job_id": job_id, "status": spec.status.value})
            return {"job_id": job_id, "levels": [], "total_shards": 0}
        self.store.pre_started(job_id)
        submitted = self.blobs.get(levels_key(job_id))
        answer = self._call(job_id, {"job_id": job_id, "phase": "pre", "data": submitted}, attempt)
        levels = answer.get("data", submitted)
        if not isinstance(levels, list) or not all(isinstance(level, list) for level in levels):
            reason = "pre must answer {'data': [[...], ...]} (items grouped by level) or {}"
            raise ProcessorFailed(
                StepFailure(JobStep.PRE, reason, attempt=attempt, answer=excerpt(compact_json(answer)))
            )
        shards = plan(levels, spec.sharding)
        for level, level_shards in enumerate(shards):
            for shard, items in enumerate(level_shards):
                self.blobs.put(items_key(job_id, level, shard), items)
        counts = [len(level_shards) for level_shards in shards]
        total_items = sum(len(shard_items) for level_shards in shards for shard_items in level_shards)
        self.store.planned(job_id, counts, total_items=total_items)
        return {
            "job_id": job_id,
            "levels": [{"level": level, "shard_count": n, "shards": list(range(n))} for level, n in enumerate(counts)],
            "total_shards": sum(counts),
        }

    def shard(self, job_id: str, level: int, shard: int, shard_count: int, attempt: int = 1) -> dict[str, JsonValue]:
        """Call ``shard`` with the shard's items, keep its result, count it, notify on a crossing.
        A shard of a job that is no longer running (cancelled) calls nothing and is not counted."""
        spec = self._spec(job_id)
        status = spec.status
        if status is not JobStatus.RUNNING:
            logger.info("job not running: shard skipped", extra={"job_id": job_id, "status": status.value})
            return {"job_id": job_id, "level": level, "shard": shard, "skipped": True}
        items = self.blobs.get(items_key(job_id, level, shard))
        body = {
            "job_id": job_id,
            "phase": "shard",
            "level": level,
            "shard": shard,
            "shard_count": shard_count,
            "items": items,
        }
        if spec.progress_key and spec.api_url and spec.items_counted:
            body["progress"] = {
                "url": f"{spec.api_url}/v1/jobs/{job_id}/progress",
                "token": progress_token(spec.progress_key, ShardRef(job_id, level, shard)),
            }
        answer = self._call(job_id, body, attempt)
        self.blobs.put(result_key(job_id, level, shard), answer.get("result"))
        counted = len(items) if spec.items_counted and isinstance(items, list) else None
        done, total = self.store.shard_done(job_id, level, shard, by_level=spec.levels_counted, items=counted)
        self._notify(job_id, done, total)
        return {"job_id": job_id, "level": level, "shard": shard}

    def _notify(self, job_id: str, done: int, total: int) -> None:
        """A ``notify`` for each multiple of ``notify_every_percent`` this shard's end crosses,
        the first one included, each claimed once (a retried shard does not send it again, nor
        does a threshold a progress report crossed first)."""
        step = self._spec(job_id).notify_every_percent
        if not step:
            return
        percent = done * 100 // total if total else 0
        for threshold in crossed_thresholds(done, total, step):
            if self.store.claim_notification(job_id, threshold):
                self._send_notify(
                    job_id, {"done_shards": done, "total_shards": total, "percent": percent, "threshold": threshold}
                )

    def notify_items(self, job_id: str, threshold: int, done_items: int, total_items: int) -> dict[str, JsonValue]:
        """Send the ``notify`` at ``threshold`` that a shard's progress report crossed (the API
        claimed it: docs/jobs.md, section 7), unless the job no longer runs."""
        view = self.store.current(job_id)
        if view is None or view.status is not JobStatus.RUNNING:
            return {"job_id": job_id, "notified": False}
        progress = {
            "done_shards": view.done_shards,
            "total_shards": view.total_shards,
            "done_items": done_items,
            "total_items": total_items,
            "percent": done_items * 100 // total_items,
            "threshold": threshold,
        }
        self._send_notify(job_id, progress)
        return {"job_id": job_id, "notified": True}

    def _send_notify(self, job_id: str, progress: dict[str, JsonValue]) -> None:
        try:
            self.processor.call(job_id, {"job_id": job_id, "phase": "notify", "progress": progress})
        except ProcessorError as exc:
            # best effort: the work is done and counted, and the job goes on; the job's page
            # shows the last notify that failed
            logger.warning("notify failed", extra={"job_id": job_id, "progress": progress, "error": str(exc)})
            if exc.failure is not None:  # called once, never retried
                self.store.notify_failed(job_id, replace(exc.failure, attempt=1, retryable=False))

    def post(self, job_id: str, attempt: int = 1) -> dict[str, JsonValue]:
        """Call ``post`` with every shard's result in level and shard order; the job succeeds.
        The step first claims the job (from then on it cannot be cancelled); a cancelled job's
        post calls nothing."""
        if not self.store.claim_post(job_id):
            logger.info("job not running: post skipped", extra={"job_id": job_id})
            return {"job_id": job_id, "status": JobStatus.CANCELLED.value}
        shards_per_level = self.store.shards_per_level(job_id)
        results = [
            self.blobs.get(result_key(job_id, level, shard))
            for level, count in enumerate(shards_per_level)
            for shard in range(count)
        ]
        answer = self._call(job_id, {"job_id": job_id, "phase": "post", "results": results}, attempt)
        result = answer.get("result")
        size = len(compact_json(result).encode())
        if size > INLINE_RESULT_BYTES:  # beyond what the job's item should hold: the bucket keeps it
            self.blobs.put(final_result_key(job_id), result)
            recorded = self.store.succeeded(job_id, None, result_ref=final_result_key(job_id), result_bytes=size)
        else:
            recorded = self.store.succeeded(job_id, result)
        if not recorded:
            logger.warning("job had ended before post's answer was recorded", extra={"job_id": job_id})
        return {"job_id": job_id, "status": JobStatus.SUCCEEDED.value}

    def fail(self, job_id: str, error: str, cause: str | None = None) -> dict[str, JsonValue]:
        """Record the job failed: which step, on which attempt, with what answer, as the failed
        step reported it (a processor's failure, in ``cause``); any other failure (the job
        function's own, a timeout, the execution ending) in the step the job's item says it
        came in."""
        failure = StepFailure.from_message(cause)
        if failure is None:
            reason = f"{error}: {cause}" if cause else error
            view = self.store.current(job_id)
            failure = failure_outside_step(view, reason) if view is not None else StepFailure(JobStep.PRE, reason)
        message = failure.sentence()
        if not self.store.failed(job_id, message, failure):  # cancelled (or ended) first: it stays so
            logger.info("job had ended: failure not recorded", extra={"job_id": job_id, "error": message})
        return {"job_id": job_id, "status": JobStatus.FAILED.value, "error": message}


# --- starting and reading jobs (the API) -----------------------------------------------------


@dataclass
class JobService:
    records: JobRecords
    blobs: Blobs
    starter: ExecutionStarter
    clock: Callable[[], int]
    new_id: Callable[[int], str]
    own: OwnResources = field(default_factory=OwnResources)
    """Sundial's own resources: a processor may not be one."""
    notifier: JobNotifier | None = None
    """Sends a notify a progress report crossed (None: reports cross no threshold)."""

    def start(self, tenant: str, request: JobRequest, api_url: str | None = None) -> JobView:
        """Record the job, keep its data, start its execution. The submitted data is sharded
        once here so a job that cannot be sharded is refused before anything runs (``pre`` may
        still replace it)."""
        self.own.check_processor(request.processor)
        plan(request.data, request.sharding)
        now = self.clock()
        job_id = self.new_id(now)
        try:
            return self.start_as(tenant, job_id, request, now, api_url=api_url)
        except StorageUnavailable as exc:
            self.records.failed(job_id, exc.message)  # the client was told; nothing runs it
            raise

    def start_as(
        self, tenant: str, job_id: str, request: JobRequest, now: int | None = None, api_url: str | None = None
    ) -> JobView:
        """Start the job ``job_id`` once, however often this is called (a task's occurrence
        delivered twice, or retried, starts one job: its id is the run id). With ``api_url`` (the
        API it was started through), its shard calls carry a progress URL there and a token."""
        now = self.clock() if now is None else now
        self.records.create(
            NewJobRecord(
                job_id,
                tenant,
                request.name,
                request.processor_dict,
                request.sharding,
                request.notify_every_percent,
                now,
                progress_key=new_progress_key(),
                api_url=api_url,
            )
        )
        self.blobs.put(levels_key(job_id), request.data)
        try:
            self.starter.start(job_id)
        except Exception as exc:
            raise StorageUnavailable(f"the job could not be started: {exc}") from exc
        view = self.records.view(tenant, job_id)
        assert view is not None
        return view

    def report(self, job_id: str, token: str, done_items: int) -> bool:
        """A shard's progress report (docs/jobs.md, section 7): whether the job is cancelled.
        :class:`Unauthorized` for a token that is not the job's and the shard's, and once the job
        has ended otherwise than cancelled."""
        return self.progress(job_id, token, done_items)[0]

    def send_command(self, tenant: str, job_id: str, command: str, args: dict[str, Any]) -> JobCommand:
        """Keep a command for the tenant's running job, for a shard's next progress report to take
        (docs/jobs.md, section 8). :class:`JobNotFound` (another tenant's or no job),
        :class:`JobFinished` (not running), :class:`TooManyCommands` (as many pending as it may hold)."""
        now = self.clock()
        kept = JobCommand(self.new_id(now), checked_command(command), checked_args(args), now)
        refused = self.records.add_command(tenant, job_id, kept)
        if refused is Refusal.NO_JOB:
            raise JobNotFound(f"no job {job_id}")
        if refused is Refusal.NOT_RUNNING:
            raise JobFinished(f"job {job_id} is not running: a command reaches only a running job")
        if refused is Refusal.FULL:
            raise TooManyCommands(
                f"job {job_id} holds {MAX_PENDING_COMMANDS} commands no progress report has taken yet: "
                "send more once its processor has reported"
            )
        return kept

    def progress(
        self, job_id: str, token: str, done_items: int, acknowledged: Sequence[str] = ()
    ) -> tuple[bool, list[JobCommand]]:
        """:meth:`report`, and the commands offered to this report: ``acknowledged`` (the ids the
        reporting processor received) are dropped; the pending ones, and those a report was
        offered a lease ago (``COMMAND_LEASE_MS``) that no report acknowledged, are offered to
        this one (a running job's answer carries them, a cancelled one's none)."""
        named = token_shard(token)
        found = self.records.find_spec(job_id) if named is not None else None
        if named is None or found is None:
            raise Unauthorized("not a progress token of this job")
        shard, mac = named
        _, spec = found
        if shard.job_id != job_id or not spec.progress_key or not is_genuine(spec.progress_key, shard, mac):
            raise Unauthorized("not a progress token of this job")
        if spec.status is JobStatus.CANCELLED:
            return True, []
        if spec.status is not JobStatus.RUNNING:
            raise Unauthorized("the job has ended")
        counted = self.records.report(job_id, shard.key(), done_items)
        if counted is not None and spec.notify_every_percent and self.notifier is not None:
            before, after, total = counted
            for threshold in thresholds_between(before, after, total, spec.notify_every_percent):
                if not self.records.claim_notification(job_id, threshold):
                    continue  # sent already, by a shard's end or another report
                try:
                    self.notifier.notify(job_id, threshold, after, total)
                except StorageUnavailable as exc:  # best effort, as every notify
                    logger.warning(
                        "notify not sent", extra={"job_id": job_id, "threshold": threshold, "error": str(exc)}
                    )
        # read with the spec (consistently): a command sent after that read is the next report's
        if not spec.commands_pending:
            return False, []
        return False, self.records.take_commands(job_id, acknowledged, self.clock())

    def get(self, tenant: str, job_id: str) -> JobView:
        view = self.records.view(tenant, job_id)
        if view is None:
            raise JobNotFound(f"no job {job_id}")
        return self._linked(view)

    def list(self, tenant: str, limit: int, cursor: str | None, status: JobStatus | None = None) -> JobPage:
        page = self.records.views(tenant, limit, cursor, status)
        return replace(page, items=[self._linked(view) for view in page.items])

    def count(self, tenant: str, status: JobStatus) -> int:
        """How many of the tenant's jobs are ``status``: running or failed (ValueError for another)."""
        return self.records.count(tenant, status)

    def _linked(self, view: JobView) -> JobView:
        """A result kept in the bucket is answered as a link to it (signed, no call), not read:
        up to 6 MB, it could not go in the API's answer (Lambda's 6 MB, the page's bytes)."""
        if view.result_ref is None:
            return view
        return replace(view, result_url=self.blobs.url(view.result_ref, RESULT_LINK_SECONDS))

    def cancel(self, tenant: str, job_id: str) -> JobView:
        """Cancel the tenant's running job (docs/jobs.md, "Cancelling"): one conditional write
        marks it cancelled (from then on no step calls the processor, and no step's outcome
        replaces ``cancelled``), then its execution is stopped. A cancelled job is cancelled
        again harmlessly (its execution stopped once more: a retry completes a stop that
        failed); one that has ended otherwise, or whose post has begun, is :class:`JobFinished`;
        another tenant's or no job :class:`JobNotFound`."""
        cancelled = self.records.cancel(tenant, job_id, self.clock())
        if cancelled is None:
            view = self.records.view(tenant, job_id)
            if view is None:
                raise JobNotFound(f"no job {job_id}")
            if view.status is not JobStatus.CANCELLED:
                raise JobFinished(cancel_refusal(view) or f"job {job_id} cannot be cancelled now")
            cancelled = view
        try:
            self.starter.stop(job_id)
        except Exception as exc:
            # the cancel holds without it: every step reads the status before calling the
            # processor, so a running execution only walks its remaining states idle
            logger.warning("the job's execution could not be stopped", extra={"job_id": job_id, "error": str(exc)})
        return cancelled


def job_request_from_dict(body: dict[str, Any]) -> JobRequest:
    """A job body validated at registration (a task's ``job`` target), read back."""
    processor = target_from_dict(body["processor"])
    return JobRequest(
        processor=processor,
        processor_dict=body["processor"],
        data=body.get("data") or [],
        sharding=Sharding(**(body.get("sharding") or {})),
        notify_every_percent=body.get("notify_every_percent"),
        name=body.get("name"),
    )


@dataclass
class JobTargetStarter:
    """Delivers a task's ``job`` target: starts the job whose id is the occurrence's run id, so
    every attempt and every copy of the occurrence starts the same, single job."""

    service: JobService

    def start_for(self, job_json: str, run_id: str, tenant: str) -> tuple[bool, str | None]:
        """(started, why not): a failure to start is worth retrying. The job is the task's
        tenant's, as if it had started it itself."""
        try:
            self.service.start_as(tenant, run_id, job_request_from_dict(json.loads(job_json)))
        except StorageUnavailable as exc:
            return False, exc.message
        return True, None
