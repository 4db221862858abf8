"""The world an execution runs in: the product's firing core, task service and recorder, over the
in-memory task repository and pipeline store (held to DynamoDB's contract by
tests/integration/test_pipeline_store_contract.py), with every port gated (:class:`Gated`) and
SQS modelled as AWS documents it.

SQS, as the model has it (each rule cited where it is applied):
- a message sent with a delay becomes receivable that many seconds later;
- a receive hides the message for the visibility timeout; a message whose handler failed (the
  record reported in ``batchItemFailures``, or the whole invocation lost: a crash, a timeout)
  becomes receivable again when it runs out, with its receive count one higher;
- standard queues deliver at least once: a message can be received twice at the same time
  (the cases start such copies);
- a message received ``maxReceiveCount`` times and failed again moves to the queue's DLQ.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from shared.delivery import Envelope, Outcome
from shared.delivery.envelope import IDEMPOTENCY_KEY
from shared.domain.buckets import MINUTE_MS
from shared.domain.claims import Handled, Result
from shared.domain.firing import Staged, Timing
from shared.domain.tasks import HttpTarget, Target, Task
from shared.domain.times import from_ms
from shared.domain.workflow_defs import Workflow
from shared.services.firing import Batch, Trigger
from shared.services.firing.alerts import AlertSender
from shared.services.firing.call import Caller
from shared.services.firing.claim import Claimer
from shared.services.firing.record import Recorder
from shared.services.tasks import TaskService
from shared.services.workflows import ItemNodeStarter, WorkflowRuns
from shared.topology import DELAY_MAX_RECEIVES, DELAY_VISIBILITY_TIMEOUT_S, STRANDED_RECEIVES, TRIGGER_TIMEOUT_S
from tests.support.fakes import InMemoryTaskRepository
from tests.support.firing import DeadLetters, FakeClock
from tests.support.pipeline_store import InMemoryPipelineStore
from tests.support.workflows import InMemoryWorkflowRuns
from verify.engine import Stage

RETENTION = timedelta(days=30)
VISIBILITY_MS = DELAY_VISIBILITY_TIMEOUT_S * 1000
"""The delay queues' visibility timeout: a failed or lost receive is receivable again this much later
(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-visibility-timeout.html)."""
TRIGGER_TIMEOUT_MS = TRIGGER_TIMEOUT_S * 1000
"""Lambda stops an invocation at its function's timeout
(https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html): a call still waiting
then is a crash mid-call."""


class Gated:
    """A port whose every public method first stops at the stage's gate (``<name>.<method>``)."""

    def __init__(self, stage: Stage, inner: Any, name: str) -> None:
        self._stage, self._inner, self._name = stage, inner, name

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._inner, attr)
        if attr.startswith("_") or not callable(value):
            return value
        stage, label = self._stage, f"{self._name}.{attr}"

        def gated(*args: Any, **kwargs: Any) -> Any:
            stage.gate(label)
            return value(*args, **kwargs)

        self.__dict__[attr] = gated  # the next look finds it without __getattr__
        return gated


@dataclass
class Message:
    """One SQS message of the delay queues (a copy of it, when SQS delivers one twice)."""

    id: str
    staged: Staged
    visible_ms: int
    receives: int = 0
    stranded: bool = False
    """Moved to the stranded queue after its last receive from a delay queue: the recovering
    trigger takes it as a last delivery (shared/topology.py, STRANDED)."""


@dataclass
class Sqs:
    """The delay queues and the DLQ, as the trigger's ports see them (DelayQueues, Stager)."""

    clock: FakeClock
    waiting: list[Message] = field(default_factory=list)
    dlq: list[tuple[Staged, str]] = field(default_factory=list)
    """What the trigger sent to the DLQ itself (a dead letter), with why."""
    moved: list[Message] = field(default_factory=list)
    """Messages SQS moved to the DLQ after their last receive: occurrences the trigger never gave up."""
    sent: int = 0

    def _add(self, staged: Staged, delay_s: int) -> None:
        self.sent += 1
        self.waiting.append(Message(f"m{self.sent}", staged, self.clock() + delay_s * 1000))

    def stage(self, occurrences: Any, now_ms: int) -> None:
        for staged in occurrences:
            self._add(staged, 0)

    def send(self, messages: Any) -> None:
        for staged, delay_s in messages:
            self._add(staged, delay_s)

    def dead_letter(self, staged: Staged, reason: str, task_id: str | None = None) -> None:
        self.dlq.append((staged, reason))

    def copy(self, message: Message) -> Message:
        """A second delivery of one message (standard queues deliver at least once:
        https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/standard-queues-at-least-once-delivery.html)."""
        self.sent += 1
        twin = replace(message, id=f"{message.id}'{self.sent}")
        self.waiting.append(twin)
        return twin

    def failed(self, message: Message) -> None:
        """The receive failed (or its invocation was lost): back after the visibility timeout;
        after its last receive moved on by the queue's redrive policy (its maxReceiveCount:
        https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html),
        from a delay queue to the stranded queue, whose drain the next minute's tick asks for,
        and from there to the dead-letter queue (alarmed; nothing takes it)."""
        if message.stranded and message.receives >= DELAY_MAX_RECEIVES + STRANDED_RECEIVES:
            self.moved.append(message)
        elif not message.stranded and message.receives >= DELAY_MAX_RECEIVES:
            self.waiting.append(replace(message, visible_ms=self.clock() + MINUTE_MS, stranded=True))
        else:
            self.waiting.append(replace(message, visible_ms=self.clock() + VISIBILITY_MS))


