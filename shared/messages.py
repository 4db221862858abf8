"""What Sundial's functions receive from their queues and events, as typed models: each edge
parses its input once, here, and a record that is not what its queue carries fails alone (a
partial batch failure), with pydantic saying which field is wrong.

The wire forms are the ones the queues and the state machine have always carried (a staged
occurrence's short keys among them): a message written before a deployment is read after it,
and the other way round."""

from __future__ import annotations

from datetime import datetime
from functools import cached_property
from typing import Annotated, Any, Literal

from aws_lambda_powertools.utilities.parser.models import SqsRecordModel
from pydantic import BaseModel, ConfigDict, Field, Json, NonNegativeInt, PositiveInt, TypeAdapter, ValidationError

from shared.domain import canary
from shared.domain.firing import Staged
from shared.domain.tasks import Priority


class ScanRequest(BaseModel):
    """One bucket shard to scan, from the tick."""

    shard: int = Field(ge=0)
    tick_ms: int | None = None
    """When the tick asked: a scan whose shard's mark already covers it has nothing to do."""
    since_ms: int | None = None
    """Where the tick found the shard clean up to: the scan starts there if its mark is earlier."""


class ScanInvocation(BaseModel):
    """The scanner's event: the shards one asynchronous invocation from the tick scans, one after
    another (shared/adapters/scans.py sends it)."""

    requests: list[ScanRequest] = Field(min_length=1)

    def payload(self) -> bytes:
        return self.model_dump_json(exclude_none=True).encode()


class DrainInvocation(BaseModel):
    """The recovering trigger's event: the tick found messages waiting in the stranded queue
    (shared/adapters/stranded.py sends it), which the function receives and fires itself."""

    drain: Literal[True]

    def payload(self) -> bytes:
        return self.model_dump_json().encode()


class StagedMessage(BaseModel):
    """A staged occurrence as the delay queues carry it (:func:`staged_message` writes it). Keys
    are one letter each: a scan sends thousands of these."""

    model_config = ConfigDict(frozen=True)  # other keys (a dead letter's reason...) are ignored

    t: str
    d: int
    r: str
    a: int = 1
    o: bool = True
    h: bool = False
    s: int | None = None
    v: list[tuple[str, int]] | None = None
    y: int | None = None
    w: int = 0
    p: str | None = None
    """``high``, or absent: normal (an unknown lane is normal, as before priorities)."""
    g: int | None = None
    """When its writer staged it (``Staged.writer_ms``); absent: a scanner did, or a message
    staged before writers said so (read as a scanner's)."""

    def staged(self) -> Staged:
        return Staged(
            task_id=self.t,
            due_ms=self.d,
            run_id=self.r,
            attempt=self.a,
            one_shot=self.o,
            held=self.h,
            start_ms=self.s,
            booked=tuple(self.v or ()),
            ready_ms=self.y,
            throttled_ms=self.w,
            priority=Priority.HIGH if self.p == Priority.HIGH.value else Priority.NORMAL,
            writer_ms=self.g,
        )


def staged_message(staged: Staged) -> dict[str, object]:
    """The wire form :class:`StagedMessage` reads: only what differs from the defaults beyond
    the occurrence itself, so a message stays small."""
    message: dict[str, object] = {
        "t": staged.task_id,
        "d": staged.due_ms,
        "r": staged.run_id,
        "a": staged.attempt,
        "o": staged.one_shot,
    }
    if staged.start_ms is not None:  # a held copy's booked start, or a retry's due start
        message["s"] = staged.start_ms
    if staged.held:
        message["h"] = 1
        if staged.booked:
            message["v"] = [[name, version] for name, version in staged.booked]
        if staged.ready_ms is not None:
            message["y"] = staged.ready_ms
    if staged.throttled_ms:
        message["w"] = staged.throttled_ms
    if staged.priority is not Priority.NORMAL:
        message["p"] = staged.priority.value  # absent: normal (messages staged before priorities)
    if staged.writer_ms is not None:
        message["g"] = staged.writer_ms
    return message


class StagedRecord(SqsRecordModel):
    """A record of a trigger's event (a delay queue's, the high lane's or the stranded queue's)."""

    body: Json[StagedMessage]

    @cached_property
    def staged(self) -> Staged:
        return self.body.staged()

    @property
    def receives(self) -> int:
        """How many times SQS has handed this message out, this time included."""
        return int(self.attributes.ApproximateReceiveCount)


class _RetriedStep(BaseModel):
    """A step whose state Step Functions retries: a failure says which attempt it was."""

    job_id: str
    retry_count: NonNegativeInt | None = None
    """The state's ``$$.State.RetryCount``: 0 (or none) on its first attempt."""

    @property
    def attempt(self) -> int:
        return (self.retry_count or 0) + 1


class PreStep(_RetriedStep):
    step: Literal["pre"]


class ShardStep(_RetriedStep):
    step: Literal["shard"]
    level: NonNegativeInt
    shard: NonNegativeInt
    shard_count: PositiveInt


class PostStep(_RetriedStep):
    step: Literal["post"]


MAX_CAUSE_CHARS = 4000
"""Of a failed step's errorMessage: a processor's failure, as JSON, is well under it."""
MAX_OTHER_CAUSE_CHARS = 1000
"""Of any other cause, kept as it came."""


