"""The task entity, its targets, and the limits a task must respect."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, Generic, TypeVar

from shared.domain.chains import Branch, ChainLink, ParentRun
from shared.domain.retry import RetryPolicy
from shared.domain.schedules import Schedule, is_recurring
from shared.domain.states import LetterStatus, RunStatus, TaskFilter, TaskStatus, passes
from shared.domain.tags import has_tag
from shared.domain.workflows import NodeLink, NodeRef

# Limits, published in the OpenAPI description (see shared/api/models/).
MAX_NAME_LENGTH = 200
MAX_PAYLOAD_BYTES = 32 * 1024
"""JSON payload size. Keeps a task item well under DynamoDB's 400 KB and SQS's 256 KiB."""
MAX_BODY_BYTES = 128 * 1024
"""A request body over this size is answered 413 before it is parsed."""
MAX_HEADERS = 20
MAX_HEADER_NAME = 128
MAX_HEADER_VALUE = 2048
MAX_URL_LENGTH = 2048
MAX_TARGETS = 5
MAX_TIMEOUT_SECONDS = 60
DEFAULT_TIMEOUT_SECONDS = 10
MAX_FAILURE_COUNT = 1000
"""``alert.after_consecutive_failures`` and ``pause_after_failures`` are 1 to this."""


T = TypeVar("T")


class Misfire(StrEnum):
    FIRE_NOW = "fire_now"
    SKIP = "skip"


class Priority(StrEnum):
    """The lane a task's occurrences travel: high ones have their own delay queue and trigger
    capacity, so a flood of normal ones does not delay them."""

    NORMAL = "normal"
    HIGH = "high"


@dataclass(frozen=True)
class HttpTarget:
    url: str
    method: str = "POST"
    headers: dict[str, str] = field(default_factory=dict)
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    limit: str | None = None
    """The name of the tenant's limit this target is held to (shared/domain/limits.py); None:
    the limit whose origin is the URL's, if there is one."""


@dataclass(frozen=True)
class LambdaTarget:
    """A Lambda function, invoked asynchronously. Like the SQS, SNS and event-bus targets, it gets
    Sundial's envelope, or, on a task made through the EventBridge Scheduler API (the task's
    ``eventbridge``), the schedule's ``Input`` as that service sends it (shared/delivery/aws.py)."""

    function_arn: str


@dataclass(frozen=True)
class SqsTarget:
    queue_url: str
    message_group_id: str | None = None
    """A FIFO queue's message group as the schedule's ``SqsParameters.MessageGroupId`` names it
    (None: one group per task, Sundial's own)."""


@dataclass(frozen=True)
class SnsTarget:
    topic_arn: str


@dataclass(frozen=True)
class EventBridgeTarget:
    event_bus: str
    source: str
    detail_type: str


@dataclass(frozen=True)
class JobTarget:
    """Start a sharded batch job at every occurrence (docs/jobs.md): ``job`` is
    the ``POST /v1/jobs`` body, validated at registration, as canonical JSON text."""

    job: str


@dataclass(frozen=True)
class WorkflowTarget:
    """Start a run of the tenant's workflow at every occurrence (docs/workflows.md): the run's id
    is the occurrence's, so every attempt and copy of it starts one run."""

    workflow_id: str


@dataclass(frozen=True)
class StepFunctionsTarget:
    """Start an execution of a Step Functions state machine at every occurrence (StartExecution),
    named after the occurrence so that a repeated call starts none (shared/domain/starts.py)."""

    state_machine_arn: str
    input: str | None = None
    """The execution's input as canonical JSON text; None: Sundial's envelope."""


@dataclass(frozen=True)
class EcsTarget:
    """Run a container task on Fargate at every occurrence (ECS RunTask, shared/domain/starts.py)."""

    cluster_arn: str
    task_definition_arn: str
    subnets: tuple[str, ...]
    security_groups: tuple[str, ...] = ()
    assign_public_ip: str = "DISABLED"
    """``ENABLED`` or ``DISABLED``, as awsvpcConfiguration takes it."""
    overrides: str | None = None
    """The API's ``overrides`` as canonical JSON text (None: none); the RunTask form is built
    from it at each call (shared/domain/starts.py, :func:`run_task_overrides`)."""
    launch_type: str = "FARGATE"


Target = (
    HttpTarget
    | LambdaTarget
    | SqsTarget
    | SnsTarget
    | EventBridgeTarget
    | JobTarget
    | WorkflowTarget
    | StepFunctionsTarget
    | EcsTarget
)