@dataclass(frozen=True)
class Call:
    """One call of a target, as its receiver saw it."""

    actor: str
    url: str
    run_id: str
    attempt: int
    key: str
    """The Idempotency-Key header."""
    at_ms: int
    step: int
    """The step it was made at (the stage's log)."""
    looked: tuple[int, int] | None
    """The caller's last look at its task then: (step, clock)."""


@dataclass
class Receiver:
    """Answers each URL's calls as scripted, in turn (the last answer repeats). A call is two
    steps: its request (``call``) and its answer (``answer``): a crash between them is a crash
    mid-call, the receiver having done its work."""

    stage: Stage
    clock: FakeClock
    looks: dict[str, tuple[int, int]]
    scripts: dict[str, list[Outcome | Exception]] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)

    def deliver(self, target: Target, envelope: Envelope) -> Outcome:
        assert isinstance(target, HttpTarget)
        self.stage.gate(f"call {target.url}")
        actor = self.stage.current.name if self.stage.current is not None else "?"
        headers = envelope.headers()
        call = Call(
            actor,
            target.url,
            envelope.run_id,
            envelope.attempt,
            headers[IDEMPOTENCY_KEY],
            self.clock(),
            len(self.stage.log),
            self.looks.get(actor),
        )
        self.calls.append(call)
        made = sum(1 for made in self.calls if made.url == target.url)
        script = self.scripts.get(target.url, [Outcome.success(200)])
        answer = script[min(made, len(script)) - 1]
        self.stage.gate(f"answer {target.url}")
        if isinstance(answer, Exception):
            raise answer  # the trigger's own failure (a bug in delivery), not the receiver's answer
        return answer


@dataclass
class Events:
    """What the invariants read: each effective write that ends a run, re-arms a task or
    acknowledges a client, in order, with the step it happened at."""

    ended: list[tuple[str, str]] = field(default_factory=list)
    """(run id, how): a write that recorded the run's end."""
    rearmed: list[tuple[str, int | None]] = field(default_factory=list)
    """(run id, next due): a re-arm that took."""
    acknowledged: list[tuple[str, int]] = field(default_factory=list)
    """(what, the step at which it was answered)."""
    looks: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Each actor's last look at its task: (step, clock)."""
    crashes: list[tuple[str, str]] = field(default_factory=list)
    """(actor, the gate it died at)."""
    answers: list[tuple[str, Result | None, str | None]] = field(default_factory=list)
    """(actor, its occurrence's result, the error it raised)."""


class ObservedStore:
    """The pipeline store, with its effective end writes and re-arms noted (:class:`Events`), and
    each actor's last look at its task (a claim or a read of the task's status)."""

    def __init__(self, inner: InMemoryPipelineStore, events: Events, stage: Stage, clock: FakeClock) -> None:
        self._inner, self._events, self._stage, self._clock = inner, events, stage, clock

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._inner, attr)

    def _looked(self) -> None:
        if self._stage.current is not None:
            self._events.looks[self._stage.current.name] = (len(self._stage.log), self._clock())

    def claim(self, staged: Staged, **kwargs: Any) -> Any:
        self._looked()
        return self._inner.claim(staged, **kwargs)

    def status_of(self, task_id: str) -> Any:
        self._looked()
        return self._inner.status_of(task_id)

    def finish_one_shot(self, staged: Staged, run: Any, **kwargs: Any) -> bool:
        logged_in, counted_in = kwargs.get("logged_in"), kwargs.get("counted_in")
        # with both, a run log written after all answers True without a write (it ended there)
        found = logged_in is not None and counted_in is not None and logged_in in self._inner.repository.run_logs
        done = self._inner.finish_one_shot(staged, run, **kwargs)
        if done and not found:
            self._events.ended.append((staged.run_id, f"finish_one_shot {run.status.value}"))
        return done

    def _logged(self, run_id: str) -> int:
        return sum(1 for log in self._inner.repository.run_logs.values() if run_id in log)

    def log_successes(self, log_id: str, successes: list[Any], now_ms: int) -> None:
        before = {s.run_id: self._logged(s.run_id) for s in successes}
        self._inner.log_successes(log_id, successes, now_ms)
        for s in successes:
            if self._logged(s.run_id) > before[s.run_id]:
                self._events.ended.append((s.run_id, "run log success"))

    def rearm(self, task: Any, staged: Staged, run: Any, **kwargs: Any) -> bool:
        records = self._inner.repository.recorded_runs.get(task.id, {})
        key = f"{staged.due_ms:013d}#{staged.run_id}"
        before = records.get(key)
        done = self._inner.rearm(task, staged, run, **kwargs)
        after = self._inner.repository.recorded_runs.get(task.id, {}).get(key)
        if after is not None and after is not before:
            self._events.ended.append((staged.run_id, f"run record {run.status.value}"))
        if done:
            self._events.rearmed.append((staged.run_id, kwargs.get("next_due_ms")))
        return done


