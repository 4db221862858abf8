"""PynamoDB models: the storage shape of every item (see docs/design.md, "Data model").

One table, ``pk``/``sk`` strings. Bucket partitions ``B#<YYYYMMDDHHMM>#<shard>`` hold two kinds of
item, told apart by ``kind``:

* ``task`` — a task's *home* item, in the bucket of its first due minute. The task id is its sort
  key (a ULID stamped with that due time, see shared/domain/ids.py), so a bucket partition is
  ordered by due time and a task is read by id with one GetItem.
* ``occ`` — a pointer to a later occurrence of a recurring (or moved) task, in the bucket of
  that occurrence: sort key ULID(due, the task's random bits).

Other partitions: ``W#<shard>`` (a shard's scan watermark; ``W#clean`` the tick's), ``R#<task id>`` (the runs of a
recurring task), ``RL#<batch>`` (one trigger batch's successful runs), ``J#<job id>`` (a job),
``DL#<tenant>`` (a tenant's dead letters), ``T#<tenant>`` (a tenant's item, keys, signing secrets
and limits), ``LIMIT#<tenant>#<name>#<k>`` (a limit's state), ``CANARY#<key>`` (which task is a
stack's canary).

Index ``by_tenant`` (keys only): ``lpk = L#<tenant>#<k>`` / ``lsk = <created ms>#<task id>`` lists
a tenant's tasks newest first; only task home items carry ``lpk``, so the index is sparse. The
one-shot tasks of a batch registration carry none: one listing page ``P#<tenant>#<k>`` /
``<created ms>#<newest task id>`` names them all (shared/store/listing.py), one write for a
hundred tasks instead of a hundred index entries.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pynamodb.attributes import (
    BooleanAttribute,
    DiscriminatorAttribute,
    ListAttribute,
    MapAttribute,
    NumberAttribute,
    NumberSetAttribute,
    TTLAttribute,
    UnicodeAttribute,
    UnicodeSetAttribute,
)
from pynamodb.indexes import GlobalSecondaryIndex, KeysOnlyProjection
from pynamodb.models import Model

DEFAULT_TABLE_NAME = "sundial"


def is_conflict(exc: Exception) -> bool:
    """A conditional write DynamoDB refused because its condition did not hold (for a
    transaction: because one of its conditions did not)."""
    if getattr(exc, "cause_response_code", None) == "ConditionalCheckFailedException":
        return True
    return "ConditionalCheckFailed" in str(getattr(exc, "cancellation_reasons", None) or "")


LIST_INDEX_NAME = "by_tenant"
STATUS_INDEX_NAME = "by_status"
"""The sparse keys-only index of the items in a status somebody must look at (docs/status-index.md):
a task failed or paused, a job running or failed, a dead letter waiting, a workflow run failed."""


class _Table(Model):
    class Meta:
        table_name = DEFAULT_TABLE_NAME
        billing_mode = "PAY_PER_REQUEST"

    pk = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)
    expires_at = TTLAttribute(null=True)

    def expired(self, now: datetime) -> bool:
        """Past its retention. DynamoDB's TTL deletes such an item eventually, "typically within a
        few days" ("Using time to live (TTL) in DynamoDB"), so it may still be read: the API's lists
        leave it out."""
        return self.expires_at is not None and self.expires_at <= now


class ListIndex(GlobalSecondaryIndex["BucketItem"]):
    class Meta:
        index_name = LIST_INDEX_NAME
        projection = KeysOnlyProjection()

    lpk = UnicodeAttribute(hash_key=True)
    lsk = UnicodeAttribute(range_key=True)


class StatusIndex(GlobalSecondaryIndex["BucketItem"]):
    class Meta:
        index_name = STATUS_INDEX_NAME
        projection = KeysOnlyProjection()

    spk = UnicodeAttribute(hash_key=True)
    ssk = UnicodeAttribute(range_key=True)


class BucketItem(_Table):
    """Anything in a bucket partition; the scanners read these."""

    kind = DiscriminatorAttribute()
    task_id = UnicodeAttribute()
    due_ms = NumberAttribute()
    """The occurrence this item is due for."""
    staged_ms = NumberAttribute(null=True)
    """The due time its writer staged itself (the scanners skip it)."""
    priority = UnicodeAttribute(null=True)
    """``high``: the task's occurrences take the high-priority lane; absent: normal (items written
    before priorities read as normal). On a pointer too, so a scanner stages it on its lane
    without reading the task."""
    lpk = UnicodeAttribute(null=True)
    lsk = UnicodeAttribute(null=True)
    by_tenant = ListIndex()
    spk = UnicodeAttribute(null=True)
    """While the task is in a status of ``by_status``: its partition there (shared/store/keys.py,
    ``status_pk``); absent otherwise."""
    ssk = UnicodeAttribute(null=True)
    by_status = StatusIndex()


class TaskItem(BucketItem, discriminator="task"):
    """A task's home item: its definition, its state and its current occurrence's run."""

    tenant = UnicodeAttribute()
    name = UnicodeAttribute(null=True)
    status = UnicodeAttribute()
    schedule = UnicodeAttribute()
    """The schedule spec as JSON, in the API's form."""
    anchor_ms = NumberAttribute(null=True)
    """The instant relative schedules (after_seconds, every_seconds) count from."""
    targets = UnicodeAttribute()
    """The targets as a JSON list, in the API's form."""
    multicast = BooleanAttribute(default=False)
    payload = UnicodeAttribute(null=True)
    """The payload as JSON text (absent when the task has none)."""
    retry = UnicodeAttribute()
    misfire = UnicodeAttribute()
    next_fire_ms = NumberAttribute(null=True)
    created_ms = NumberAttribute()
    updated_ms = NumberAttribute()
    version = NumberAttribute(default=0)
    """Bumped by every write; a client's update is conditional on the version it read."""

    # The run of the current occurrence (a one-shot task's only run).
    run_due_ms = NumberAttribute(null=True)
    run_id = UnicodeAttribute(null=True)
    run_status = UnicodeAttribute(null=True)
    attempts = NumberAttribute(null=True)
    fired_ms = NumberAttribute(null=True)
    lateness_ms = NumberAttribute(null=True)
    throttled_ms = NumberAttribute(null=True)
    """How long limits per destination held the run back (a held run: until its booked start)."""
    lease_until_ms = NumberAttribute(null=True)
    run_log = UnicodeAttribute(null=True)
    """The trigger batch whose run log holds this run's success (docs/design.md, section 2.4)."""
    last_error = UnicodeAttribute(null=True)
    targets_done = NumberAttribute(null=True)
    """Bit i set: target i already succeeded for this run (a retry calls only the others)."""
    run_started = UnicodeAttribute(null=True)
    """The ARNs the run's targets started so far, as a JSON list (``Run.started``)."""
    parent_id = UnicodeAttribute(null=True)
    """An extra run's task (run now, redrive): the task it runs for. Such items are unlisted."""
    stops_with_parent = BooleanAttribute(null=True)
    """A run now: its claim finds out whether the parent was paused or cancelled since."""
    counted = BooleanAttribute(null=True)
    """Set while the task is counted in its tenant's ``live_tasks`` (shared/store/quota.py): from
    its registration to the write that says it can no longer fire, which removes it in the same
    transaction as it gives the slot back. Never set on an extra run, nor on a task registered
    before quotas."""
    alert = UnicodeAttribute(null=True)
    """Where the task's alerts go, as JSON in the API's form (shared/domain/alerts.py)."""
    pause_after_failures = NumberAttribute(null=True)
    paused_reason = UnicodeAttribute(null=True)
    """Why the pipeline paused the task; removed by a resume."""
    failures = NumberAttribute(null=True)
    """The task's occurrences that failed in a row: written by the write that ends each one."""
    ended_run = UnicodeAttribute(null=True)
    """JSON ``{"run_id", "scheduled_ms", "status", "fired_ms"}``: the task's latest occurrence that
    ended and is not the item's current run (a recurring task's previous one, an extra run's)."""
    ended_run_ms = NumberAttribute(null=True)
    """That occurrence's scheduled time: an older one never overwrites it."""
    on_success = UnicodeAttribute(null=True)
    """The tasks an occurrence's success starts, as a JSON list of ids (absent: none)."""
    on_failure = UnicodeAttribute(null=True)
    """The tasks an occurrence's final failure starts (absent: none)."""
    eventbridge = UnicodeAttribute(null=True)
    """A task made through the EventBridge Scheduler API: its schedule's ARN, dead-letter queue
    and action after completion (JSON)."""
    chain = UnicodeAttribute(null=True)
    """A chained run's parent occurrence and hop, as JSON (shared/domain/chains.py)."""
    workflow = UnicodeAttribute(null=True)
    """A workflow node's run: its workflow run and parents' outcomes, as JSON (``NodeLink``)."""
    tags = UnicodeAttribute(null=True)
    """The task's tags as a JSON object (absent: none); each is also an entry of
    ``TagEntryItem`` (shared/store/tags.py), which the tag filter reads."""


