"""The local runtime in the model, to hold the model against `make bench` (docs/scale.md, "Checked
against the local runtime").

The pipeline is the deployed one's (sim/pipeline.py: the buckets, ``scan_window``,
``delay_seconds``, the claims in due order, fire at ``max(due, claimed)`` plus the call), on the
local runtime's surroundings (local/runtime.py, local/settings.py, local/sqs_lambda.py):

* **moto**, one Python server process, is one FIFO server: every DynamoDB and SQS call waits its
  turn and takes its kind's service time (:class:`MotoCosts`), plus the round trip outside moto;
* the **tick** every second, aligned to the second, deals the shards with something in their
  window into at most ``scanner_max_concurrency`` groups and invokes the scanner once per group,
  one Invoke (``InvocationType=Event``) after another: the runtime forwards the event to the
  **worker pool** and answers 202 at once (assumed to cost moto :attr:`MotoCosts.invoke_ms`; the
  tick's own looks at the shards are not modelled); the invocation scans its shards in turn on
  one worker, each: begin (UpdateItem), one Query per minute of its window, one SendMessageBatch
  per queue and ten messages, end (UpdateItem);
* one **poller per delay queue**, a long poll of up to ten messages that returns as soon as a
  message is receivable, hands what it got to the **batching window** (a batch at ten messages
  or one second after its first) and polls again;
* a **worker pool** of 128 threads runs the batches: the claims in due order (one claim, a
  conditional UpdateItem returning the task, each), each occurrence fired at
  ``max(due, claimed) + call`` (drawn), then the run log (PutItem),
  the places given back (UpdateItem) and the delete (DeleteMessageBatch).

Every time is a parameter: moto's service time per kind of call (:class:`MotoCosts`) and the
runtime's settings (:class:`LocalRuntime`); the defaults say where they come from. The sim may not
import local/ (the import contract ``sim-on-the-domain``): tests/unit/test_sim_local.py checks
that the defaults agree with local/settings.py and shared/topology.py.
"""

from __future__ import annotations

import functools
import json
import math
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from shared.domain.buckets import minutes_between
from shared.domain.firing import Timing, delay_seconds, scan_window
from shared.topology import EVENT_SOURCE_LONG_POLL_S, TRIGGER_BATCHING_WINDOW_S
from sim.aws import DelayQueue, Message
from sim.engine import Loop
from sim.latency import Latency
from sim.metrics import percentile
from sim.pipeline import SCAN_RESERVE_MS, Deployment, Invocation, Model, groups

NINE = 1_767_258_000_000
"""2026-01-01T09:00:00Z: the first due time (any second would do)."""
KINDS = (
    "Claim",
    "UpdateItem",
    "PutItem",
    "Query",
    "SendMessageBatch",
    "ReceiveMessage",
    "DeleteMessageBatch",
    "Invoke",
)


