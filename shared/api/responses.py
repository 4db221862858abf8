"""The HTTP API's response models: every 2xx answer and the error answer, as the OpenAPI
document shows them. Schedules and targets are answered in their request models' form, so a
task read back can be sent again as it is. :mod:`shared.api.views` builds these from the domain.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, Tag

from shared.api.models.alerts import AlertIn
from shared.api.models.jobs import ProcessorIn, ShardingIn
from shared.api.models.schedules import ScheduleIn
from shared.api.models.targets import TargetIn
from shared.api.types import Instant, Model, is_none, one_of, tag
from shared.domain.jobs import (
    ANSWER_EXCERPT_CHARS,
    REPORTED_MESSAGE_CHARS,
    REPORTED_TYPE_CHARS,
    JobStatus,
    JobStep,
)
from shared.domain.retry import Backoff
from shared.domain.states import LetterStatus, RunStatus, TaskStatus
from shared.domain.tasks import Misfire, Priority
from shared.domain.workflows import Join, NodeStatus, On


def absent() -> Any:
    """A member left out of the answer when it has no value (documented as optional)."""
    return Field(None, exclude_if=is_none)


class ErrorDetail(Model):
    field: str = Field(description="The member at fault, e.g. `schedule.cron` or `targets[1].http.url`.")
    message: str


class ErrorBody(Model):
    code: str = Field(description="Stable snake_case code, e.g. validation_error, task_not_found.")
    message: str = Field(description="A sentence for people.")
    details: list[ErrorDetail] | None = absent()


class ErrorOut(Model):
    """Every 4xx and 5xx answer."""

    error: ErrorBody


class RetryOut(Model):
    max_attempts: int
    backoff: Backoff
    interval_seconds: float
    max_age_seconds: int | None = None
    """No attempt starts later than this after the occurrence's time (null: no such bound)."""


class LastRunOut(Model):
    """A task's latest occurrence, in brief (``GET /v1/tasks/{id}/runs`` has the whole run)."""

    run_id: str
    scheduled_for: Instant
    status: RunStatus = Field(description="firing or retrying while under way; then how it ended.")
    fired_at: Instant | None = Field(description="When its last attempt was made (null: none made).")


class EventBridgeOut(Model):
    """What a task made through the EventBridge Scheduler API keeps of its schedule (read only:
    that API changes it)."""

    schedule_arn: str
    dead_letter_arn: str | None = Field(description="``DeadLetterConfig.Arn`` (null: none).")
    delete_after_completion: bool = Field(description="``ActionAfterCompletion: DELETE``.")
    flexible_window_seconds: int | None = Field(
        description="``FlexibleTimeWindow``: each occurrence fires at a moment drawn in this many seconds after "
        "it (``next_fire_at`` is the drawn moment); null: off."
    )


class TaskOut(Model):
    """A task. It has ``target`` or, when it multicasts, ``targets``."""

    id: str = Field(description="26-character ULID.")
    name: str | None
    status: TaskStatus = Field(
        description="scheduled, paused, completed, cancelled, or failed: it will never fire again by itself "
        "and its last occurrence failed (a redrive that succeeds makes it completed)."
    )
    last_run: LastRunOut | None = Field(
        None, description="Its latest occurrence (its own, run now, a chained run or a redrive); null before the first."
    )
    schedule: ScheduleIn
    target: TargetIn | None = absent()
    targets: list[TargetIn] | None = absent()
    payload: Any = Field(description="The JSON value given at registration (null when none).")
    retry: RetryOut
    misfire: Misfire
    priority: Priority = Field(description="normal or high (its own delay queue and trigger capacity).")
    next_fire_at: Instant | None = Field(
        description="The next occurrence; null once the task can no longer fire. A paused task fires nothing: its "
        "next_fire_at is when a resume at the moment of the read would fire it (never a time gone by: once its "
        "armed occurrence went by, misfire fire_now answers that moment, skip the schedule's first time from then, "
        "or null for a one-shot, which the resume completes)."
    )
    created_at: Instant
    updated_at: Instant
    version: int = Field(description="Changes with every write; send it in If-Match to PATCH only that version.")
    alert: AlertIn | None = absent()
    pause_after_failures: int | None = absent()
    paused_reason: str | None = Field(
        None, exclude_if=is_none, description="Why Sundial paused the task (pause_after_failures); a resume clears it."
    )
    consecutive_failures: int = Field(
        description="Its occurrences that failed (failed or dead_lettered) in a row, up to the last that ended; "
        "a success and a resume set it back to 0."
    )
    on_success: list[str] | None = Field(
        None, exclude_if=is_none, description="Tasks that run once when an occurrence succeeds (absent: none)."
    )
    on_failure: list[str] | None = Field(
        None, exclude_if=is_none, description="Tasks that run once when an occurrence fails for good (absent: none)."
    )
    eventbridge: EventBridgeOut | None = Field(
        None,
        exclude_if=is_none,
        description="Set on a task made through the EventBridge Scheduler API (absent: a native task); read only.",
    )
    tags: dict[str, str] = Field(default_factory=dict, description="The task's tags ({}: none).")
    notices: list[ErrorDetail] | None = Field(
        None,
        exclude_if=is_none,
        description="Only in the answer to the write that set the schedule (POST, a batch item, a PATCH with "
        "schedule), and only when there is something to say: e.g. an `at` already in the past fires at once.",
    )