class LambdaError(BaseModel):
    """A failed Lambda's error payload, which Step Functions hands on as the error's cause."""

    errorMessage: Any


def cause_message(cause: Any) -> str | None:
    """What a failure's cause says: a failed Lambda's ``errorMessage`` (a processor's failure:
    ``StepFailure.message()``, about 1 KB, read whole), else the cause as it came."""
    if not isinstance(cause, str):
        return None
    try:
        return str(LambdaError.model_validate_json(cause).errorMessage)[:MAX_CAUSE_CHARS]
    except ValidationError:
        return cause[:MAX_OTHER_CAUSE_CHARS]


class FailStep(BaseModel):
    """The state machine's Catch: the error and cause of what failed."""

    step: Literal["fail"]
    job_id: str
    error: str | None = None
    cause: Any = None

    @property
    def reason(self) -> str:
        return self.error or "failed"

    @property
    def cause_message(self) -> str | None:
        return cause_message(self.cause)


class NotifyStep(BaseModel):
    """A ``notify`` threshold a shard's progress report crossed (docs/jobs.md, section 7): the API
    claimed it and invokes the job function asynchronously to send it."""

    step: Literal["notify"]
    job_id: str
    threshold: int = Field(ge=1, le=100)
    done_items: NonNegativeInt
    total_items: PositiveInt

    def payload(self) -> bytes:
        return self.model_dump_json().encode()


JobStepCall = Annotated[PreStep | ShardStep | PostStep | FailStep | NotifyStep, Field(discriminator="step")]
"""What each Lambda task state of the job state machine (infra/jobs.py) passes the job function,
and the API's notify of a threshold crossed by items."""


class ExecutionDetail(BaseModel):
    """What the job function reads of an execution's status change."""

    name: str
    """The execution's name: its job's id."""
    status: str = "FAILED"
    error: str | None = None
    cause: str | None = None

    @property
    def reason(self) -> str:
        return f"the job's execution ended {self.status.lower().replace('_', ' ')}"

    @property
    def cause_message(self) -> str | None:
        return cause_message(self.cause or self.error)


class ExecutionEnded(BaseModel):
    """Step Functions' status change of a jobs execution that ended FAILED, TIMED_OUT or ABORTED,
    as the stack's EventBridge rule delivers it (infra/job_runner.py)."""

    source: Literal["aws.states"]
    detail: ExecutionDetail


JobEvent = JobStepCall | ExecutionEnded
"""Anything the job function is invoked with."""
_JOB_EVENTS: TypeAdapter[JobEvent] = TypeAdapter(JobEvent)


def job_event(event: Any) -> JobEvent:
    """The job function's event, parsed (``ValidationError`` names what is wrong with it)."""
    return _JOB_EVENTS.validate_python(event)


class CanaryFire(BaseModel):
    """A call of the canary task (shared/domain/canary.py): its Lambda target's body, of which the
    canary reads when the occurrence was due and when the trigger fired it."""

    scheduled_for: datetime
    fired_at: datetime

    @property
    def lateness_ms(self) -> int:
        return canary.lateness_ms(self.scheduled_for, self.fired_at)


class CanaryProperties(BaseModel):
    """The custom resource's properties as CloudFormation sends them: the service token, and the
    canary's own (any other member, such as ``ServiceTimeout``, is not the canary's and is
    ignored)."""

    service_token: str = Field(alias="ServiceToken")
    """The function CloudFormation invoked (required of every custom resource)."""
    function_arn: str = Field(alias="FunctionArn")
    """The canary function: the canary task's target."""


class CustomResourceRequest(BaseModel):
    """CloudFormation's request to the canary's custom resource, every member the documented
    request object has ("Custom resource request objects",
    https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-requests.html, and
    its pages of each request type, Create, Update and Delete; tests/data/aws/cloudformation/ holds
    one of each, parsed by tests/unit/test_messages.py)."""

    model_config = ConfigDict(populate_by_name=True)

    request_type: Literal["Create", "Update", "Delete"] = Field(alias="RequestType")
    response_url: str = Field(alias="ResponseURL")
    """The presigned S3 URL the answer is PUT to."""
    stack_id: str = Field(alias="StackId")
    request_id: str = Field(alias="RequestId")
    resource_type: str = Field(alias="ResourceType")
    logical_resource_id: str = Field(alias="LogicalResourceId")
    physical_resource_id: str | None = Field(None, alias="PhysicalResourceId")
    """The id the first answer gave; None on a create."""
    properties: CanaryProperties = Field(alias="ResourceProperties")
    old_properties: CanaryProperties | None = Field(None, alias="OldResourceProperties")
    """An update's properties before it; None otherwise."""


CanaryEvent = CanaryFire | CustomResourceRequest
"""Anything the canary function is invoked with."""
_CANARY_EVENTS: TypeAdapter[CanaryEvent] = TypeAdapter(CanaryEvent)


def canary_event(event: Any) -> CanaryEvent:
    """The canary function's event, parsed (``ValidationError`` names what is wrong with it)."""
    return _CANARY_EVENTS.validate_python(event)