@dataclass
class _Definitions:
    """Workflow definitions by id, as the node starter reads them (one version each)."""

    by_id: dict[str, Workflow]

    def version(self, workflow_id: str, version: int) -> Workflow:
        return self.by_id[workflow_id]


class World:
    """One execution's system: a stage, the product's services wired over gated ports, SQS."""

    def __init__(self, now_ms: int, timing: Timing | None = None, *, log_ids: Callable[[], str] | None = None) -> None:
        self.timing = timing or Timing()
        self.stage = Stage()
        self.clock = FakeClock(now_ms)
        self.events = Events()
        self.repository = InMemoryTaskRepository(retention=RETENTION)
        self.repository.copy_reads = False
        self.store = InMemoryPipelineStore(self.repository, retention_ms=int(RETENTION.total_seconds() * 1000))
        self.sqs = Sqs(self.clock)
        self.receiver = Receiver(self.stage, self.clock, self.events.looks)
        self.dead_letters = DeadLetters(redriven=self.repository.redriven)
        stage = self.stage
        store = Gated(stage, ObservedStore(self.store, self.events, stage, self.clock), "store")
        queues = Gated(stage, self.sqs, "sqs")
        self.service = TaskService(
            Gated(stage, self.repository, "repository"),
            bucket_shards=1,
            retention=RETENTION,
            stager=queues,
            dead_letters_store=Gated(stage, self.dead_letters, "dead_letters"),
            timing=self.timing,
            clock=lambda: from_ms(self.clock()),
            randbytes=random.Random(0).randbytes,  # ids differ, and are the same in every execution
        )
        self.workflow_runs = InMemoryWorkflowRuns()
        self.definitions: dict[str, Workflow] = {}
        """The workflows' definitions (a case adds its own): one version each."""
        starter = ItemNodeStarter(_Definitions(self.definitions), self.service, clock=self.clock)
        self.workflows = WorkflowRuns(Gated(stage, self.workflow_runs, "workflow_runs"), starter, 1, clock=self.clock)
        self.trigger = Trigger(
            Claimer(store, queues, self.timing, clock=self.clock, sleep=self.clock.sleep),
            Caller(self.receiver, self.timing, clock=self.clock, sleep=self.clock.sleep),
            Recorder(
                store,
                queues,
                Gated(stage, self.dead_letters, "dead_letters"),
                self.timing,
                chains=self.service,
                workflows=self.workflows,
                clock=self.clock,
                sleep=self.clock.sleep,
            ),
            AlertSender(self.receiver, sleep=self.clock.sleep),
            clock=self.clock,
        )
        self.batches = 0
        self.started_ms: dict[str, int] = {}
        """When each trigger invocation started (its timeout counts from then)."""
        self.tenant = "acme"
        self.subject: Task | None = None
        """The case's task."""
        self.first_run_id = ""
        self.first_due_ms = 0
        self.child: Task | None = None
        """A chain case's chained task."""
        self.patched: Task | None = None
        """A patch case's answer."""

    def deliver(self, message: Message) -> Callable[[], Handled]:
        """A trigger invocation with ``message`` its one record (functions/trigger/handler.py):
        fire, record the batch's successes, answer SQS. The answer is the last step: a crash
        before it loses the invocation, and SQS delivers the message again."""

        def invocation() -> Handled:
            self.batches += 1
            batch = Batch(self.trigger, f"batch{self.batches}")
            batch.take_turns([(message.id, message.staged)])
            receives = self.trigger.max_receives if message.stranded else message.receives  # functions/recover
            fired = batch.fire(message.staged, message.id, receives)
            batch.close()
            self.stage.gate("answer SQS")
            return fired

        return invocation