class TaskPage(Model):
    items: list[TaskOut]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last.")


class ParentOut(Model):
    """The occurrence whose end started a chained run."""

    task_id: str
    run_id: str
    status: RunStatus = Field(description="succeeded (on_success), or failed or dead_lettered (on_failure).")


class RunOut(Model):
    """One occurrence's run."""

    run_id: str
    task_id: str
    scheduled_for: Instant
    fired_at: Instant | None
    status: RunStatus
    attempts: int
    lateness_ms: int | None = Field(description="How late its first attempt started, in milliseconds.")
    last_error: str | None
    throttled_ms: int = Field(
        0, description="How long limits per destination held the run back, in milliseconds (0: never)."
    )
    parent: ParentOut | None = Field(
        None, exclude_if=is_none, description="A chained run's parent occurrence (absent on other runs)."
    )
    started: list[str] | None = Field(
        None,
        exclude_if=is_none,
        description="The ARNs of what the run's `stepfunctions` and `ecs` targets started (an execution's, a "
        "container task's), in the order they started, every attempt's; absent when they started nothing.",
    )


class RunPage(Model):
    items: list[RunOut]
    next_cursor: str | None


class RunStarted(Model):
    run_id: str = Field(description="The extra run's id (also its Idempotency-Key toward the receiver).")


class LetterWorkflow(Model):
    """The workflow run and node a dead letter's run was started for."""

    id: str = Field(description="The workflow.")
    run_id: str = Field(description="The workflow run (`GET /v1/workflows/{id}/runs/{run_id}`).")
    node: str = Field(description="The node (`GET /v1/workflows/{id}/runs/{run_id}/nodes/{node}`).")
    attempt: int = Field(description="The node's attempt in that workflow run (a run's retry starts the next).")


class DeadLetterOut(Model):
    """An occurrence that failed for good: what failed, why, and what it fired."""

    id: str
    task_id: str = Field(
        description="The task the run belongs to; for a workflow node's run, the workflow's id (as in the "
        "node's callback body), and `workflow` names its run and node."
    )
    run_id: str = Field(description="The failed run (for a workflow node: the node's run, not the workflow run).")
    workflow: LetterWorkflow | None = Field(
        None,
        exclude_if=is_none,
        description="A workflow node's run only: the workflow run and the node it was started for.",
    )
    name: str | None
    status: LetterStatus
    reason: str
    scheduled_for: Instant
    failed_at: Instant
    attempts: int
    target: TargetIn | None = absent()
    targets: list[TargetIn] | None = absent()
    payload: Any
    retry: RetryOut
    redriven_run_id: str | None
    redriven_at: Instant | None


class DeadLetterPage(Model):
    items: list[DeadLetterOut]
    next_cursor: str | None


class RedrivenRun(Model):
    id: str = Field(description="The dead letter's id.")
    task_id: str
    run_id: str = Field(description="The new run.")


class RedriveOut(Model):
    redriven: int
    runs: list[RedrivenRun]
    next_cursor: str | None = Field(
        None,
        description='`{"all": true}`: not null while letters are left to look at; send it back as `cursor` '
        "(a step may redrive none and still have a cursor). Null for `ids`, and once every letter was looked at.",
    )


class PreviewOut(Model):
    times: list[Instant]
    notes: list[str] = Field(description="Warnings, e.g. holiday data not yet published for a year reached.")
    depends_on_runs: bool = Field(
        False,
        description="True for a fixed delay (`every_seconds` with `after: end`): each time after the first is the "
        "period after the run before it ends, so `times` holds the first only.",
    )


class BatchTask(Model):
    index: int
    task: TaskOut


class BatchError(Model):
    index: int
    error: ErrorBody


BatchItem = Annotated[
    Annotated[BatchTask, Tag(tag("task"))] | Annotated[BatchError, Tag(tag("error"))],
    one_of(("task", "error"), "a batch item"),
]


class BatchOut(Model):
    items: list[BatchItem] = Field(description="One per spec, in order: its task, or its error.")