class OccurrenceItem(BucketItem, discriminator="occ"):
    """A later occurrence of a task, in the bucket of its due minute: a pointer for the scanners."""


class WatermarkItem(_Table):
    """``W#<shard>``: every occurrence due before ``staged_until_ms`` has been staged."""

    staged_until_ms = NumberAttribute(null=True)
    scanning_until_ms = NumberAttribute(null=True)
    """A scan's lease on the shard: no second scan starts before it ends or expires."""
    clean_until = UnicodeAttribute(null=True)
    """On the tick's item ``W#clean`` only: a JSON object, shard -> the due time before which the
    tick found nothing in the shard's buckets past its mark (shared/services/firing/scan.py)."""


class ListPageItem(_Table):
    """``P#<tenant>#<k>`` / ``<created ms>#<newest task id>``: the one-shot tasks of one batch
    registration, all created at ``created_ms``, listed as the index lists one entry each
    (shared/store/listing.py)."""

    tenant = UnicodeAttribute()
    created_ms = NumberAttribute()
    ids = UnicodeSetAttribute()


class WorkflowItem(_Table):
    """``WF#<workflow id>`` / ``WF``: a workflow as it stands (docs/workflows.md, section 2), listed
    newest first through ``by_tenant`` with ``lpk = LW#<tenant>``. Each version's definition is
    kept too (``V#<version>``), so a run follows the version it started with."""

    tenant = UnicodeAttribute()
    name = UnicodeAttribute(null=True)
    version = NumberAttribute()
    definition = UnicodeAttribute()
    """The nodes and the graph as JSON (shared/store/workflows.py, ``definition_json``)."""
    schedule = UnicodeAttribute(null=True)
    schedule_task_id = UnicodeAttribute(null=True)
    created_ms = NumberAttribute()
    updated_ms = NumberAttribute()
    lpk = UnicodeAttribute(null=True)
    lsk = UnicodeAttribute(null=True)