@dataclass(frozen=True)
class Alert:
    """Where a task's alerts go (shared/domain/alerts.py): every dead letter of the task, and,
    with ``after_consecutive_failures``, the occurrence that makes that many failed in a row."""

    target: Target
    """Any target but a job (which receives no body)."""
    after_consecutive_failures: int | None = None


@dataclass(frozen=True)
class EventBridgeSchedule:
    """What a task made through the EventBridge Scheduler API keeps of its schedule beyond a
    native task (docs/eventbridge.md, section 7)."""

    arn: str
    """The schedule's ARN (``arn:aws:scheduler:<region>:<account>:schedule/<group>/<name>``)."""
    dead_letter_arn: str | None = None
    """``DeadLetterConfig.Arn``: the SQS queue an occurrence that failed for good is sent to."""
    delete_after_completion: bool = False
    """``ActionAfterCompletion: DELETE``: the schedule's name is removed once it has fired its last."""


@dataclass(frozen=True)
class TaskSpec:
    """What a client asks for; the service turns it into a :class:`Task`."""

    schedule: Schedule
    targets: tuple[Target, ...]
    multicast: bool = False
    name: str | None = None
    payload: Any = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    misfire: Misfire | None = None
    priority: Priority = Priority.NORMAL
    alert: Alert | None = None
    pause_after_failures: int | None = None
    on_success: tuple[str, ...] = ()
    """Tasks (of the same tenant) that run once when an occurrence of this one succeeds."""
    on_failure: tuple[str, ...] = ()
    """Tasks that run once when an occurrence of this one fails for good (failed or dead-lettered)."""
    eventbridge: EventBridgeSchedule | None = None
    """Set on a task made through the EventBridge Scheduler API (None: a native task)."""
    tags: dict[str, str] = field(default_factory=dict)
    """The client's labels (shared/domain/tags.py): lists and bulk operations select by them."""

    def effective_misfire(self) -> Misfire:
        if self.misfire is not None:
            return self.misfire
        return Misfire.SKIP if is_recurring(self.schedule) else Misfire.FIRE_NOW


SPEC_FIELDS = tuple(f.name for f in fields(TaskSpec))
"""What a client sets: :class:`TaskSpec`'s fields, which a :class:`Task` inherits."""


def spec_values(spec: TaskSpec) -> dict[str, Any]:
    """The spec's fields by name (what a task built or changed from it takes)."""
    return {name: getattr(spec, name) for name in SPEC_FIELDS}


@dataclass(frozen=True)
class Run:
    """One occurrence's run: what ``GET /v1/tasks/{id}/runs`` lists."""

    run_id: str
    task_id: str
    scheduled_for: datetime
    status: RunStatus
    attempts: int = 0
    fired_at: datetime | None = None
    lateness_ms: int | None = None
    last_error: str | None = None
    throttled_ms: int = 0
    """How long limits per destination held the run back (shared/domain/limits.py)."""
    parent: ParentRun | None = None
    """A chained run's parent occurrence (shared/domain/chains.py)."""
    started: tuple[str, ...] = ()
    """The ARNs of what its targets started (a Step Functions execution, an ECS task), in the
    order they started, every attempt's."""


@dataclass(frozen=True)
class LastRun:
    """A task's latest occurrence, in brief: what an operator looks at first."""

    run_id: str
    scheduled_for: datetime
    status: RunStatus
    fired_at: datetime | None = None

    @classmethod
    def of(cls, run: Run) -> LastRun:
        return cls(run.run_id, run.scheduled_for, run.status, run.fired_at)