class JobProgress(Model):
    done_shards: int
    total_shards: int | None = Field(description="Null until pre has planned the shards.")
    percent: int
    level: int | None
    done_items: int | None = Field(
        None,
        exclude_if=is_none,
        description="Items done: each running shard's latest progress report, every item of a shard that "
        "ended. Absent for a job started before items were counted.",
    )
    total_items: int | None = Field(
        None, exclude_if=is_none, description="Items in all shards, once pre has planned them."
    )


class JobTimes(Model):
    """When a step of a job began and ended (null: not yet, or never)."""

    started_at: Instant | None
    finished_at: Instant | None


class JobLevel(Model):
    level: int
    total_shards: int
    done_shards: int
    started_at: Instant | None = Field(description="When the level before it ended (the first: when pre did).")
    finished_at: Instant | None = Field(description="When its last shard was done; null until then.")


class ReportedErrorOut(Model):
    """The error a processor said its step raised (the receiver kit answers it for a method that
    raised)."""

    type: str = Field(description=f"The exception's type, e.g. KeyError ({REPORTED_TYPE_CHARS} characters at most).")
    message: str = Field(
        description=f"Its message, e.g. 'user_id', on one line ({REPORTED_MESSAGE_CHARS} characters at most)."
    )


class JobFailure(Model):
    """Which step failed, on which attempt, with what answer."""

    step: JobStep = Field(description="pre, shard, notify or post.")
    level: int | None = Field(description="A shard's level (a failure during a level: that level).")
    shard: int | None = Field(description="A shard's number in its level; null when not known.")
    attempt: int | None = Field(description="The step's attempt (1 is its first call); null when not known.")
    status: int | None = Field(description="The processor's HTTP status, when it answered.")
    answer: str | None = Field(description=f"The start of its answer, on one line ({ANSWER_EXCERPT_CHARS} characters).")
    reason: str = Field(description="Why, in words: the processor's status, the connection error, the answer at fault.")
    threshold: int | None = absent()
    error: ReportedErrorOut | None = Field(
        None,
        exclude_if=is_none,
        description='The error the processor said it raised: an answer {"error": {"type", "message"}} '
        "(absent when it said none).",
    )


class JobOut(Model):
    id: str
    name: str | None
    status: JobStatus
    processor: ProcessorIn = Field(description="As given; secret header values read [redacted].")
    sharding: ShardingIn
    notify_every_percent: int | None
    progress: JobProgress
    pre: JobTimes | None = Field(description="When pre ran; null until it began.")
    levels: list[JobLevel] | None = Field(
        description="Each level's shards, done and in all; null until pre planned them."
    )
    post: JobTimes | None = Field(description="When post ran; null until it began.")
    failure: JobFailure | None = Field(
        description="A failed job: which step failed it (error says the same in words); null otherwise."
    )
    notify_failure: JobFailure | None = Field(
        None, exclude_if=is_none, description="The last notify that failed (the job went on); absent when none did."
    )
    result: Any = Field(
        description="post's result once succeeded; null when it is larger than 64 KiB as JSON (then result_url)."
    )
    result_url: str | None = Field(
        None,
        description="A link to a result larger than 64 KiB, kept as a JSON object, signed at this read with the "
        "API's temporary credentials: valid an hour at most, and no longer than those credentials, which may expire "
        "sooner. Every read of the job answers a freshly signed one.",
    )
    result_bytes: int | None = Field(None, description="The size of such a result as JSON.")
    error: str | None = Field(
        description="A failed job's failure in words: 'the pre step failed on attempt 3 of 3: the processor "
        "answered HTTP 500: ...' (failure says the same member by member)."
    )
    created_at: Instant
    finished_at: Instant | None


class JobPage(Model):
    items: list[JobOut]
    next_cursor: str | None


class SigningSecretOut(Model):
    """A signing secret, never its value."""

    id: str
    created_at: Instant
    expires_at: Instant | None = Field(description="When it stops signing; null for the current one.")


class SigningSecretList(Model):
    items: list[SigningSecretOut] = Field(description="Newest first, expired ones included.")


class NewSigningSecretOut(Model):
    id: str
    secret: str = Field(
        description="whsec_ and the base64 of 32 random bytes (Standard Webhooks): shown this once, never again."
    )
    created_at: Instant


class LimitsOut(Model):
    requests_per_second: int
    burst: int
    max_tasks: int


class TenantOut(Model):
    id: str
    created_at: Instant
    limits: LimitsOut
    live_tasks: int = Field(description="Tasks that can still fire: what max_tasks bounds.")


class TenantPage(Model):
    items: list[TenantOut]
    next_cursor: str | None


class NewKeyOut(Model):
    id: str
    secret: str = Field(description="The API key (Authorization: Bearer <secret>): shown this once, never again.")
    created_at: Instant