class WorkflowVersionItem(_Table):
    """``WF#<workflow id>`` / ``V#<version>``: one version's definition, never changed."""

    tenant = UnicodeAttribute()
    definition = UnicodeAttribute()


class WorkflowRunItem(_Table):
    """``WR#<run id>`` / ``R``: one run of a workflow (docs/workflows.md, section 2): its graph as
    it was when the run started, each node's status and item id, and the run's status. Every write
    after its creation is a conditional update of one node or of the run's status. Listed newest
    first through ``by_tenant`` with ``lpk = LR#<workflow id>``, ``lsk = <run id>``."""

    workflow_id = UnicodeAttribute()
    tenant = UnicodeAttribute()
    graph = UnicodeAttribute()
    """The nodes, edges and joins as JSON (``graph_to_dict``)."""
    version = NumberAttribute(default=1)
    """The workflow's version the run follows."""
    status = UnicodeAttribute()
    nodes = MapAttribute[str, Any]()
    """Node id -> its status."""
    items = MapAttribute[str, Any]()
    """Node id -> the id of the item that calls it, once started."""
    runs = MapAttribute[str, Any](default=dict)
    """Node id -> its run's id, once started."""
    started = MapAttribute[str, Any](default=dict)
    ended = MapAttribute[str, Any](default=dict)
    errors = MapAttribute[str, Any](default=dict)
    attempts = MapAttribute[str, Any]()
    """Node id -> its attempt, where a retry of the run set it above 1."""
    created_ms = NumberAttribute(default=0)
    ended_ms = NumberAttribute(null=True)
    revision = NumberAttribute(default=0)
    lpk = UnicodeAttribute(null=True)
    lsk = UnicodeAttribute(null=True)
    spk = UnicodeAttribute(null=True)
    """While the run is failed: its ``by_status`` partition (docs/status-index.md)."""
    ssk = UnicodeAttribute(null=True)


