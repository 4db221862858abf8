"""Jobs in DynamoDB (the job item, ``JobItem``) and their objects in S3 (docs/jobs.md, section 1).
Implements the job ports of shared/services/ports/jobs.py."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import boto3
from botocore.config import Config
from pynamodb.exceptions import DoesNotExist, PutError, PynamoDBException, UpdateError
from pynamodb.expressions.condition import size

from shared.domain.codec import compact_json
from shared.domain.errors import StorageUnavailable
from shared.domain.job_commands import COMMAND_LEASE_MS, MAX_PENDING_COMMANDS, JobCommand, Refusal, offer
from shared.domain.jobs import (
    WATCHED_JOBS,
    JobPage,
    JobSpec,
    JobStatus,
    JobView,
    JsonValue,
    LevelProgress,
    NewJobRecord,
    StepFailure,
)
from shared.domain.sharding import Sharding
from shared.domain.times import now_ms as clock_now_ms
from shared.store import status_index
from shared.store.keys import decode_cursor, encode_cursor, list_sk, status_pk
from shared.store.models import LIST_INDEX_NAME, JobItem, is_conflict


def job_pk(job_id: str) -> str:
    return f"J#{job_id}"


JOB_SK = "J"
TAKE_ATTEMPTS = 3
"""Reads of the job's commands one report makes at most when other writes to them come between
its read and its write (none is lost: they wait for the next report)."""
FILTERED_WINDOW = 50
"""Index entries read per round when a status filter may leave some out."""
LIST_READ_BUDGET = 200
"""Jobs one filtered listing request reads at most (whole windows, at least one); a job item is
at most about 80 KB (a result up to 64 KiB on it), so 200 are about 16 MB of BatchGetItem answers."""
JOB_LIST_SHARDS = 1
"""A tenant's jobs of one status share one partition of the status index (docs/status-index.md):
jobs are few per tenant, each started through the rate-limited API or by a task's occurrence, and
each is a Step Functions execution, whose starts are throttled per account ("Quotas related to API
action throttling", Step Functions service quotas) well below a partition's 1,000 writes a second."""


def status_keys(tenant: str, job_id: str, created_ms: int, status: JobStatus) -> tuple[str, str] | None:
    """A job's keys in the status index (``spk``, ``ssk``) once it is ``status``: running or failed
    (``WATCHED_JOBS``); None for a status the index does not hold. Its position is its listing
    position, ``<created ms>#<job id>``."""
    if status not in WATCHED_JOBS:
        return None
    return status_pk(tenant, "job", status.value, job_id, JOB_LIST_SHARDS), list_sk(created_ms, job_id)


class DynamoJobStore:
    """The job item: its definition, status and progress."""

    def create(self, job: NewJobRecord) -> bool:
        """Record a new job; False when a job of that id exists already (a repeated start)."""
        item = JobItem(
            job_pk(job.job_id),
            JOB_SK,
            tenant=job.tenant,
            name=job.name,
            status=JobStatus.RUNNING.value,
            processor=compact_json(job.processor),
            sharding=compact_json(vars(job.sharding)),
            notify_every_percent=job.notify_every_percent,
            created_ms=job.created_ms,
            progress_key=job.progress_key,
            api_url=job.api_url,
            lpk=f"LJ#{job.tenant}",
            lsk=list_sk(job.created_ms, job.job_id),
        )
        # running: in the status index from its first write (docs/status-index.md)
        item.spk, item.ssk = status_keys(job.tenant, job.job_id, job.created_ms, JobStatus.RUNNING) or (None, None)
        try:
            item.save(condition=JobItem.pk.does_not_exist())
        except PutError as error:
            if is_conflict(error):
                return False
            raise
        return True

    def item(self, job_id: str) -> JobItem | None:
        try:
            return JobItem.get(job_pk(job_id), JOB_SK, consistent_read=True)
        except DoesNotExist:
            return None

    def page(
        self, tenant: str, limit: int, cursor: str | None, status: JobStatus | None = None
    ) -> tuple[list[tuple[str, JobItem]], str | None]:
        """The tenant's jobs, newest first, ``limit`` at a time, each with the cursor that goes on
        after it: index queries and batch reads, never a scan. Unfiltered, one query of
        ``limit + 1`` entries. Running or failed jobs are read through the status index, which
        holds those only: a full page whatever the tenant's other jobs (docs/status-index.md).
        With another ``status``, the listing index's entries are read a window at a time and the
        jobs of other statuses left out, for at most ``LIST_READ_BUDGET`` jobs a request (as the
        tasks list does): the page may come back short, even empty, with a cursor to go on from."""
        if status in WATCHED_JOBS:
            assert status is not None
            return self._watched_page(tenant, status, limit, cursor)
        position = decode_cursor(cursor) if cursor else None
        window = limit + 1 if status is None else max(limit + 1, FILTERED_WINDOW)
        found: list[tuple[str, JobItem]] = []
        for _ in range(1 if status is None else max(1, LIST_READ_BUDGET // window)):
            entries = self._entries(tenant, position, window)
            items = {item.pk: item for item in JobItem.batch_get([(pk, JOB_SK) for _, pk in entries])}
            for lsk, pk in entries:
                position = lsk
                item = items.get(pk)
                if item is None or item.tenant != tenant or (status is not None and item.status != status.value):
                    continue
                found.append((encode_cursor(lsk), item))
                if len(found) > limit:
                    return found[:limit], found[limit - 1][0]
            if len(entries) < window:
                return found, None
        assert position is not None  # read the budget without filling the page
        return found, encode_cursor(position)

    def _watched_page(
        self, tenant: str, status: JobStatus, limit: int, cursor: str | None
    ) -> tuple[list[tuple[str, JobItem]], str | None]:
        """A page of the tenant's jobs in ``status`` through the status index (status_index.page)."""
        found, after = status_index.page(
            JobItem,
            tenant,
            "job",
            [status.value],
            JOB_LIST_SHARDS,
            lambda item: item.tenant == tenant and item.status == status.value,
            limit,
            decode_cursor(cursor) if cursor else None,
            LIST_READ_BUDGET,
        )
        return [(encode_cursor(at), item) for at, item in found], encode_cursor(after) if after else None

    def count(self, tenant: str, status: JobStatus) -> int:
        """How many of the tenant's jobs are ``status``, running or failed (the status index holds
        those): exact, whatever the number of its other jobs; ValueError for another status."""
        if status not in WATCHED_JOBS:
            raise ValueError(f"{status.value} jobs are not counted: the status index holds no such job")
        try:
            return status_index.count(tenant, "job", [status.value], JOB_LIST_SHARDS)
        except PynamoDBException as exc:
            raise StorageUnavailable(f"jobs: {exc.msg}") from exc

    def _entries(self, tenant: str, before: str | None, count: int) -> list[tuple[str, str]]:
        """Up to ``count`` (lsk, pk) of the tenant's jobs older than ``before``, newest first."""
        page = JobItem._get_connection().query(
            f"LJ#{tenant}",
            range_key_condition=JobItem.lsk < before if before is not None else None,
            index_name=LIST_INDEX_NAME,
            scan_index_forward=False,
            limit=count,
        )
        return [(raw["lsk"]["S"], raw["pk"]["S"]) for raw in page.get("Items", [])]

    def view(self, tenant: str, job_id: str) -> JobView | None:
        item = self.item(job_id)
        return to_view(item) if item is not None and item.tenant == tenant else None

    def views(self, tenant: str, limit: int, cursor: str | None, status: JobStatus | None = None) -> JobPage:
        items, next_cursor = self.page(tenant, limit, cursor, status)
        return JobPage([to_view(item) for _, item in items], next_cursor, tuple(after for after, _ in items))

    def spec(self, job_id: str) -> JobSpec:
        return spec_of(job_id, JobItem.get(job_pk(job_id), JOB_SK, consistent_read=True))

    def find_spec(self, job_id: str) -> tuple[str, JobSpec] | None:
        item = self.item(job_id)
        return (item.tenant, spec_of(job_id, item)) if item is not None else None

    def planned(
        self, job_id: str, shards_per_level: Sequence[int], total_items: int | None = None, now_ms: int | None = None
    ) -> None:
        """``pre`` has planned the shards: their counts, and per level a count of those done and
        the time of the latest (zeros), so each shard adds to its level in the write that counts it;
        with ``total_items``, an empty count of items per shard that reports and shard ends fill."""
        zeros: Any = [0] * len(shards_per_level)  # pynamodb types a list of numbers as of NumberAttribute
        actions: list[Any] = [
            JobItem.shards_per_level.set(json.dumps(list(shards_per_level))),
            JobItem.total_shards.set(sum(shards_per_level)),
            JobItem.level_done.set(zeros),
            JobItem.level_done_ms.set(zeros),
            JobItem.pre_finished_ms.set(_now(now_ms)),
        ]
        if total_items is not None:
            actions += [JobItem.total_items.set(total_items), JobItem.shard_items.set({})]
        JobItem(job_pk(job_id), JOB_SK).update(actions=actions)

    def pre_started(self, job_id: str, now_ms: int | None = None) -> None:
        """The first attempt's time is kept (a retried ``pre`` leaves it)."""
        JobItem(job_pk(job_id), JOB_SK).update(
            actions=[JobItem.pre_started_ms.set(JobItem.pre_started_ms | _now(now_ms))]
        )

    def shards_per_level(self, job_id: str) -> list[int]:
        item = JobItem.get(job_pk(job_id), JOB_SK, consistent_read=True)
        return [int(n) for n in json.loads(item.shards_per_level or "[]")]

    def shard_done(
        self,
        job_id: str,
        level: int,
        shard: int,
        *,
        by_level: bool = True,
        items: int | None = None,
        now_ms: int | None = None,
    ) -> tuple[int, int]:
        """Count the shard done once; with ``items`` (a job planned with item counts), its items
        all done in the same write."""
        key = f"{level}/{shard}"
        item = JobItem(job_pk(job_id), JOB_SK)
        actions: list[Any] = [JobItem.done.add({key}), JobItem.done_shards.add(1)]
        if items is not None:
            actions.append(JobItem.shard_items[key].set(items))
        if by_level:  # the level's count and time, in the same write (an item planned before them has none)
            actions += [
                JobItem.level_done[level].set(JobItem.level_done[level] + 1),
                JobItem.level_done_ms[level].set(_now(now_ms)),
            ]
        try:
            item.update(
                actions=actions,
                condition=JobItem.done.does_not_exist() | ~JobItem.done.contains(key),
            )
        except UpdateError as error:
            if not is_conflict(error):
                raise
            item.refresh(consistent_read=True)  # counted before: a retried shard
        return int(item.done_shards or 0), int(item.total_shards or 0)

    def report(self, job_id: str, shard: str, done_items: int) -> tuple[int, int, int] | None:
        """A running shard's report: its count of items done becomes ``done_items`` unless it is
        already as high (reports may come out of order; a count never goes back). The job's items
        done before and after, and in all; None when nothing was written (a lower report, or the
        job no longer running). One UpdateItem, answering the item as it was (``ALL_OLD``)."""
        count = JobItem.shard_items[shard]
        condition = (
            (JobItem.status == JobStatus.RUNNING.value)
            & JobItem.shard_items.exists()
            & (count.does_not_exist() | (count < done_items))
        )
        try:
            answer = JobItem._get_connection().update_item(
                job_pk(job_id), JOB_SK, actions=[count.set(done_items)], condition=condition, return_values="ALL_OLD"
            )
        except UpdateError as error:
            if is_conflict(error):
                return None
            raise
        old = JobItem.from_raw_data(answer.get("Attributes", {}))
        counts = {k: int(v) for k, v in (old.shard_items.as_dict() if old.shard_items is not None else {}).items()}
        before = sum(counts.values())
        return before, before - counts.get(shard, 0) + done_items, int(old.total_items or 0)

    def add_command(self, tenant: str, job_id: str, command: JobCommand) -> Refusal | None:
        """Keep ``command`` at the end of the tenant's running job's list, in one conditional
        write (a list, pending and offered, shorter than :data:`MAX_PENDING_COMMANDS`); None when
        kept, or why not (read after the refusal)."""
        pending = JobItem.commands
        condition = (
            (JobItem.tenant == tenant)
            & (JobItem.status == JobStatus.RUNNING.value)
            & (pending.does_not_exist() | (size(pending) < MAX_PENDING_COMMANDS))
        )
        added = pending.set((pending | []).append([command.encoded()]))  # if_not_exists, then list_append
        if _updated(job_id, [added, JobItem.commands_rev.add(1)], condition):
            return None
        item = self.item(job_id)
        if item is None or item.tenant != tenant:
            return Refusal.NO_JOB
        if item.status != JobStatus.RUNNING.value:
            return Refusal.NOT_RUNNING
        return Refusal.FULL

    def take_commands(
        self, job_id: str, acknowledged: Sequence[str], now_ms: int, lease_ms: int = COMMAND_LEASE_MS
    ) -> list[JobCommand]:
        """The commands offered to one report, oldest first: the acknowledged ones dropped, the
        pending ones and those whose lease is over offered (marked so, at ``now_ms``), in one
        UpdateItem conditioned on the list as read (its ``commands_rev`` and length), so of two
        reports that read the same list one rewrites it and the other reads again and finds
        them offered. Nothing (and no write) when nothing changes; nothing for a job not running."""
        for _ in range(TAKE_ATTEMPTS):
            item = self.item(job_id)
            if item is None or item.status != JobStatus.RUNNING.value or not item.commands:
                return []
            held = [JobCommand.decoded(str(text)) for text in item.commands]
            kept, offered = offer(held, set(acknowledged), now_ms, lease_ms)
            if not offered and len(kept) == len(held):
                return []
            rev = JobItem.commands_rev
            condition = (
                (JobItem.status == JobStatus.RUNNING.value)
                & (rev.does_not_exist() if item.commands_rev is None else rev == item.commands_rev)
                & (size(JobItem.commands) == len(held))
            )
            encoded: list[Any] = [c.encoded() for c in kept]
            rewrite = JobItem.commands.set(encoded) if kept else JobItem.commands.remove()
            if _updated(job_id, [rewrite, rev.add(1)], condition):
                return offered
        return []  # reports kept writing the list meanwhile: the next report is offered them

    def claim_notification(self, job_id: str, percent: int) -> bool:
        """The notify at ``percent`` may be sent: True once per threshold (not after another
        claimed it, whatever order the thresholds come in), never once the job is cancelled."""
        return _updated(
            job_id,
            [JobItem.notified.add({percent})],
            (JobItem.notified.does_not_exist() | ~JobItem.notified.contains(percent))
            & (JobItem.status == JobStatus.RUNNING.value),
        )

    def claim_post(self, job_id: str, now_ms: int | None = None) -> bool:
        """The ``post`` step may call the processor: True while the job is running (a retried
        post claims again), and from then on the job cannot be cancelled; False once it is
        cancelled (or ended)."""
        started = JobItem.post_started_ms | _now(now_ms)  # a retried post keeps the first attempt's time
        return _updated(job_id, [JobItem.post_started_ms.set(started)], JobItem.status == JobStatus.RUNNING.value)

    def cancel(self, tenant: str, job_id: str, now_ms: int) -> JobView | None:
        """Mark the tenant's job cancelled, in one conditional write: only a running job whose
        ``post`` has not begun. The job as it is now, or None when nothing was written (no such
        job for this tenant, or it cannot be cancelled)."""
        item = JobItem(job_pk(job_id), JOB_SK)
        try:
            item.update(
                actions=[
                    JobItem.status.set(JobStatus.CANCELLED.value),
                    JobItem.finished_ms.set(now_ms),
                    *status_index.actions(JobItem, None),  # off the running list (docs/status-index.md)
                ],
                condition=(JobItem.status == JobStatus.RUNNING.value)
                & (JobItem.tenant == tenant)
                & JobItem.post_started_ms.does_not_exist(),
            )
        except UpdateError as error:
            if is_conflict(error):
                return None
            raise
        return to_view(item)  # the update read the item back (ALL_NEW)

    def succeeded(
        self,
        job_id: str,
        result: JsonValue,
        now_ms: int | None = None,
        *,
        result_ref: str | None = None,
        result_bytes: int | None = None,
    ) -> bool:
        if result_ref is not None:
            kept = [JobItem.result_ref.set(result_ref), JobItem.result_bytes.set(result_bytes or 0)]
        else:
            kept = [JobItem.result.set(compact_json(result))]
        return self._finish(job_id, JobStatus.SUCCEEDED, kept, now_ms)

    def failed(self, job_id: str, error: str, failure: StepFailure | None = None, now_ms: int | None = None) -> bool:
        kept = [JobItem.error.set(error[:2000])]
        if failure is not None:
            kept.append(JobItem.failure.set(compact_json(failure.to_dict())))
        return self._finish(job_id, JobStatus.FAILED, kept, now_ms)

    def notify_failed(self, job_id: str, failure: StepFailure) -> None:
        JobItem(job_pk(job_id), JOB_SK).update(actions=[JobItem.notify_failure.set(compact_json(failure.to_dict()))])

    def current(self, job_id: str) -> JobView | None:
        item = self.item(job_id)
        return to_view(item) if item is not None else None

    def _finish(self, job_id: str, status: JobStatus, actions: list[Any], now_ms: int | None) -> bool:
        """False when the job had ended already: a job finishes once, and a step finishing after
        a cancel leaves ``cancelled`` as it is. The same write moves its status index entry: off
        the running list, onto the failed one for a failure (docs/status-index.md)."""
        finished = _now(now_ms)
        keys = None
        if status in WATCHED_JOBS:
            placed = self._placed(job_id)
            if placed is None:
                return False  # no such job: nothing to finish
            tenant, created_ms = placed
            keys = status_keys(tenant, job_id, created_ms, status)
        return _updated(
            job_id,
            [
                JobItem.status.set(status.value),
                JobItem.finished_ms.set(finished),
                *actions,
                *status_index.actions(JobItem, keys),
            ],
            JobItem.status == JobStatus.RUNNING.value,
        )

    def _placed(self, job_id: str) -> tuple[str, int] | None:
        """The job's tenant and creation time (what its status index keys are made of, which never
        change), or None when there is no such job: a step knows the job by its id only."""
        try:
            item = JobItem.get(job_pk(job_id), JOB_SK, consistent_read=True, attributes_to_get=["tenant", "created_ms"])
        except DoesNotExist:
            return None
        return item.tenant, int(item.created_ms)


def _now(now_ms: int | None) -> int:
    return now_ms if now_ms is not None else clock_now_ms()


def _updated(job_id: str, actions: list[Any], condition: Any) -> bool:
    """One conditional update of the job's item: False (nothing written) when its condition
    does not hold."""
    try:
        JobItem(job_pk(job_id), JOB_SK).update(actions=actions, condition=condition)
    except UpdateError as error:
        if is_conflict(error):
            return False
        raise
    return True


def spec_of(job_id: str, item: JobItem) -> JobSpec:
    notify = item.notify_every_percent
    return JobSpec(
        job_id,
        Sharding(**json.loads(item.sharding)),
        int(notify) if notify is not None else None,
        JobStatus(item.status),
        levels_counted=item.level_done is not None,
        items_counted=item.shard_items is not None,
        progress_key=item.progress_key,
        api_url=item.api_url,
        commands_pending=bool(item.commands),
    )


def to_view(item: JobItem) -> JobView:
    levels = _levels(item)
    level = None
    if levels is not None:
        level = next((lv.level for lv in levels if lv.done_shards < lv.total_shards), max(len(levels) - 1, 0))
    return JobView(
        id=item.pk.removeprefix("J#"),
        name=item.name,
        status=JobStatus(item.status),
        done_shards=int(item.done_shards or 0),
        total_shards=int(item.total_shards) if item.total_shards is not None else None,
        level=level,
        result=json.loads(item.result) if item.result is not None else None,
        error=item.error,
        created_ms=int(item.created_ms),
        finished_ms=_int(item.finished_ms),
        finishing=item.post_started_ms is not None,
        result_ref=item.result_ref,
        result_bytes=_int(item.result_bytes),
        processor=json.loads(item.processor),
        sharding=Sharding(**json.loads(item.sharding)),
        notify_every_percent=_int(item.notify_every_percent),
        pre_started_ms=_int(item.pre_started_ms),
        pre_finished_ms=_int(item.pre_finished_ms),
        levels=levels,
        post_started_ms=_int(item.post_started_ms),
        failure=StepFailure.from_dict(json.loads(item.failure)) if item.failure else None,
        notify_failure=StepFailure.from_dict(json.loads(item.notify_failure)) if item.notify_failure else None,
        done_items=sum(int(n) for n in item.shard_items.as_dict().values()) if item.shard_items is not None else None,
        total_items=_int(item.total_items),
    )


def _int(value: float | None) -> int | None:
    return int(value) if value is not None else None


def _levels(item: JobItem) -> tuple[LevelProgress, ...] | None:
    """Each level's shards, those done and when the latest was: from the per-level counts, or,
    for a job planned before the item had them, from the set of shards done (no times)."""
    if not item.shards_per_level:
        return None
    totals = [int(n) for n in json.loads(item.shards_per_level)]
    if item.level_done is not None:
        counts: list[Any] = list(item.level_done)  # numbers (typed by pynamodb as their attribute)
        stamps: list[Any] = list(item.level_done_ms or [])
        done = [int(n) for n in counts]
        times = [int(ms) for ms in stamps]
    else:
        counted = set(item.done or ())
        done = [sum(1 for s in range(n) if f"{lv}/{s}" in counted) for lv, n in enumerate(totals)]
        times = []
    return tuple(
        LevelProgress(
            level=lv,
            total_shards=n,
            done_shards=done[lv] if lv < len(done) else 0,
            last_done_ms=(times[lv] or None) if lv < len(times) else None,
        )
        for lv, n in enumerate(totals)
    )


@cache
def _s3() -> Any:
    """The S3 client of the jobs bucket, signing with Signature Version 4 even the links it
    presigns. botocore presigns S3 with Signature Version 2 by default in the Regions that once
    took it (us-east-1, eu-west-1...), and a bucket created after June 24, 2020, as every stack's
    jobs bucket is, refuses such requests ("Amazon S3 Update - SigV2 Deprecation Period Extended &
    Modified", https://aws.amazon.com/blogs/aws/amazon-s3-update-sigv2-deprecation-period-extended-modified/;
    "Specifying the Signature Version in Request Authentication", Amazon S3 API reference,
    https://docs.aws.amazon.com/AmazonS3/latest/API/specify-signature-version.html)."""
    return boto3.client("s3", config=Config(signature_version="s3v4"))


class S3Blobs:
    """The job's objects, as JSON, in the jobs bucket."""

    def __init__(self, bucket: str, client: Callable[[], Any] = _s3) -> None:
        self.bucket = bucket
        self._client = client

    def put(self, key: str, value: JsonValue) -> None:
        body = compact_json(value).encode()
        self._client().put_object(Bucket=self.bucket, Key=key, Body=body, ContentType="application/json")

    def get(self, key: str) -> JsonValue:
        answer = self._client().get_object(Bucket=self.bucket, Key=key)
        return json.loads(answer["Body"].read())

    def url(self, key: str, expires_s: int) -> str:
        """A presigned GET of the object (signed here, with the function's role: it must be allowed
        s3:GetObject there). Valid ``expires_s`` from now at most: the role's credentials are
        temporary, and a URL presigned with temporary credentials expires when they do, even when
        it was made to last longer ("Sharing objects with presigned URLs", Amazon S3 user guide,
        https://docs.aws.amazon.com/AmazonS3/latest/userguide/using-presigned-url.html). Signed
        anew on each call: each read of the job answers a fresh link."""
        url: str = self._client().generate_presigned_url(
            "get_object", Params={"Bucket": self.bucket, "Key": key}, ExpiresIn=expires_s
        )
        return url
