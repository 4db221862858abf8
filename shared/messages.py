"""What Sundial's functions receive from their queues and events, as typed models: each edge
parses its input once, here, and a record that is not what its queue carries fails alone (a
partial batch failure), with pydantic saying which field is wrong.

The wire forms are the ones the queues and the state machine have always carried (a staged
occurrence's short keys among them): a message written before a deployment is read after it,
and the other way round."""

from __future__ import annotations

from functools import cached_property

from aws_lambda_powertools.utilities.parser.models import SqsRecordModel
from pydantic import BaseModel, ConfigDict, Field, Json

from shared.domain.firing import Staged
from shared.domain.tasks import Priority


class ScanRequest(BaseModel):
    """One bucket shard to scan, from the tick (the scan-request queue)."""

    shard: int = Field(ge=0)
    tick_ms: int | None = None
    """When the tick asked: a scan whose shard's mark already covers it has nothing to do."""

    def body(self) -> str:
        return self.model_dump_json()


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
    return message


class ScanRequestRecord(SqsRecordModel):
    body: Json[ScanRequest]


class StagedRecord(SqsRecordModel):
    body: Json[StagedMessage]

    @cached_property
    def staged(self) -> Staged:
        return self.body.staged()

    @property
    def receives(self) -> int:
        """How many times SQS has handed this message out, this time included."""
        return int(self.attributes.ApproximateReceiveCount)
