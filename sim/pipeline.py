"""The firing pipeline wired on the modelled services: tick -> asynchronous invocations of the
scanner, one per group of busy shards, each scanning its shards in turn (Sundial's ``scan_window``
and ``delay_seconds``) -> delay queues -> the trigger's event source -> trigger invocations that
claim in due order (one conditional write each on the task's bucket partition) and fire at the due
time -> one run-log write per batch (docs/design.md, section 2).

The unit is a *message* of ``weight`` real occurrences with the same due time and shard, and a
modelled invocation stands for ``weight`` real ones with the same timing: a million fires a
minute is simulated as a hundred thousand messages of ten (docs/scale.md says what that costs
in precision)."""

from __future__ import annotations

import bisect
import math
import random
from dataclasses import dataclass, field, replace

from shared.domain.buckets import bucket_of, choose_shard, minute_of, minutes_between
from shared.domain.firing import Timing, delay_seconds, scan_window
from shared.settings.context import DeploymentSettings
from shared.topology import (
    DELAY_VISIBILITY_TIMEOUT_S,
    SCANNER_TIMEOUT_S,
    TRIGGER_BATCHING_WINDOW_S,
    TRIGGER_MEMORY_MB,
)
from sim.aws import (
    MAXIMUM_CONCURRENCY_RANGE,
    Account,
    DelayQueue,
    DynamoLimits,
    EventSource,
    EventSourceScaling,
    FunctionPool,
    LambdaLimits,
    Message,
    SdkRetries,
    SqsLimits,
    Table,
    Tick,
)
from sim.engine import Loop
from sim.latency import Latency

MINUTE_MS = 60_000
SCANNER_MEMORY_MB = 256
PEEK_MINUTES = 5
"""The tick scans a shard whose window spans more minute buckets than this without looking first
(shared/services/firing/scan.py ``PEEK_MINUTES``; the sim may not import it, a test holds them
equal)."""
SCAN_RESERVE_MS = 10_000
"""A scanner invocation starts no new shard with less than this left of its timeout
(``SCANNER_TIMEOUT_S``, 60 s): the shards it leaves keep their marks, so the next tick asks again."""
SCAN_EVENT_MAX_AGE_S = 300
"""The scanner's asynchronous events' maximum age (the stack sets it: shared/topology.py): a
throttled event is tried again until it is this old, then dropped."""


def groups(shards: list[int], count: int) -> list[list[int]]:
    """The tick's fan-out: ``shards`` (furthest behind first) dealt round robin into at most
    ``count`` groups, none empty (shard list index i goes to group i % n, n = min(len(shards),
    count)), so the shards furthest behind lead the groups."""
    n = min(len(shards), count)
    return [shards[start::n] for start in range(n)]