@dataclass(frozen=True, kw_only=True)
class Task(TaskSpec):
    """A registered task: what its client asked for (the :class:`TaskSpec` it extends, declared
    once there) and what Sundial keeps about it."""

    id: str
    tenant: str
    misfire: Misfire
    """Resolved: the spec's, or its schedule's default (``TaskSpec.effective_misfire``)."""
    status: TaskStatus
    due_at: datetime
    """The occurrence the task's item is currently due for."""
    next_fire_at: datetime | None
    created_at: datetime
    updated_at: datetime
    version: int = 0
    expires_at: datetime | None = None
    """When a finished task is forgotten (DynamoDB TTL); ``None`` while it can still fire."""
    run: Run | None = None
    """The run of the current occurrence (a one-shot task's only run), once it has started."""
    parent_id: str | None = None
    """Set on an extra run (run now, a redriven dead letter): it is a one-shot task of its own,
    unlisted, that fires its parent's targets and reports as its parent (docs/management.md)."""
    stops_with_parent: bool = False
    """An extra run that the parent's pause or cancel stops until it is claimed (run now); a
    redriven dead letter fires regardless of what became of its task."""
    paused_reason: str | None = None
    """Why the pipeline paused the task (``pause_after_failures``); cleared by a resume."""
    consecutive_failures: int = 0
    """Its occurrences that failed in a row, up to the last one that ended (shared/domain/alerts.py)."""
    chain: ChainLink | None = None
    """On a chained run (an extra run a parent occurrence started): its parent, its hop."""
    workflow: NodeLink | None = None
    """On a workflow node's run: its workflow run and its parents' outcomes (docs/workflows.md)."""
    ended_run: LastRun | None = None
    """The latest occurrence that ended and is no longer the item's current run: a recurring
    task's previous occurrence, or an extra run of this task (run now, a chained run, a redrive)."""

    @property
    def last_run(self) -> LastRun | None:
        """The task's latest occurrence (null before the first): its current run when it has one
        that is no older than the latest ended elsewhere, else that one."""
        current = LastRun.of(self.run) if self.run is not None else None
        if current is None or (self.ended_run is not None and self.ended_run.scheduled_for > current.scheduled_for):
            return self.ended_run
        return current

    @property
    def recurring(self) -> bool:
        return is_recurring(self.schedule)

    @property
    def spec(self) -> TaskSpec:
        """What the task's client asked for, as it stands now (its misfire policy resolved)."""
        return TaskSpec(**spec_values(self))

    def with_spec(self, spec: TaskSpec, **changes: Any) -> Task:
        """This task asking for ``spec``, with ``changes`` to any of its fields (a resolved
        ``misfire`` among them when the spec leaves it to its schedule's default)."""
        return replace(self, **{**spec_values(spec), **changes})

    @property
    def owner_id(self) -> str:
        """The task a receiver, the run history and the dead letters know this one as."""
        return self.parent_id or self.id

    def chained(self, branch: Branch) -> tuple[str, ...]:
        """The tasks an occurrence that ended on ``branch`` starts."""
        return self.on_success if branch is Branch.SUCCESS else self.on_failure


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None = None
    cursors: tuple[str, ...] = ()
    """The cursor that goes on after each item (as many as ``items``): the API may answer fewer
    items than a store read (a page too large for Lambda's answer) and go on from there."""


@dataclass(frozen=True)
class DeadLetter:
    """An occurrence that failed for good (``GET /v1/dead-letters``): what failed, why, and
    what it fired, so a redrive fires the same targets and payload once more."""

    id: str
    """The failed run's id (one run dead-letters once)."""
    tenant: str
    task_id: str
    run_id: str
    scheduled_for: datetime
    failed_at: datetime
    attempts: int
    reason: str
    targets: tuple[Target, ...]
    multicast: bool
    payload: Any
    retry: RetryPolicy
    name: str | None = None
    redriven_run_id: str | None = None
    redriven_at: datetime | None = None
    workflow: NodeRef | None = None
    """A workflow node's run: its workflow run and node (``task_id`` is then the workflow's id,
    as in the node's callback body)."""
    schedule_arn: str | None = None
    """An occurrence of a task made through the EventBridge Scheduler API: its schedule's ARN (the
    task's ``eventbridge.arn`` then), so that a redrive sends its targets the schedule's ``Input``
    as the occurrence did, even if the schedule is gone since."""

    @property
    def status(self) -> LetterStatus:
        return LetterStatus.REDRIVEN if self.redriven_run_id else LetterStatus.DEAD_LETTERED


@dataclass(frozen=True)
class DeadLetterRef:
    """A dead letter being redriven: the tenant's partition and its run id."""

    tenant: str
    run_id: str


def matches(
    task: Task, status: TaskStatus | TaskFilter | None, name_prefix: str | None, tag: tuple[str, str] | None = None
) -> bool:
    """Whether a task passes the listing's filters (``tag``: a key and its value)."""
    if status is not None and not passes(task.status, task.paused_reason, TaskFilter(status.value)):
        return False
    if tag is not None and not has_tag(task.tags, tag):
        return False
    return name_prefix is None or (task.name or "").startswith(name_prefix)