class NodeOutcomeItem(_Table):
    """``WR#<run id>`` / ``N#<node>#<attempt>``: how a node's run ended (status, run id, up to
    4 KiB of its answer, its error), read by its children's starts for their bodies."""

    outcome = UnicodeAttribute()


class RunItem(_Table):
    """``R#<task id>`` / ``<scheduled ms>#<run id>``: one finished run of a recurring task."""

    tenant = UnicodeAttribute()
    task_id = UnicodeAttribute()
    run_id = UnicodeAttribute()
    status = UnicodeAttribute()
    scheduled_ms = NumberAttribute()
    fired_ms = NumberAttribute(null=True)
    attempts = NumberAttribute(default=0)
    lateness_ms = NumberAttribute(null=True)
    throttled_ms = NumberAttribute(null=True)
    last_error = UnicodeAttribute(null=True)
    child = UnicodeAttribute(null=True)
    """An extra run (run now, redrive, a chain): the one-shot task that carries it, whose item
    holds its state; this item only places it in the history."""
    parent = UnicodeAttribute(null=True)
    """A chained run's parent occurrence, as JSON {task_id, run_id, status}."""
    started = UnicodeAttribute(null=True)
    """The ARNs its targets started, as a JSON list (``Run.started``; absent: none)."""


class DeadLetterItem(_Table):
    """``DL#<tenant>`` / ``<run id>``: an occurrence that failed for good, with what it fired
    (targets, payload, retry) so that a redrive fires the same thing even if its task changed
    or ended since. Run ids are ULIDs of the due time: a query lists them newest first."""

    tenant = UnicodeAttribute()
    task_id = UnicodeAttribute()
    """The task the occurrence belongs to (an extra run's parent)."""
    run_id = UnicodeAttribute()
    due_ms = NumberAttribute()
    failed_ms = NumberAttribute()
    attempts = NumberAttribute()
    reason = UnicodeAttribute()
    status = UnicodeAttribute()
    """``dead_lettered``, then ``redriven`` (once: the redrive is conditional on it)."""
    redriven_run_id = UnicodeAttribute(null=True)
    redriven_ms = NumberAttribute(null=True)
    name = UnicodeAttribute(null=True)
    targets = UnicodeAttribute()
    multicast = BooleanAttribute(default=False)
    payload = UnicodeAttribute(null=True)
    retry = UnicodeAttribute()
    workflow = UnicodeAttribute(null=True)
    """A workflow node's run: its workflow run and node, as JSON (``NodeRef``); absent on a task's."""
    schedule_arn = UnicodeAttribute(null=True)
    """An occurrence of a task made through the EventBridge Scheduler API: its schedule's ARN.
    A letter written before it was kept here has it in its targets' JSON instead."""
    spk = UnicodeAttribute(null=True)
    """While the letter waits for a redrive: its ``by_status`` partition (docs/status-index.md)."""
    ssk = UnicodeAttribute(null=True)


class RunLogItem(_Table):
    """``RL#<batch id>``: the successful runs of one trigger batch, written once (one write for the
    batch's runs instead of one per run). About 80 bytes a run: the largest batch the settings
    allow (1,000) stays far below an item's 400 KB."""

    runs = MapAttribute[str, Any]()
    """run id -> {fired_ms, lateness_ms, attempts, throttled_ms (when held back)}."""