def _later(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def _behind(start: int | None) -> tuple[bool, int]:
    """Ticker.tick's order of the busy shards (shared/services/firing/scan.py ``_behind``): never
    scanned first, then by window start, oldest first."""
    return (start is not None, start or 0)


def sqs_calls(messages: int, per_call: int = 10) -> int:
    """SQS calls to move ``messages`` messages ten at a time: ReceiveMessage returns at most 10
    (``MaxNumberOfMessages`` 1-10) and DeleteMessageBatch takes at most 10 entries, so an event
    source that hands a function a batch of 100 made at least 10 receives for it, and deletes
    it with 10 calls (an empty batch costs none here; empty long polls are not counted)."""
    return math.ceil(messages / per_call) if messages > 0 else 0


@dataclass(frozen=True)
class Deployment:
    """The settings a deployment chooses (``sundial:*`` context values and AWS quotas)."""

    bucket_shards: int = 16
    delay_queues: int = 1
    trigger_memory_mb: int = TRIGGER_MEMORY_MB
    batch_size: int = 10
    batching_window_s: float = TRIGGER_BATCHING_WINDOW_S
    account_concurrency: int = 1_000
    mapping_max_concurrency: int | None = None
    """Each delay queue's event source's MaximumConcurrency in standard mode. None: what the stack
    sets (``sundial:triggerMaxConcurrency`` 0: the account's room less the other lanes, the
    scanners and 100 for the other functions, shared by the delay queues, at most 1,000; 873 at
    the defaults: shared/settings/context.py ``trigger_lane_concurrency``); 0: none set, so Lambda's
    1,250."""
    provisioned_pollers: tuple[int, int] | None = None
    """(minimum, maximum) event pollers per delay queue's mapping; None: standard mode."""
    warm_wcu: int = 0
    """The table's warm write throughput (pre-warmed), 0: none."""
    previous_peak_wcu: int = 0
    """The highest write rate the table served before (on-demand doubles it at once)."""
    table_quota_wcu: int = 40_000
    scanner_max_concurrency: int = 16
    """The most scanner invocations a tick starts: the groups it deals its busy shards into."""
    trigger_provisioned_concurrency: int = 0
    """Trigger environments kept initialized (Lambda provisioned concurrency): never cold."""
    timing: Timing = field(default_factory=Timing)

    def scaling(self) -> EventSourceScaling:
        if self.provisioned_pollers is not None:
            return EventSourceScaling.provisioned(*self.provisioned_pollers)
        if self.mapping_max_concurrency == 0:
            return EventSourceScaling.standard()
        return EventSourceScaling.standard(self.lane_concurrency())

    def lane_concurrency(self) -> int:
        """The MaximumConcurrency of each delay queue's event source in standard mode: the
        deployment's, else the stack's own rule for these settings."""
        if self.mapping_max_concurrency is not None:
            return self.mapping_max_concurrency
        stack = DeploymentSettings.model_construct(
            account_concurrency=self.account_concurrency,
            delay_queues=self.delay_queues,
            scanner_max_concurrency=self.scanner_max_concurrency,
        )
        return max(MAXIMUM_CONCURRENCY_RANGE[0], stack.trigger_lane_concurrency)


INVOKE = Latency(20.0, 80.0, "assumption: from the event source's receive to the handler's start, warm; not measured")
CLAIM_CPU = Latency(
    7.0,
    10.0,
    "CPU of one claim at a full vCPU: 5.5-8 ms measured locally (pynamodb + botocore, make bench "
    "ARGS=--ceiling, docs/design.md section 4), median 7; the p99 an assumption",
)
"""97 ms at 128 MB (1/14 of a vCPU) at the median."""
CALL_CPU = Latency(
    2.0,
    5.2,
    "the trigger's wake-up and call at a full core: make bench at 8 a second (2026-11-24, after the "
    "moto speedups), where every claim is done long before its due time, so lateness is just these: "
    "p50 2.0 ms, p99 5.2 ms (docs/measured.md); the local check's calibration run",
)
"""From the claim (or the due time) to the target's call, as CPU: at 128 MB, 13.8 times it."""
SCAN_QUERY = Latency(50.0, 150.0, "assumption: a bucket's Query with its items")
INVOKE_CALL = Latency(
    15.0,
    40.0,
    "assumption: the tick's Invoke with InvocationType Event, from the call to Lambda's 202 (the "
    "tick makes them one after another); not measured",
)
ASYNC_QUEUE = Latency(
    60.0,
    400.0,
    "assumption: from Lambda's 202 to the scanner's handler starting, warm (the event waits on "
    "Lambda's internal queue: AWS publishes no figure; typically tens to a few hundred ms); not measured",
)


@dataclass(frozen=True)
class Platform:
    """What the services do, beyond the deployment's choices."""

    sqs: SqsLimits = field(default_factory=SqsLimits)
    dynamo: DynamoLimits = field(default_factory=DynamoLimits)
    lambdas: LambdaLimits = field(default_factory=LambdaLimits)
    retries: SdkRetries = field(default_factory=SdkRetries)
    tick: Tick = field(default_factory=Tick)
    poll_ms: float = 100.0
    """How often an event source looks at its queue (the model's step: a message receivable
    between two looks waits for the next)."""
    invoke: Latency = INVOKE
    invoke_call: Latency = INVOKE_CALL
    async_queue: Latency = ASYNC_QUEUE
    async_throttle_retry_ms: tuple[float, float] = (1_000.0, 300_000.0)
    """A throttled asynchronous event goes back on Lambda's queue and is tried again, the interval
    growing exponentially from the first to the second figure ("Asynchronous invocation", Lambda
    developer guide: 1 second to 5 minutes), until the event's maximum age."""
    claim_cpu: Latency = CLAIM_CPU
    call_cpu: Latency = CALL_CPU
    scan_send_batches_per_s: float = 150.0
    """SendMessageBatch calls one scanner makes a second (docs/design.md, section 5)."""
    scan_query: Latency = SCAN_QUERY
    item_bytes: int = 600

    @property
    def claim_cpu_ms(self) -> float:
        """The claim's median CPU (the paper estimates of sim/search.py)."""
        return self.claim_cpu.median_ms


@dataclass
class Invocation:
    messages: list[Message]
    queue: int
    received_ms: float
    fired_until_ms: float = 0.0
    failed: list[Message] = field(default_factory=list)


@dataclass
class ScanEvent:
    """One asynchronous invocation of the scanner: a group of shards from one tick."""

    shards: list[int]
    tick_ms: int
    since: dict[int, int | None]
    """Where the tick found each shard clean up to (``since_ms`` of each request)."""
    queued_ms: float
    """When Lambda accepted the event (its age counts from here)."""
    throttles: int = 0
    acquired_ms: float = 0.0
    started_ms: float = 0.0
    scanned: list[int] = field(default_factory=list)
    """The shards it scanned, in order, with when each started (``scan_starts``)."""
    scan_starts: list[float] = field(default_factory=list)


@dataclass
class Counts:
    fired: int = 0
    claim_wru: int = 0
    log_wru: int = 0
    rru: float = 0.0
    sqs_requests: float = 0.0
    """Every SQS call: the three below (the scans are asked for by asynchronous invocation, no SQS)."""
    sqs_sends: float = 0.0
    """SendMessageBatch calls staging the occurrences (ten messages a call, per queue)."""
    sqs_receives: float = 0.0
    """ReceiveMessage calls of the trigger's event sources (ten messages a call at most)."""
    sqs_deletes: float = 0.0
    """DeleteMessageBatch calls for what the trigger fired (ten receipt handles a call at most)."""
    lambda_requests: float = 0.0
    """Every invocation: the ticks, the scanners (one per group of shards) and the triggers."""
    scan_invocations: int = 0
    """The scanner's asynchronous invocations (one per group a tick made)."""
    scan_throttles: int = 0
    """Times a scanner event found no concurrency and went back on Lambda's queue."""
    scan_events_dropped: int = 0
    """Scanner events past their maximum age while throttled (their shards wait for the next tick)."""
    scans_left: int = 0
    """Shards a scanner invocation left for the next tick (less than ``SCAN_RESERVE_MS`` left)."""
    gb_seconds: float = 0.0
    trigger_gb_seconds: float = 0.0
    trigger_invocations: int = 0
    claim_failures: int = 0


class Model:
    def __init__(
        self,
        deployment: Deployment,
        platform: Platform | None = None,
        seed: int = 1,
        weight: int = 1,
        warm_triggers: int = 0,
        busy_minutes: float = 0.0,
    ) -> None:
        """``warm_triggers``: trigger environments already warm; ``busy_minutes``: how long the
        delay queues' event sources have already been scaling up (a system in steady state)."""
        self.d = deployment
        self.p = platform or Platform()
        self.rng = random.Random(seed)
        self.weight = weight
        self.loop = Loop()
        self.timing = deployment.timing
        self.buckets: dict[tuple[int, int], list[int]] = {}
        self._sorted: set[tuple[int, int]] = set()
        self._keys: dict[tuple[int, int], str] = {}
        self.marks: dict[int, int | None] = dict.fromkeys(range(deployment.bucket_shards))
        self.queues = [DelayQueue(self.p.sqs) for _ in range(deployment.delay_queues)]
        self.sources = [EventSource(deployment.scaling()) for _ in range(deployment.delay_queues)]
        for source in self.sources:
            source._busy_ms = busy_minutes * 60_000
        lambdas = replace(self.p.lambdas, account_concurrency=deployment.account_concurrency)
        self.account = Account(lambdas)
        self.triggers = FunctionPool(self.account, warm=max(warm_triggers, deployment.trigger_provisioned_concurrency))
        self.scanners = FunctionPool(self.account, warm=deployment.scanner_max_concurrency)
        self.clean: dict[int, int] = {}
        """The tick's ``W#clean``: each shard found empty up to this time."""
        self.scan_events: list[ScanEvent] = []
        self.table = Table(
            replace(self.p.dynamo, table_quota_wcu=deployment.table_quota_wcu),
            warm_wcu=deployment.warm_wcu,
            previous_peak_wcu=deployment.previous_peak_wcu,
        )
        vcpu = min(1.0, deployment.trigger_memory_mb / lambdas.full_vcpu_mb)
        self.claim_cpu = self.p.claim_cpu.scaled(1 / vcpu)
        self.call = self.p.call_cpu.scaled(1 / vcpu)
        self.latencies = random.Random(seed * 1_000_003 + 17)
        """The latencies' own generator: drawing them leaves the workload's and the shards' draws as
        they were."""
        self.counts = Counts()
        self.total = 0
        self.lateness: list[tuple[int, float, int]] = []
        self.samples: list[tuple[float, int, int, int]] = []
        """Each second: (time, messages waiting in the delay queues, in flight, trigger concurrency)."""
        self.last_due_ms = 0

    def _draw(self, latency: Latency) -> float:
        return latency.draw(self.latencies)

    # --- the workload ---------------------------------------------------------------------

    def add(self, due_ms: int, count: int) -> None:
        """``count`` one-shot tasks due at ``due_ms``, registered long before: each message of
        ``weight`` of them lands in a shard chosen as the API chooses it."""
        for _ in range(max(1, count // self.weight)):
            shard = choose_shard(self.rng.getrandbits(32), self.d.bucket_shards)
            key = (minute_of(due_ms), shard)
            self.buckets.setdefault(key, []).append(due_ms)
            self._sorted.discard(key)
        self.total += max(1, count // self.weight) * self.weight
        self.last_due_ms = max(self.last_due_ms, due_ms)

    def partition_key(self, due_ms: int, shard: int) -> str:
        """The home item's partition: the bucket of its due minute and its shard."""
        key = (minute_of(due_ms), shard)
        if key not in self._keys:
            self._keys[key] = f"{bucket_of(due_ms)}#{shard}"
        return self._keys[key]

    # --- running --------------------------------------------------------------------------

    def run(self, start_ms: int, first_tick_ms: int | None = None, horizon_ms: int = 30 * MINUTE_MS) -> None:
        """Ticks from the minute of ``start_ms`` until every task fired (or ``horizon_ms`` after
        the last is due). The first scan of a shard starts one look-ahead back (scan_window)."""
        self.loop.now = float(start_ms)
        self.stop_ms = self.last_due_ms + horizon_ms
        first = minute_of(start_ms) if first_tick_ms is None else first_tick_ms
        self.loop.at(self.p.tick.time_ms(first, self.rng), self._tick, first)
        for index in range(len(self.queues)):
            self.loop.at(start_ms, self._poll, index)
        self.loop.at(start_ms, self._sample)
        self.loop.run(self.stop_ms)

    def _going(self) -> bool:
        return self.counts.fired < self.total and self.loop.now < self.stop_ms

    def _tick(self, minute_ms: int) -> None:
        """The rule's tick (Ticker.tick): the shards with something in their window, dealt into at
        most ``scanner_max_concurrency`` groups, one asynchronous Invoke each, one after another.
        The tick's own looks (its BatchGetItem and a Query of a shard's window) are not counted."""
        now = self.loop.now
        busy, since = self._busy_shards(int(now))
        self.counts.lambda_requests += 1
        accepted = now
        for shards in groups(busy, self.d.scanner_max_concurrency):
            accepted += self._draw(self.p.invoke_call)
            event = ScanEvent(shards, int(now), {shard: since[shard] for shard in shards}, accepted)
            self.scan_events.append(event)
            self.counts.lambda_requests += 1
            self.counts.scan_invocations += 1
            self.loop.at(accepted + self._draw(self.p.async_queue), self._scanner_start, event)
        if self._going():
            nxt = minute_ms + MINUTE_MS
            self.loop.at(self.p.tick.time_ms(nxt, self.rng), self._tick, nxt)

    def _busy_shards(self, now: int) -> tuple[list[int], dict[int, int | None]]:
        """Ticker.tick's looks: each shard's window past its mark and the tick's clean map, up to
        now + look-ahead; a shard never scanned, one whose window spans more than ``PEEK_MINUTES``
        buckets, or one with anything due there is busy (and scanned from that start); one with
        nothing is clean up to the window's end. The busy shards come back furthest behind first
        (never scanned, then the oldest window start), the order the tick deals them in."""
        end = now + self.timing.look_ahead_ms
        busy: list[int] = []
        since: dict[int, int | None] = {}
        for shard in range(self.d.bucket_shards):
            start = _later(self.marks[shard], self.clean.get(shard))
            if start is None or (
                start < end and ((end - start) // MINUTE_MS + 1 > PEEK_MINUTES or self._due(shard, start, end))
            ):
                busy.append(shard)
                since[shard] = start
            elif start < end:
                self.clean[shard] = end
        # The furthest behind first, so every group starts with them: a shard a scanner ran out
        # of time for leads a group at the next tick instead of coming last again.
        busy.sort(key=lambda shard: _behind(since[shard]))
        return busy, since

    def _scanner_start(self, event: ScanEvent) -> None:
        """Lambda runs the event: in a warm environment, else after a cold start; with no
        concurrency to be had it goes back on Lambda's queue and is tried again, at growing
        intervals, until its maximum age."""
        now = self.loop.now
        cold = self.scanners.acquire(now, 1)
        if cold is None:
            self.counts.scan_throttles += 1
            first, most = self.p.async_throttle_retry_ms
            wait = min(most, first * 2**event.throttles)
            event.throttles += 1
            if now + wait - event.queued_ms <= SCAN_EVENT_MAX_AGE_S * 1000:
                self.loop.at(now + wait, self._scanner_start, event)
            else:
                self.counts.scan_events_dropped += 1
            return
        event.acquired_ms = now
        event.started_ms = now + (self._draw(self.p.lambdas.cold_start) if cold else 0.0)
        self.loop.at(event.started_ms, self._scan_next, event, 0)

    def _scan_next(self, event: ScanEvent, index: int) -> None:
        """The invocation's shards one after another; none started with less than
        ``SCAN_RESERVE_MS`` of the timeout left. Its GB-s: from the environment taken to the end."""
        now = self.loop.now
        if index < len(event.shards) and now - event.started_ms <= SCANNER_TIMEOUT_S * 1000 - SCAN_RESERVE_MS:
            shard = event.shards[index]
            event.scanned.append(shard)
            event.scan_starts.append(now)
            done = self._scan(shard, event.tick_ms, event.since.get(shard))
            self.loop.at(done, self._scan_next, event, index + 1)
            return
        self.counts.scans_left += len(event.shards) - index
        self.counts.gb_seconds += (now - event.acquired_ms) / 1000 * SCANNER_MEMORY_MB / 1024
        self.scanners.release(1)

    def _scan(self, shard: int, tick_ms: int, since_ms: int | None = None) -> float:
        """Scanner.scan of one shard: the window from its mark (or where the tick found it clean)
        to now + look-ahead, staged with the whole-second delays shared/adapters/queues.py sends, at the
        scanner's sending rate; nothing if the mark covers the tick. Returns when it is done."""
        now = self.loop.now
        mark = _later(self.marks[shard], since_ms)
        timing = self.timing
        staged = 0
        if mark is None or mark < tick_ms + timing.look_ahead_ms:
            start, end = scan_window(mark, int(now), timing)
            due = self._due(shard, start, end)
            per_ms = self.p.scan_send_batches_per_s * self.p.sqs.batch_max / 1000
            query_ms = self._draw(self.p.scan_query)
            sent_at = now + query_ms
            per_queue = [0] * len(self.queues)
            for due_ms in due:
                send_ms = sent_at + staged / per_ms
                message = Message(due_ms, shard, self.weight, tie=self.rng.random())
                queue = self.rng.randrange(len(self.queues))
                self.queues[queue].send(send_ms, message, delay_seconds(due_ms, int(send_ms), timing.lead_ms))
                staged += self.weight
                per_queue[queue] += self.weight
            sends = sum(sqs_calls(n, self.p.sqs.batch_max) for n in per_queue)
            self.counts.sqs_sends += sends
            self.counts.sqs_requests += sends
            self.counts.rru += max(0.5, staged * self.p.item_bytes / 4096 / 2)
            self.marks[shard] = end
        else:
            query_ms = 0.0
        return now + query_ms + staged / (self.p.scan_send_batches_per_s * self.p.sqs.batch_max) * 1000

    def _due(self, shard: int, start: int, end: int) -> list[int]:
        found: list[int] = []
        if end <= start:
            return found
        for minute in minutes_between(start, end - 1):
            bucket = self.buckets.get((minute, shard))
            if not bucket:
                continue
            key = (minute, shard)
            if key not in self._sorted:
                bucket.sort()
                self._sorted.add(key)
            found.extend(bucket[bisect.bisect_left(bucket, start) : bisect.bisect_left(bucket, end)])
        return found

    # --- the trigger's event source and invocations -----------------------------------------

    def _poll(self, index: int) -> None:
        now = self.loop.now
        queue, source = self.queues[index], self.sources[index]
        queue.release(now)
        source.observe(now, queue.ready_count > 0)
        weight = self.weight
        window_ms = self.d.batching_window_s * 1000
        while source.running + weight <= source.limit():
            oldest = queue.oldest_ready_ms()
            if oldest is None:
                break
            if queue.ready_messages() < self.d.batch_size and now - oldest < window_ms:
                break
            cold = self.triggers.acquire(now, weight)
            if cold is None:
                break
            messages = queue.receive(now, self.d.batch_size)
            if not messages:
                self.triggers.release(weight)
                break
            source.running += weight
            receives = weight * sqs_calls(len(messages), self.p.sqs.receive_max)
            self.counts.sqs_receives += receives
            self.counts.sqs_requests += receives
            self.counts.lambda_requests += weight
            messages.sort(key=lambda m: m.due_ms)
            invocation = Invocation(messages, index, now)
            begin = now + self._draw(self.p.invoke) + (self._draw(self.p.lambdas.cold_start) if cold else 0.0)
            self.loop.at(begin, self._claim, invocation, 0, 1)
        if self._going() or queue.pending():
            self.loop.at(now + self.p.poll_ms, self._poll, index)

    def _claim(self, invocation: Invocation, index: int, attempt: int) -> None:
        """One claim (a conditional UpdateItem on the task's bucket partition) in due order;
        a throttled one is retried as the SDK retries it, and after its last attempt the
        message is handed back (a partial batch failure)."""
        now = self.loop.now
        message = invocation.messages[index]
        key = self.partition_key(message.due_ms, message.shard)
        if self.table.write(now, key, message.weight, message.sort_position()):
            self.counts.claim_wru += message.weight
            self.counts.rru += message.weight  # the look at its task before its call: one consistent read
            done = now + self._draw(self.claim_cpu) + self._draw(self.p.dynamo.write)
            fired = max(float(message.due_ms), done) + self._draw(self.call)
            self.lateness.append((message.due_ms, fired - message.due_ms, message.weight))
            self.counts.fired += message.weight
            invocation.fired_until_ms = max(invocation.fired_until_ms, fired)
        elif attempt < self.p.retries.attempts:
            pause = self.p.retries.pause_ms(attempt, self.rng)
            self.loop.at(now + self._draw(self.p.dynamo.write) + pause, self._claim, invocation, index, attempt + 1)
            return
        else:
            self.counts.claim_failures += message.weight
            invocation.failed.append(message)
            done = now + self._draw(self.p.dynamo.write)
        if index + 1 < len(invocation.messages):
            self.loop.at(done, self._claim, invocation, index + 1, 1)
        else:
            self.loop.at(max(done, invocation.fired_until_ms), self._close, invocation)

    def _close(self, invocation: Invocation) -> None:
        """The batch's one run-log write, the delete of what fired, the rest handed back."""
        now = self.loop.now
        weight = self.weight
        succeeded = [m for m in invocation.messages if m not in invocation.failed]
        if succeeded and self.table.write(now, self.rng.random(), weight):  # RL#<batch id>: a key of its own
            self.counts.log_wru += weight
        end = now + self._draw(self.p.dynamo.write)
        queue = self.queues[invocation.queue]
        queue.delete(succeeded)
        for message in invocation.failed:
            queue.back(invocation.received_ms, message, DELAY_VISIBILITY_TIMEOUT_S)
        deletes = weight * sqs_calls(len(succeeded), self.p.sqs.batch_max)
        self.counts.sqs_deletes += deletes
        self.counts.sqs_requests += deletes
        gb_seconds = (end - invocation.received_ms) / 1000 * self.d.trigger_memory_mb / 1024 * weight
        self.counts.gb_seconds += gb_seconds
        self.counts.trigger_gb_seconds += gb_seconds
        self.counts.trigger_invocations += weight
        self.loop.at(end, self._release, invocation.queue)

    def _release(self, index: int) -> None:
        self.triggers.release(self.weight)
        self.sources[index].running -= self.weight

    def _sample(self) -> None:
        now = self.loop.now
        for queue in self.queues:
            queue.release(now)
        self.samples.append(
            (
                now,
                sum(q.ready_count for q in self.queues),
                sum(q.in_flight for q in self.queues),
                self.triggers.running,
            )
        )
        if self._going():
            self.loop.at(now + 1000, self._sample)