class NewAccessKeyOut(Model):
    access_key_id: str = Field(description="The access key id (AWS_ACCESS_KEY_ID of an SDK).")
    secret_access_key: str = Field(
        description="Its secret (AWS_SECRET_ACCESS_KEY): shown this once, never again; it signs requests "
        "to the EventBridge Scheduler API (SigV4)."
    )
    created_at: Instant


class NewTenantOut(TenantOut):
    key: NewKeyOut
    signing_secret: NewSigningSecretOut


class KeyOut(Model):
    """An API key, never its secret."""

    id: str
    created_at: Instant
    revoked_at: Instant | None = Field(description="When it was revoked; null while it works.")


class KeyList(Model):
    items: list[KeyOut]


class DestinationLimitOut(Model):
    """A limit per destination (docs/receivers.md, section 1)."""

    name: str
    origin: str | None = Field(description="The origin, normalised (lower case, no default port); null: none.")
    per_second: float
    burst: int
    max_in_flight: int | None = Field(description="null: no cap on calls in flight.")
    version: int = Field(description="1 when created, one more at every PUT.")
    created_at: Instant
    updated_at: Instant


class DestinationLimitList(Model):
    items: list[DestinationLimitOut] = Field(description="All of the tenant's limits (at most 100), by name.")


class WorkflowNodeOut(Model):
    id: str
    target: TargetIn | None = absent()
    targets: list[TargetIn] | None = absent()
    payload: Any = Field(description="The JSON value given (null when none).")
    retry: RetryOut
    join: Join


class WorkflowEdgeOut(Model):
    from_: str = Field(alias="from")
    to: str
    on: On


class WorkflowOut(Model):
    """A workflow (docs/workflows.md)."""

    id: str = Field(description="26-character ULID.")
    name: str | None
    version: int = Field(description="1, then one more with every change; a run follows the version it started with.")
    nodes: list[WorkflowNodeOut]
    edges: list[WorkflowEdgeOut]
    schedule: ScheduleIn | None = Field(description="Starts a run at each occurrence; null: runs start by hand only.")
    schedule_task_id: str | None = Field(description="The task that keeps the schedule (its runs: the runs started).")
    created_at: Instant
    updated_at: Instant


class WorkflowPage(Model):
    items: list[WorkflowOut]
    next_cursor: str | None


class NodeRunOut(Model):
    """A node in one run."""

    status: NodeStatus
    attempt: int = Field(description="1, then one more each time a retry of the run runs the node again.")
    run_id: str | None = Field(description="The node's run (its Idempotency-Key); null until it starts.")
    item_id: str | None = Field(description="The one-shot task that calls it: GET /v1/tasks/{item_id} shows its run.")
    started_at: Instant | None
    ended_at: Instant | None
    error: str | None = Field(description="Why it failed; null otherwise.")


class WorkflowRunGraph(Model):
    nodes: list[str]
    edges: list[WorkflowEdgeOut]
    joins: dict[str, Join] = Field(description="The nodes whose join is not all.")


class WorkflowRunOut(Model):
    """One run of a workflow."""

    run_id: str
    workflow_id: str
    version: int = Field(description="The workflow's version the run follows.")
    status: NodeStatus = Field(description="running, succeeded (every node ended, none failed), failed or cancelled.")
    nodes: dict[str, NodeRunOut]
    graph: WorkflowRunGraph = Field(description="The graph the run follows (its version's).")
    created_at: Instant
    ended_at: Instant | None


class WorkflowRunPage(Model):
    items: list[WorkflowRunOut]
    next_cursor: str | None


class WorkflowRunStarted(Model):
    run_id: str


class TasksOverview(Model):
    failed: int = Field(description="Tasks whose last occurrence failed and that will not fire again by themselves.")
    paused: int = Field(description="Paused tasks: paused by a client, and paused by Sundial after failures.")
    paused_after_failures: int = Field(
        description="Of the paused ones, those Sundial paused after failures in a row (`pause_after_failures`)."
    )


class DeadLettersOverview(Model):
    waiting: int = Field(description="Dead letters not redriven yet (`status=dead_lettered`).")


class JobsOverview(Model):
    running: int = Field(description="Jobs running now.")
    failed: int = Field(description="Jobs that failed.")


class WorkflowRunsOverview(Model):
    failed: int = Field(description="Workflow runs that failed (`GET /v1/workflow-runs?status=failed`).")


class OverviewOut(Model):
    """How many of the tenant's items are in a status somebody must look at, exact: each a count of
    the status index (the lists with the same `status` hold exactly these)."""

    tasks: TasksOverview
    dead_letters: DeadLettersOverview
    jobs: JobsOverview
    workflow_runs: WorkflowRunsOverview