class JobItem(_Table):
    """``J#<job id>`` / ``J``: a sharded batch job (docs/jobs.md). Its data and results live in S3;
    the item holds its definition, status and progress. Listed newest first through
    ``by_tenant`` with ``lpk = LJ#<tenant>``."""

    tenant = UnicodeAttribute()
    name = UnicodeAttribute(null=True)
    status = UnicodeAttribute()
    processor = UnicodeAttribute()
    """The processor target as JSON, in the API's form."""
    sharding = UnicodeAttribute()
    """The sharding rules as JSON."""
    notify_every_percent = NumberAttribute(null=True)
    shards_per_level = UnicodeAttribute(null=True)
    """JSON list, once ``pre`` has planned the job."""
    total_shards = NumberAttribute(null=True)
    done = UnicodeSetAttribute(null=True)
    """``<level>/<shard>`` of every shard done (a retried shard is counted once)."""
    done_shards = NumberAttribute(default=0)
    notified = NumberSetAttribute(null=True)
    """The notify thresholds (percent) already sent: each once, in whatever order shards end."""
    level_done = ListAttribute(of=NumberAttribute, null=True)
    """Shards done per level (one number a level: at most 100), planned as zeros by ``pre``."""
    level_done_ms = ListAttribute(of=NumberAttribute, null=True)
    """Per level, when its latest shard was counted (0: none yet); once every shard of the
    level is done, when the level ended."""
    pre_started_ms = NumberAttribute(null=True)
    pre_finished_ms = NumberAttribute(null=True)
    """When ``pre``'s answer was planned into shards."""
    failure = UnicodeAttribute(null=True)
    """Which step failed the job, and how (``StepFailure.to_dict`` as JSON, about 1 KB at most)."""
    notify_failure = UnicodeAttribute(null=True)
    """The last ``notify`` that failed, the same way (the job went on)."""
    result = UnicodeAttribute(null=True)
    """The post step's result as JSON (up to ``INLINE_RESULT_BYTES``)."""
    result_ref = UnicodeAttribute(null=True)
    """Where a larger result is kept: its key in the jobs bucket."""
    result_bytes = NumberAttribute(null=True)
    error = UnicodeAttribute(null=True)
    created_ms = NumberAttribute()
    finished_ms = NumberAttribute(null=True)
    post_started_ms = NumberAttribute(null=True)
    """When the ``post`` step claimed the job: from then on it cannot be cancelled."""
    progress_key = UnicodeAttribute(null=True)
    """The job's own key for its shards' progress tokens (shared/domain/progress.py)."""
    api_url = UnicodeAttribute(null=True)
    """Where the API that started the job answers (a shard's progress URL is under it)."""
    total_items = NumberAttribute(null=True)
    shard_items = MapAttribute[str, Any](null=True)
    """``<level>/<shard>`` -> items done: a report's count, or the shard's size once it ended."""
    commands = ListAttribute(of=UnicodeAttribute, null=True)
    """The commands sent to the job that no progress report has acknowledged yet, pending or
    offered (with when), oldest first, each compact JSON (shared/domain/job_commands.py)."""
    commands_rev = NumberAttribute(null=True)
    """Counts the writes to ``commands``: a report's rewrite of the list is conditioned on it, so
    two reports that read the same list cannot both offer its commands."""
    lpk = UnicodeAttribute(null=True)
    lsk = UnicodeAttribute(null=True)
    spk = UnicodeAttribute(null=True)
    """While the job runs, or once it failed: its ``by_status`` partition (docs/status-index.md)."""
    ssk = UnicodeAttribute(null=True)


class RateItem(_Table):
    """``RATE#<what is limited>`` / ``RATE``: a rate limit's state, GCRA's theoretical arrival
    time (shared/domain/rate.py); it expires a day after it was last used."""

    tat_ms = NumberAttribute(null=True)