@dataclass(frozen=True)
class MotoCosts:
    """moto's server time per call, in milliseconds of its one core, and the round trip outside
    it (``make simulate ARGS="--local --moto-ms Query=3.1 ..."`` replaces any of them). Measured
    by `make bench ARGS="--costs"` (bench/costs.py: 300 calls of each kind from one thread on the
    local runtime's moto, its CPU time from /proc less its idle ticking) on the 2-core machine
    docs/measured.md's figures come from, with the moto patches of local/moto_patches/ (the send no longer counts
    its queue); the receive's growth with its queue was measured once before them."""

    claim_ms: float = 4.2
    """A claim (conditional UpdateItem of the task's item, ReturnValues ALL_NEW): 4.16 ms of
    moto's CPU, 5.6 ms a round trip from one thread."""
    update_item_ms: float = 1.9
    """The other UpdateItems, on small items: the scans' lease and mark, the batch's places
    given back (a scan's lease then its mark: 1.92 ms each)."""
    put_item_ms: float = 1.4
    """The run log's PutItem (a 600 B item: 1.40 ms)."""
    query_ms: float = 1.4
    """One bucket partition's Query, besides the items it returns (nothing due: 1.43 ms)."""
    query_per_item_ms: float = 0.135
    """Each item a Query returns (145 items: 21.0 ms; the scan of a second at 100 fires a second
    on 2 shards returns about 50)."""
    send_message_batch_ms: float = 2.2
    """Ten messages into a queue (2.24 ms into a queue of 500 and more)."""
    send_per_entry_queued_ms: float = 0.0
    """What a sent message costs per message already queued. Unpatched moto builds the queue's
    attributes for every message sent, counting its messages (a batch of 10 measured 2.9, 10.0
    and 79.9 ms at 0, 50 and 500 queued: 0.015); local/moto_patches/sqs.py's ``make_send_linear`` took
    that out."""
    receive_message_ms: float = 1.9
    """A long poll's answer of up to ten messages (its wait costs no CPU), besides the queue's
    length (below). A receive and a delete of ten measured 3.5 ms together, split here in the
    proportion measured once before (2.3 and 1.9)."""
    receive_per_queued_ms: float = 0.013
    """Measured once before the patches: 2.4, 2.7 and 8.9 ms at 0, 50 and 500 messages queued."""
    delete_message_batch_ms: float = 1.6
    """Ten receipt handles (see the receive)."""
    invoke_ms: float = 2.0
    """*Assumption, not measured*: the tick's Invoke of the scanner (``InvocationType=Event``):
    moto's Lambda takes the request and forwards it to the runtime, which queues the event for its
    worker pool and answers 202 at once (about a small UpdateItem's time). ``--moto-ms Invoke=0``
    models a runtime that answers the Invoke without moto."""
    round_trip_ms: float = 1.5
    """Client and loopback outside moto, per call: a claim's 5.6 ms round trip less its 4.2 ms."""

    def service_ms(self, kind: str, entries: int = 0, queued: int = 0) -> float:
        """A ``kind`` call's time in moto; ``entries`` sent into, or a receive from, a queue of
        ``queued`` messages (delayed, receivable and in flight) costs more."""
        if kind == "SendMessageBatch":
            return self.send_message_batch_ms + self.send_per_entry_queued_ms * entries * queued
        if kind == "ReceiveMessage":
            return self.receive_message_ms + self.receive_per_queued_ms * queued
        if kind == "Query":
            return self.query_ms + self.query_per_item_ms * entries
        return self.of(kind)

    def of(self, kind: str) -> float:
        return float(getattr(self, _FIELD[kind]))

    def with_overrides(self, overrides: dict[str, float]) -> MotoCosts:
        """These costs with ``{"Query": 3.1, ...}`` (an operation's name or a field's)."""
        values = asdict(self)
        for name, value in overrides.items():
            key = _FIELD.get(name, name)
            if key not in values:
                raise ValueError(f"no moto cost {name!r}: one of {', '.join((*KINDS, *values))}")
            values[key] = float(value)
        return MotoCosts(**values)


_FIELD = {
    "Claim": "claim_ms",
    "UpdateItem": "update_item_ms",
    "PutItem": "put_item_ms",
    "Query": "query_ms",
    "SendMessageBatch": "send_message_batch_ms",
    "ReceiveMessage": "receive_message_ms",
    "DeleteMessageBatch": "delete_message_batch_ms",
    "Invoke": "invoke_ms",
}


LOCAL_CALL = Latency(
    2.0,
    5.2,
    "make bench at 8 a second (2026-11-24, after the speedups): every claim done long before its due "
    "time, so the lateness is the wake-up and the call alone, p50 2.0 ms, p99 5.2 ms",
)


@dataclass(frozen=True)
class LocalRuntime:
    """The local runtime's settings (local/settings.py, local/runtime.py, shared/topology.py)."""

    tick_period_s: float = 1.0
    """SUNDIAL_TICK_PERIOD_S: the tick runs every second, aligned to the period."""
    bucket_shards: int = 2
    timing: Timing = field(
        default_factory=lambda: Timing(look_ahead_ms=3_000, guard_ms=2_000, lead_ms=2_000, lease_ms=90_000)
    )
    """local/settings.py FUNCTIONS: look-ahead 3 s, guard 2 s, lead 2 s, lease 90 s."""
    delay_queues: int = 1
    batch_size: int = 10
    batching_window_s: float = TRIGGER_BATCHING_WINDOW_S
    long_poll_s: float = EVENT_SOURCE_LONG_POLL_S
    workers: int = 128
    """Runtime.workers: the thread pool the batches (and the scanner's invocations) run on."""
    scanner_max_concurrency: int = 16
    """The most scanner invocations a tick makes (DeploymentSettings' default)."""
    scanner_timeout_s: float = 60.0
    """The scanner's timeout as the local runtime's context gives it (it starts no shard with less
    than 10 s of it left)."""
    visibility_timeout_s: int = 120
    """local/settings.py DELAY_VISIBILITY_S (redeliveries are counted, not modelled)."""
    call: Latency = LOCAL_CALL
    """From the claim (or the due time) to the receiver's clock: the trigger's wake-up and the HTTP
    call, drawn for each fire. Fitted to one measured run (:data:`CALIBRATION`), the only figures
    of the check that are not checked."""