class SigningSecretItem(_Table):
    """``T#<tenant>`` / ``S#<created ms>#<id>``: one of a tenant's callback signing secrets
    (docs/tenancy.md, section 1). Its value is made by the deployment's ``sundial:signingKey``
    mode, which the item records: "kms", encrypted with the stack's KMS key (the encryption
    context names the tenant and the id, so a ciphertext cannot be moved to another item), or
    "parameter", derived from the root key in Parameter Store and not stored at all."""

    secret_id = UnicodeAttribute()
    scheme = UnicodeAttribute(null=True)
    """How its value is made: "kms" or "parameter" (absent: "kms", the items made before the
    parameter mode). A deployment reads the values of its own mode's items only."""
    ciphertext = UnicodeAttribute(null=True)
    """"kms": base64 of the KMS ciphertext of the secret's key bytes. "parameter": absent."""
    created_ms = NumberAttribute()
    expires_ms = NumberAttribute(null=True)
    """Set when it is rotated out: it keeps signing until then."""


class SigningGuardItem(_Table):
    """``T#<tenant>`` / ``S``: the id of the tenant's current signing secret. Every creation and
    rotation is a transaction conditioned on it, so two writers never both make a current one."""

    current = UnicodeAttribute()


class ScheduleGroupItem(_Table):
    """``SG#<tenant>`` / ``<group>``: an EventBridge Scheduler schedule group of the tenant
    (docs/eventbridge.md, section 3); ``default`` has none until it is tagged."""

    created_ms = NumberAttribute()
    modified_ms = NumberAttribute()
    tags = UnicodeAttribute(null=True)
    """JSON: ``[{"Key", "Value"}]`` as the service answers them."""
    client_token = UnicodeAttribute(null=True)
    """The ``ClientToken`` of the creation: the same creation sent again is answered as the first."""


class ScheduleNameItem(_Table):
    """``SN#<tenant>`` / ``<group>/<name>``: an EventBridge Scheduler schedule, naming the task
    that is the schedule (docs/eventbridge.md, section 3)."""

    task_id = UnicodeAttribute()
    created_ms = NumberAttribute()
    modified_ms = NumberAttribute()
    request = UnicodeAttribute()
    """JSON: the schedule's members as given (what ``GetSchedule`` answers), timestamps in
    epoch seconds."""
    client_token = UnicodeAttribute(null=True)


class TagEntryItem(_Table):
    """``TG#<tenant>#<k>#<key>:<value>`` / ``<created ms>#<task id>``: a task that has the tag, at its
    listing position (shared/store/tags.py): a tag's tasks are read newest first, a page at a time,
    however many other tasks the tenant has (docs/bulk.md)."""


class BackfillItem(_Table):
    """``BF#<task id>`` / ``<backfill id>``: one backfill of the task's past occurrences
    (shared/store/backfills.py): its window and pace, the occurrences it fires and the extra runs
    that fire them, and why the window's others are left out."""

    tenant = UnicodeAttribute()
    task_id = UnicodeAttribute()
    from_ms = NumberAttribute()
    to_ms = NumberAttribute()
    per_second = NumberAttribute()
    created_ms = NumberAttribute()
    in_window = NumberAttribute()
    plan = UnicodeAttribute()
    """JSON ``[[scheduled ms, fire ms, item id], ...]``: the occurrences it fires, oldest first."""
    left_out = UnicodeAttribute(null=True)
    """JSON ``{scheduled ms: reason}`` of the window's occurrences it does not fire."""
    status = UnicodeAttribute()
    """``running`` until cancelled (its progress is read from its runs)."""
    cancelled_ms = NumberAttribute(null=True)


class BackfillMarkItem(_Table):
    """``BO#<task id>`` / ``<scheduled ms>``: the backfill that took this occurrence of the task
    (written only if it does not exist, in the transaction that writes the run that fires it), so
    a second backfill of the same occurrence takes nothing (shared/store/backfills.py)."""

    backfill_id = UnicodeAttribute()
    item_id = UnicodeAttribute()


class CanaryResourceItem(_Table):
    """``CANARY#<resource key>`` / ``CANARY``: which task is the canary of one stack's custom
    resource (shared/domain/canary.py, ``resource_key``: the stack's id and the resource's
    logical id), so a retried request, an update or its rollback finds the canary registered
    before rather than registering another (shared/services/canary.py)."""

    task_id = UnicodeAttribute()
    updated_ms = NumberAttribute()