def _size(queue: DelayQueue) -> int:
    """The messages moto holds for a queue: delayed, receivable and in flight."""
    return queue.pending() + queue.in_flight


class Moto:
    """One server process, one call at a time in arrival order: a call arrives half a round trip
    after it is made, waits for the calls before it, takes its kind's service time, and its
    answer is back half a round trip later."""

    def __init__(self, loop: Loop, costs: MotoCosts) -> None:
        self.loop = loop
        self.costs = costs
        self.free_at = 0.0
        self.busy_ms = 0.0
        self.calls: dict[str, int] = defaultdict(int)
        self.busy_by_kind: dict[str, float] = defaultdict(float)
        self.busy_by_second: dict[int, float] = defaultdict(float)
        self.max_wait_ms = 0.0

    def call(self, kind: str, then: Callable[..., None], *args: Any, entries: int = 0, queued: int = 0) -> float:
        """Make a ``kind`` call now (``entries`` into or from a queue of ``queued`` messages);
        ``then(*args)`` runs when its answer is back (returned)."""
        half = self.costs.round_trip_ms / 2
        arrives = self.loop.now + half
        start = max(arrives, self.free_at)
        service = self.costs.service_ms(kind, entries, queued)
        self.free_at = start + service
        self.max_wait_ms = max(self.max_wait_ms, start - arrives)
        self.busy_ms += service
        self.busy_by_kind[kind] += service
        self.calls[kind] += 1
        t = start
        while t < self.free_at:  # the busy time, second by second
            second = int(t // 1000)
            upto = min(self.free_at, (second + 1) * 1000.0)
            self.busy_by_second[second] += upto - t
            t = upto
        back = self.free_at + half
        self.loop.at(back, then, *args)
        return back

    def busy_between(self, start_ms: float, end_ms: float) -> float:
        """The fraction of ``[start_ms, end_ms)`` (whole seconds) moto was serving a call."""
        first, last = int(start_ms // 1000), math.ceil(end_ms / 1000)
        if last <= first:
            return 0.0
        return sum(self.busy_by_second.get(s, 0.0) for s in range(first, last)) / ((last - first) * 1000)


@dataclass
class Poller:
    """One long-polling thread on a queue, and (delay queues) its batching window."""

    queue: int
    waiting: bool = False
    """Its long poll is in moto, waiting for a message to become receivable."""
    expires_ms: float = 0.0
    pending: list[Message] = field(default_factory=list)
    window_timer: int = 0
    """The batching window's timer, by generation (0: none running)."""
    timers: int = 0
    looks: int = 0
    """The generation of its one pending look at the queue (older ones are void)."""


class LocalModel(Model):
    """Sundial's pipeline on the local runtime (module docstring)."""

    def __init__(self, runtime: LocalRuntime | None = None, costs: MotoCosts | None = None, seed: int = 1) -> None:
        self.local = runtime or LocalRuntime()
        local = self.local
        super().__init__(
            Deployment(
                bucket_shards=local.bucket_shards,
                delay_queues=local.delay_queues,
                batch_size=local.batch_size,
                batching_window_s=local.batching_window_s,
                scanner_max_concurrency=local.scanner_max_concurrency,
                timing=local.timing,
            ),
            seed=seed,
        )
        self.moto = Moto(self.loop, costs or MotoCosts())
        self.stop_ms = 2**62  # until run() sets it: no end
        self.pollers = [Poller(i) for i in range(local.delay_queues)]
        self.scan_groups: list[list[tuple[int, float]]] = []
        """Each scanner invocation's shards, with when each one's scan began."""
        self.scanning: set[int] = set()
        self.busy_workers = 0
        self.waiting_work: deque[Callable[[], None]] = deque()
        self.peak_workers = 0
        self.invocations = 0
        self.overdue_batches = 0
        """Batches still open when their messages' visibility timeout ran out (SQS would have
        delivered them again; the model counts them and does not redeliver)."""

    # --- running --------------------------------------------------------------------------

    def run(self, start_ms: int, first_tick_ms: int | None = None, horizon_ms: int = 600_000) -> None:
        """From ``start_ms`` until every task fired (or ``horizon_ms`` after the last is due)."""
        self.loop.now = float(start_ms)
        self.stop_ms = self.last_due_ms + horizon_ms
        self.loop.at(start_ms if first_tick_ms is None else first_tick_ms, self._tick_local)
        for poller in self.pollers:
            self._long_poll(poller)
        self.loop.run(self.stop_ms)

    def _queue(self, poller: Poller) -> DelayQueue:
        return self.queues[poller.queue]

    def _tick_local(self) -> None:
        """The tick (one at start, as the runtime's): the busy shards in at most
        ``scanner_max_concurrency`` groups, one Invoke after another, each answered 202 once the
        runtime has queued its event for the worker pool; the next tick at the next multiple of
        the period."""
        now = int(self.loop.now)
        busy, since = self._busy_shards(now)
        dealt = groups(busy, self.d.scanner_max_concurrency)
        requests = [[Message(now, shard, 1) for shard in group] for group in dealt]
        self._invoke(requests, since)
        period = int(self.local.tick_period_s * 1000)
        nxt = (int(self.loop.now) // period + 1) * period
        if self._going():
            self.loop.at(nxt, self._tick_local)

    def _sent(self, queue: DelayQueue, messages: list[Message], delays: list[int]) -> None:
        """A SendMessageBatch is in: each message is receivable after its delay; a waiting long
        poll on the queue wakes."""
        for message, delay in zip(messages, delays, strict=False):
            queue.send(self.loop.now, message, delay)
        self._wake(queue)

    def _invoke(self, requests: list[list[Message]], since: dict[int, int | None]) -> None:
        """The tick's Invokes, one after another: each event goes to the worker pool when its
        202 is back."""
        if not requests:
            return
        group, rest = requests[0], requests[1:]

        def accepted() -> None:
            self.scan_groups.append([])
            self._work(functools.partial(self._scan_group, group, since, self.scan_groups[-1], self.loop.now, 0))
            self._invoke(rest, since)

        self.moto.call("Invoke", accepted)

    def _scan_group(
        self, group: list[Message], since: dict[int, int | None], log: list[tuple[int, float]], began: float, index: int
    ) -> None:
        """One scanner invocation on one worker: its shards one after another, none started with
        less than 10 s of its timeout left; then the worker is free."""
        now = self.loop.now
        if index < len(group) and now - began <= self.local.scanner_timeout_s * 1000 - SCAN_RESERVE_MS:
            log.append((group[index].shard, now))
            following = functools.partial(self._scan_group, group, since, log, began, index + 1)
            self._scan_local(group[index], since.get(group[index].shard), following)
            return
        self.counts.scans_left += len(group) - index
        self._done()

    def _wake(self, queue: DelayQueue) -> None:
        for poller in self.pollers:
            if poller.waiting and self._queue(poller) is queue:
                self._look(poller)

    # --- pollers: long polls, the batching window -------------------------------------------

    def _long_poll(self, poller: Poller) -> None:
        """A ReceiveMessage with a long wait: it waits in moto (costing nothing) until a message
        is receivable or the wait runs out, then takes its turn and answers."""
        poller.waiting = True
        poller.expires_ms = self.loop.now + self.local.long_poll_s * 1000
        self._look(poller)

    def _look(self, poller: Poller, generation: int | None = None) -> None:
        """A waiting long poll looks at its queue: now (a send, ``generation`` None) or at the
        next message's visibility it had planned (a later look voids it)."""
        if not poller.waiting or (generation is not None and generation != poller.looks):
            return
        now = self.loop.now
        queue = self._queue(poller)
        queue.release(now)
        if queue.ready_messages() or now >= poller.expires_ms:
            poller.waiting = False
            self.moto.call("ReceiveMessage", self._received, poller, queued=_size(queue))
            return
        nxt = queue.next_visible_ms()
        wake = poller.expires_ms if nxt is None else min(nxt, poller.expires_ms)
        poller.looks += 1
        self.loop.at(wake, self._look, poller, poller.looks)

    def _received(self, poller: Poller) -> None:
        """The answer, up to ten messages receivable when moto served it, to the batching window."""
        now = self.loop.now
        messages = self._queue(poller).receive(now, min(self.local.batch_size, 10))
        if messages:
            self._window(poller, messages)
        if self._going():
            self._long_poll(poller)

    def _window(self, poller: Poller, messages: list[Message]) -> None:
        """local/sqs_lambda.py BatchingWindow.add: full batches go at once (stopping the timer);
        what is left starts a timer if none runs."""
        poller.pending.extend(messages)
        size = self.local.batch_size
        while len(poller.pending) >= size:
            self._dispatch(poller, poller.pending[:size])
            del poller.pending[:size]
            poller.window_timer = 0
        if poller.pending and poller.window_timer == 0:
            poller.timers += 1
            poller.window_timer = poller.timers
            self.loop.at(self.loop.now + self.local.batching_window_s * 1000, self._flush, poller, poller.timers)

    def _flush(self, poller: Poller, timer: int) -> None:
        if poller.window_timer != timer:
            return  # stopped: a full batch went first
        poller.window_timer = 0
        batch, poller.pending = poller.pending, []
        if batch:
            self._dispatch(poller, batch)

    def _dispatch(self, poller: Poller, messages: list[Message]) -> None:
        batch = Invocation(sorted(messages, key=lambda m: m.due_ms), poller.queue, self.loop.now)
        self.invocations += 1
        self._work(lambda: self._claim_local(batch, 0))

    # --- the worker pool ---------------------------------------------------------------------

    def _work(self, job: Callable[[], None]) -> None:
        if self.busy_workers < self.local.workers:
            self.busy_workers += 1
            self.peak_workers = max(self.peak_workers, self.busy_workers)
            job()
        else:
            self.waiting_work.append(job)

    def _done(self) -> None:
        if self.waiting_work:
            self.waiting_work.popleft()()
        else:
            self.busy_workers -= 1

    # --- the scanner ---------------------------------------------------------------------------

    def _scan_local(self, request: Message, since_ms: int | None, then: Callable[[], None]) -> None:
        """Scanner.scan of one shard: the lease (UpdateItem; refused while another scan of the
        shard holds it), then skip if the mark (or where the tick found the shard clean) covers
        the request's tick, else the window's Queries, the sends, and the mark; then ``then()``."""
        shard, tick_ms = request.shard, request.due_ms
        now = int(self.loop.now)
        if shard in self.scanning:
            self.moto.call("UpdateItem", self._scan_done, request, False, then)
            return
        self.scanning.add(shard)
        mark = self.marks[shard]
        mark = since_ms if mark is None else mark if since_ms is None else max(mark, since_ms)
        if mark is not None and mark >= tick_ms + self.timing.look_ahead_ms:
            self._chain([("UpdateItem", ()), ("UpdateItem", ())], self._scan_done, request, True, then)
            return
        start, end = scan_window(mark, now, self.timing)
        due = self._due(shard, start, end)
        minutes = len(minutes_between(start, end - 1)) if end > start else 0
        by_queue: dict[int, list[Message]] = defaultdict(list)
        for due_ms in due:
            by_queue[self.rng.randrange(len(self.queues))].append(Message(due_ms, shard, 1))
        per_query = math.ceil(len(due) / minutes) if minutes else 0
        calls: list[tuple[str, tuple[Any, ...]]] = [("UpdateItem", ()), *[("Query", (per_query,))] * minutes]
        for index, messages in sorted(by_queue.items()):
            for first in range(0, len(messages), 10):
                chunk = messages[first : first + 10]
                delays = [delay_seconds(m.due_ms, now, self.timing.lead_ms) for m in chunk]
                calls.append(("SendMessageBatch", (self.queues[index], chunk, delays)))
        calls.append(("UpdateItem", ()))
        self.marks[shard] = end  # nothing else reads it before this scan's end
        self._chain(calls, self._scan_done, request, True, then)

    def _chain(self, calls: list[tuple[str, tuple[Any, ...]]], then: Callable[..., None], *args: Any) -> None:
        """Make ``calls`` one after the other (a SendMessageBatch's messages land when it is
        answered), then ``then(*args)``."""
        if not calls:
            then(*args)
            return
        (kind, sent), rest = calls[0], calls[1:]

        def answered() -> None:
            if kind == "SendMessageBatch":
                self._sent(*sent)
            self._chain(rest, then, *args)

        if kind == "SendMessageBatch":
            queue, chunk = sent[0], sent[1]
            self.moto.call(kind, answered, entries=len(chunk), queued=_size(queue))
        elif kind == "Query":
            self.moto.call(kind, answered, entries=sent[0])
        else:
            self.moto.call(kind, answered)

    def _scan_done(self, request: Message, held: bool, then: Callable[[], None]) -> None:
        if held:
            self.scanning.discard(request.shard)
        then()

    def _deleted(self, queue: DelayQueue, messages: list[Message]) -> None:
        queue.delete(messages)
        self._done()

    # --- the trigger ---------------------------------------------------------------------------

    def _claim_local(self, batch: Invocation, index: int) -> None:
        """The claims in due order, one UpdateItem each; each occurrence fires at
        ``max(due, claimed) + call`` on its own thread while the next claim goes."""
        message = batch.messages[index]
        self.moto.call("Claim", self._claimed, batch, index, message)

    def _claimed(self, batch: Invocation, index: int, message: Message) -> None:
        now = self.loop.now
        fired = max(float(message.due_ms), now) + self.local.call.draw(self.latencies)
        self.lateness.append((message.due_ms, fired - message.due_ms, 1))
        self.counts.fired += 1
        batch.fired_until_ms = max(batch.fired_until_ms, fired)
        if index + 1 < len(batch.messages):
            self._claim_local(batch, index + 1)
        else:
            self.loop.at(batch.fired_until_ms, self._close_local, batch)

    def _close_local(self, batch: Invocation) -> None:
        """Batch.close (the run log, the places given back), then the event source's delete."""
        if self.loop.now > batch.received_ms + self.local.visibility_timeout_s * 1000:
            self.overdue_batches += 1
        calls: list[tuple[str, tuple[Any, ...]]] = [("PutItem", ()), ("UpdateItem", ())]
        self._chain(calls, self._close_delete, batch)

    def _close_delete(self, batch: Invocation) -> None:
        self.moto.call("DeleteMessageBatch", self._deleted, self.queues[batch.queue], batch.messages)


# --- `make bench`'s workload and its figures ---------------------------------------------------


@dataclass(frozen=True)
class Workload:
    """`make bench ARGS="--tasks T --window W --delay-queues Q"`: T one-shot tasks due at
    ``start + W * i / T``."""

    tasks: int
    window_s: float
    delay_queues: int

    @property
    def rate_per_s(self) -> float:
        return self.tasks / self.window_s

    def command(self) -> str:
        return f'make bench ARGS="--tasks {self.tasks} --window {self.window_s:g} --delay-queues {self.delay_queues}"'


RATES: tuple[Workload, ...] = (
    Workload(600, 60, 1),
    Workload(3_000, 60, 4),
    Workload(6_000, 60, 8),
)
"""10, 50 and 100 fires a second over a minute (the bench at 100 a second used 8 queues)."""


@dataclass(frozen=True)
class LocalResult:
    workload: Workload
    fired: int
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float
    moto_busy: float
    """The fraction of the due window (first to last due time) moto was serving a call."""
    moto_load: float
    """moto's service time of the whole run over the due window plus the 5 s before it: over
    1, moto cannot keep up and the backlog grows."""
    calls_per_task: dict[str, float]
    batch: float
    overdue_batches: int
    max_moto_wait_ms: float


def run_local(workload: Workload, costs: MotoCosts | None = None, seed: int = 7, **runtime: Any) -> LocalResult:
    model = LocalModel(LocalRuntime(delay_queues=workload.delay_queues, **runtime), costs, seed=seed)
    window_ms = workload.window_s * 1000
    for i in range(workload.tasks):
        model.add(NINE + int(window_ms * i / workload.tasks), 1)
    model.run(NINE - 5_000)
    late = [(lateness, w) for _, lateness, w in model.lateness]
    moto = model.moto
    return LocalResult(
        workload=workload,
        fired=model.counts.fired,
        p50_ms=percentile(late, 0.50),
        p95_ms=percentile(late, 0.95),
        p99_ms=percentile(late, 0.99),
        max_ms=max((x for x, _ in late), default=float("nan")),
        moto_busy=moto.busy_between(NINE, NINE + window_ms),
        moto_load=moto.busy_ms / (window_ms + 5_000),
        calls_per_task={k: moto.calls[k] / max(1, model.counts.fired) for k in KINDS},
        batch=model.counts.fired / max(1, model.invocations),
        overdue_batches=model.overdue_batches,
        max_moto_wait_ms=moto.max_wait_ms,
    )


# --- the measured side ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Measured:
    """One `make bench` run, as docs/scale/bench-measured.json records it."""

    rate_per_s: float
    tasks: int
    window_s: float
    delay_queues: int
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    command: str
    date: str
    note: str = ""
    moto_ms: dict[str, float] = field(default_factory=dict)
    """moto's costs when the run was measured, where they differ from :class:`MotoCosts`'s
    defaults (``{"Claim": 9.0}``): the model runs this workload with them."""
    moto_cores: float | None = None
    """moto's CPU over the due window, in cores (`make bench` prints it): what the model's moto
    busy fraction is held against."""
    calibrates: bool = False
    """The run the model's call latency (:data:`LOCAL_CALL`) is fitted to: its p50 and p99 are the
    model's input, not a check of it. One run at most."""

    @property
    def workload(self) -> Workload:
        return Workload(self.tasks, self.window_s, self.delay_queues)


def read_measured(path: Path) -> list[Measured]:
    """The runs in ``path`` (a JSON list of objects with :class:`Measured`'s fields; ``note`` and
    ``moto_ms`` may be left out, a percentile may be null), none if there is no such file."""
    if not path.exists():
        return []
    names = {f.name for f in fields(Measured)}
    runs = []
    for entry in json.loads(path.read_text()):
        unknown = set(entry) - names
        if unknown:
            raise ValueError(f"{path}: unknown fields {sorted(unknown)}")
        runs.append(Measured(**entry))
    return runs


FITTED = ("p50_ms", "p99_ms")
"""The calibration run's figures the call's latency is fitted to."""


def _ms(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "—"
    return f"{value / 1000:.1f} s" if value >= 1000 else f"{value:.1f} ms"


def _share(measured: Measured | None) -> str:
    return "—" if measured is None or measured.moto_cores is None else f"{measured.moto_cores:.0%}"


def _ratio(model: float, measured: float | None) -> tuple[str, bool]:
    if measured is None or measured <= 0:
        return "—", False
    ratio = model / measured
    far = ratio > 2 or ratio < 0.5
    text = "<0.01x" if ratio < 0.01 else f"{ratio:.2f}x"
    return (f"**{text}**" if far else text), far


def comparison(results: list[tuple[LocalResult, Measured | None]], costs: MotoCosts, runtime: LocalRuntime) -> str:
    """docs/scale/local-check.md: per workload, the model's percentiles, the measured ones and
    their ratio (model / measured; in bold beyond 2x either way), and moto's load."""
    lines = [
        "# The model against `make bench` (docs/scale.md, section 7)",
        "",
        "Model: `make simulate ARGS=--local` (sim/local.py). Measured: docs/scale/bench-measured.json.",
        "Each cell: model / measured (ratio model / measured; **bold** beyond 2x either way). The model's",
        f"one fitted input is the call's latency (the trigger's wake-up and its HTTP call: lognormal, {runtime.call}),",
        "fitted to the p50 and p99 of one run; those two cells say *fitted* and are no check. Every other",
        "cell compares the model with a figure it was not fitted to.",
        "",
        "| fires/s | workload | p50 | p95 | p99 | max | moto busy over the due window, model / measured | moto load |"
        " measured |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    flagged: list[str] = []
    checked = 0
    for result, measured in results:
        w = result.workload
        cells = []
        for name in ("p50_ms", "p95_ms", "p99_ms", "max_ms"):
            mine = float(getattr(result, name))
            theirs = None if measured is None else getattr(measured, name)
            if measured is not None and measured.calibrates and name in FITTED:
                cells.append(f"{_ms(mine)} / {_ms(theirs)} (*fitted*)")
                continue
            ratio, far = _ratio(mine, theirs)
            checked += theirs is not None and theirs > 0
            if far:
                flagged.append(f"{w.rate_per_s:.4g}/s {name[:-3]}")
            cells.append(f"{_ms(mine)} / {_ms(theirs)} ({ratio})")
        source = "not measured yet" if measured is None else f"{measured.date}: {measured.note or measured.command}"
        if measured is not None and measured.calibrates:
            source += " (the call's latency is fitted to this run's p50 and p99)"
        if measured is not None and measured.moto_ms:
            source += "; model with moto " + ", ".join(f"{k} {v:g} ms" for k, v in measured.moto_ms.items())
        lines.append(
            f"| {w.rate_per_s:.4g} | {w.tasks:,} over {w.window_s:g} s, {w.delay_queues} queue(s) | "
            + " | ".join(cells)
            + f" | {result.moto_busy:.0%} / {_share(measured)} | {result.moto_load:.2f} | {source} |"
        )
    lines += ["", f"Checked figures within 2x: {checked - len(flagged)} of {checked}."]
    lines += ["", "Gaps beyond 2x: " + (", ".join(flagged) if flagged else "none") + ".", ""]
    lines += [
        "moto calls per fired task in the model, and its batches:",
        "",
        "| fires/s | " + " | ".join(KINDS) + " | batch | batches open past the visibility timeout | longest wait "
        "for moto |",
        "|---|" + "---|" * (len(KINDS) + 3),
    ]
    for result, _ in results:
        lines.append(
            f"| {result.workload.rate_per_s:.4g} | "
            + " | ".join(f"{result.calls_per_task[k]:.2f}" for k in KINDS)
            + f" | {result.batch:.1f} | {result.overdue_batches} | {_ms(result.max_moto_wait_ms)} |"
        )
    lines += [
        "",
        "Parameters: moto's service time per call (ms) "
        + ", ".join(f"{k} {costs.of(k):g}" for k in KINDS)
        + f" (SendMessageBatch + {costs.send_per_entry_queued_ms:g} per entry and message in the queue, ReceiveMessage"
        f" + {costs.receive_per_queued_ms:g} per message in the queue), round trip outside moto "
        f"{costs.round_trip_ms:g}; tick every {runtime.tick_period_s:g} s, "
        f"{runtime.bucket_shards} shards, look-ahead {runtime.timing.look_ahead_ms / 1000:g} s, lead "
        f"{runtime.timing.lead_ms / 1000:g} s, batches of {runtime.batch_size} or {runtime.batching_window_s:g} s, "
        f"{runtime.workers} workers, call {runtime.call} (lognormal).",
        "",
        "The workloads: "
        + "; ".join(f"{r.workload.rate_per_s:.4g}/s `{r.workload.command()}`" for r, _ in results)
        + ".",
    ]
    return "\n".join(lines) + "\n"


def checked_workloads(measured: list[Measured]) -> list[tuple[Workload, Measured | None]]:
    """Every measured run's workload with its figures, then 10, 50 and 100 a second where no run
    was measured at that rate, by rate."""
    rows: list[tuple[Workload, Measured | None]] = [(m.workload, m) for m in measured]
    rates = {round(m.rate_per_s, 3) for m in measured}
    rows += [(w, None) for w in RATES if round(w.rate_per_s, 3) not in rates]
    return sorted(rows, key=lambda row: row[0].rate_per_s)


def claim_sweep(workload: Workload, costs: MotoCosts, claims_ms: tuple[float, ...], seed: int = 7) -> str:
    """The model at ``workload`` with moto's claim at each of ``claims_ms``: where it saturates
    (a markdown table)."""
    lines = [
        f"The model at {workload.rate_per_s:g} fires a second by moto's time per claim (the other costs as above):",
        "",
        "| claim (ms) | p50 | p95 | p99 | max | moto load |",
        "|---|---|---|---|---|---|",
    ]
    for claim_ms in claims_ms:
        r = run_local(workload, costs.with_overrides({"Claim": claim_ms}), seed=seed)
        lines.append(
            f"| {claim_ms:g} | {_ms(r.p50_ms)} | {_ms(r.p95_ms)} | {_ms(r.p99_ms)} | {_ms(r.max_ms)} | "
            f"{r.moto_load:.2f} |"
        )
    return "\n".join(lines) + "\n"
