"""The AWS services the pipeline runs on, as parameterized pieces. Every default is a published
limit or behaviour (docs/scale.md, "The parameters", gives each one's source) or, where AWS
publishes none, a stated assumption."""

from __future__ import annotations

import bisect
import hashlib
import heapq
import math
import random
from collections import defaultdict, deque
from dataclasses import dataclass

from sim.latency import Latency

# --- SQS -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SqsLimits:
    max_delay_s: int = 900
    """DelaySeconds is an integer from 0 to 900 (SendMessage / SendMessageBatch)."""
    in_flight_per_queue: int = 120_000
    """Received and not yet deleted, per standard queue; long polling then returns nothing."""
    batch_max: int = 10
    """Entries per SendMessageBatch / DeleteMessageBatch."""
    receive_max: int = 10
    """Messages one ReceiveMessage returns at most (``MaxNumberOfMessages``: 1 to 10). Lambda's
    event source gathers a batch larger than 10 from several receives over its batching window."""


@dataclass
class Message:
    """``weight`` real messages with the same due time, shard and queue (the model's unit)."""

    due_ms: int
    shard: int
    weight: int
    visible_ms: float = 0.0
    receives: int = 0
    tie: float = 0.0
    """Its task ids' random part, in [0, 1): with the due time, where its items sort in their
    bucket partition (the sort key is a ULID of the due time and random bits)."""

    def sort_position(self) -> float:
        """Where its items sort in their bucket's item collection, in [0, 1)."""
        return (self.due_ms % 60_000 + self.tie) / 60_000


class DelayQueue:
    """A standard queue whose messages become receivable their whole-second delay after they
    were sent, with the in-flight cap."""

    def __init__(self, limits: SqsLimits) -> None:
        self.limits = limits
        self._hidden: list[tuple[float, int, Message]] = []
        self._ready: deque[Message] = deque()
        self._seq = 0
        self.in_flight = 0
        self.peak_in_flight = 0
        self.ready_count = 0
        """Real messages receivable now (the queue depth the event source has not taken)."""

    def send(self, now_ms: float, message: Message, delay_s: int) -> None:
        """SendMessage with ``DelaySeconds``: AWS takes a whole number of seconds, 0 to 900,
        and refuses anything else."""
        if not isinstance(delay_s, int) or not 0 <= delay_s <= self.limits.max_delay_s:
            raise ValueError(f"DelaySeconds must be an integer from 0 to {self.limits.max_delay_s}: {delay_s!r}")
        self.hide(message, now_ms + delay_s * 1000)

    def hide(self, message: Message, until_ms: float) -> None:
        message.visible_ms = until_ms
        heapq.heappush(self._hidden, (until_ms, self._seq, message))
        self._seq += 1

    def release(self, now_ms: float) -> None:
        hidden = self._hidden
        while hidden and hidden[0][0] <= now_ms:
            message = heapq.heappop(hidden)[2]
            self._ready.append(message)
            self.ready_count += message.weight

    def next_visible_ms(self) -> float | None:
        """When the next message not yet receivable becomes receivable (None: there is none)."""
        return self._hidden[0][0] if self._hidden else None

    def oldest_ready_ms(self) -> float | None:
        return self._ready[0].visible_ms if self._ready else None

    def ready_messages(self) -> int:
        return len(self._ready)

    def receive(self, now_ms: float, max_messages: int) -> list[Message]:
        """Up to ``max_messages`` receivable messages, oldest first, as long as the queue's
        in-flight count stays under its cap (over it, a long poll returns nothing)."""
        self.release(now_ms)
        taken: list[Message] = []
        while self._ready and len(taken) < max_messages:
            if self.in_flight + self._ready[0].weight > self.limits.in_flight_per_queue:
                break
            message = self._ready.popleft()
            self.ready_count -= message.weight
            self.in_flight += message.weight
            message.receives += 1
            taken.append(message)
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        return taken

    def delete(self, messages: list[Message]) -> None:
        self.in_flight -= sum(m.weight for m in messages)

    def back(self, now_ms: float, message: Message, visibility_s: int) -> None:
        """A message not deleted comes back after its visibility timeout."""
        self.in_flight -= message.weight
        self.hide(message, now_ms + visibility_s * 1000)

    def pending(self) -> int:
        return len(self._hidden) + len(self._ready)


# --- Lambda's SQS event source ---------------------------------------------------------------


STANDARD_MAXIMUM = 1_250
"""The most concurrent invokes an SQS event source mapping in standard mode runs when no
MaximumConcurrency is set: "up to 300 more concurrent invokes per minute. The maximum number of
invokes that an event source mapping can process simultaneously is 1,250" (Lambda developer
guide, "Configuring scaling behavior for SQS event source mappings",
https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html; it read 1,000 before)."""
MAXIMUM_CONCURRENCY_RANGE = (2, 1_000)
"""ScalingConfig.MaximumConcurrency: 2 to 1,000 (Lambda API reference, ScalingConfig; botocore's
lambda model, ``MaximumConcurrency`` min 2 max 1000). A mapping that sets it runs at most that."""
PROVISIONED_PER_MINUTE = 1_000
"""Provisioned mode adds up to 1,000 concurrent invokes a minute: "event pollers can auto scale up
to 1000 per concurrent executions per minute, more than three times faster than before" (AWS
News Blog, "AWS Lambda enhances event processing with provisioned mode for SQS event-source
mapping", https://aws.amazon.com/blogs/aws/aws-lambda-enhances-sqs-processing-with-new-provisioned-mode-3x-faster-scaling-16x-higher-capacity/)."""
MINIMUM_POLLERS_RANGE = (2, 200)
MAXIMUM_POLLERS_RANGE = (2, 10_000)
"""ProvisionedPollerConfig for SQS: MinimumPollers 2 to 200, MaximumPollers 2 to 10,000 (default
200): "For Amazon SQS event source mappings, the accepted range is between 2 and 10,000"
(botocore 1.44.8's lambda service model, ``MaximumNumberOfPollers`` max 10000; Lambda API
reference, ProvisionedPollerConfig). It was 2,000."""
INVOKES_PER_POLLER = 10
"""Each provisioned poller "can handle up to 1 MB/sec of throughput and 10 concurrent invokes"
(Lambda developer guide, "Lambda parameters for Amazon SQS event source mappings")."""


@dataclass(frozen=True)
class EventSourceScaling:
    """How many batches an SQS event source mapping processes at once."""

    start: int = 5
    """Concurrent batches when messages become available."""
    per_minute: int = 300
    """Added per minute while messages are still available."""
    maximum: int = STANDARD_MAXIMUM
    """Per mapping: 1,250 in standard mode, or its MaximumConcurrency (2-1,000) where set."""
    idle_reset_s: float = 60.0
    """Assumption: after this long with no messages the mapping is back at ``start``."""

    @classmethod
    def standard(cls, maximum_concurrency: int | None = None) -> EventSourceScaling:
        """Standard mode: 5 at first, 300 more a minute, up to 1,250 or ``maximum_concurrency``
        (ScalingConfig.MaximumConcurrency, 2 to 1,000)."""
        if maximum_concurrency is None:
            return cls()
        low, high = MAXIMUM_CONCURRENCY_RANGE
        if not low <= maximum_concurrency <= high:
            raise ValueError(f"MaximumConcurrency is {low} to {high}: {maximum_concurrency}")
        return cls(maximum=maximum_concurrency)

    @classmethod
    def provisioned(
        cls, min_pollers: int, max_pollers: int, invokes_per_poller: int = INVOKES_PER_POLLER
    ) -> EventSourceScaling:
        """Provisioned mode: dedicated pollers from ``min_pollers`` up to ``max_pollers``, adding up
        to 1,000 concurrent invokes a minute; each poller handles up to 10 concurrent invokes."""
        if not MINIMUM_POLLERS_RANGE[0] <= min_pollers <= MINIMUM_POLLERS_RANGE[1]:
            raise ValueError(
                f"MinimumPollers is {MINIMUM_POLLERS_RANGE[0]} to {MINIMUM_POLLERS_RANGE[1]}: {min_pollers}"
            )
        if not max(min_pollers, MAXIMUM_POLLERS_RANGE[0]) <= max_pollers <= MAXIMUM_POLLERS_RANGE[1]:
            raise ValueError(
                f"MaximumPollers is MinimumPollers to {MAXIMUM_POLLERS_RANGE[1]}: {max_pollers} (minimum {min_pollers})"
            )
        return cls(
            start=min_pollers * invokes_per_poller,
            per_minute=PROVISIONED_PER_MINUTE,
            maximum=max_pollers * invokes_per_poller,
        )

    def concurrency(self, minutes_with_backlog: float) -> int:
        """Concurrent batches after messages have kept the mapping busy this many minutes."""
        return min(self.maximum, self.start + int(self.per_minute * max(0.0, minutes_with_backlog)))


class EventSource:
    """One mapping's state: the time it has spent with messages waiting, and its batches."""

    def __init__(self, scaling: EventSourceScaling) -> None:
        self.scaling = scaling
        self.running = 0
        self._busy_ms = 0.0
        self._last_ms: float | None = None
        self._idle_since: float | None = None
        self._seen = False
        self._had_messages = False

    def observe(self, now_ms: float, has_messages: bool) -> None:
        if self._last_ms is not None and self._had_messages:
            self._busy_ms += now_ms - self._last_ms  # messages waited since the last look
        self._last_ms = now_ms
        self._had_messages = has_messages
        self._seen = self._seen or has_messages
        if has_messages or self.running or not self._seen:
            self._idle_since = None
        elif self._idle_since is None:
            self._idle_since = now_ms
        elif now_ms - self._idle_since >= self.scaling.idle_reset_s * 1000:
            self._busy_ms = 0.0

    def limit(self) -> int:
        return self.scaling.concurrency(self._busy_ms / 60_000)


# --- Lambda ----------------------------------------------------------------------------------


COLD_START = Latency(
    1_174.0,
    2_400.0,
    "median: the trigger's imports as the stack ships them (source only), 1,174 ms measured by "
    "bench/cold_start.py (docs/deploy.md, 'Bytecode and cold starts'); p99 assumed twice it; assumed "
    "to run at about this machine's speed whatever the memory",
)


@dataclass(frozen=True)
class LambdaLimits:
    account_concurrency: int = 1_000
    """Concurrent executions per account and Region (a quota that can be raised)."""
    scale_per_10s: int = 1_000
    """New execution environments per function every 10 seconds (refilled continuously)."""
    cold_start: Latency = COLD_START
    """A new execution environment's init, before the handler runs."""
    full_vcpu_mb: int = 1_769
    """The memory at which a function has one full vCPU; CPU is proportional below it."""


class Account:
    """The account's concurrency, shared by its functions."""

    def __init__(self, limits: LambdaLimits) -> None:
        self.limits = limits
        self.in_use = 0
        self.peak = 0


class FunctionPool:
    """One function's execution environments: warm ones are reused, new ones cost a cold start
    and come at most ``scale_per_10s`` per 10 seconds."""

    def __init__(self, account: Account, warm: int = 0) -> None:
        self.account = account
        self.idle = warm
        self.running = 0
        self.peak = 0
        self.cold_starts = 0
        self._tokens = float(account.limits.scale_per_10s)
        self._refilled_ms = 0.0

    def acquire(self, now_ms: float, count: int) -> bool | None:
        """``count`` environments at once: None if the account or the scaling rate refuses
        (the event source tries again), else whether any of them is a cold start."""
        limits = self.account.limits
        if self.account.in_use + count > limits.account_concurrency:
            return None
        rate = limits.scale_per_10s / 10_000
        self._tokens = min(float(limits.scale_per_10s), self._tokens + (now_ms - self._refilled_ms) * rate)
        self._refilled_ms = now_ms
        new = max(0, count - self.idle)
        if new > self._tokens:
            return None
        self._tokens -= new
        self.idle -= count - new
        self.cold_starts += new
        self.running += count
        self.account.in_use += count
        self.peak = max(self.peak, self.running)
        self.account.peak = max(self.account.peak, self.account.in_use)
        return new > 0

    def release(self, count: int) -> None:
        self.running -= count
        self.account.in_use -= count
        self.idle += count


# --- DynamoDB --------------------------------------------------------------------------------


DYNAMODB_WRITE = Latency(
    6.0,
    18.0,
    "assumption: DynamoDB's 'single-digit millisecond' latency (AWS Database Blog, 'Understanding "
    "Amazon DynamoDB latency') for the median, three times it for the p99; not measured in AWS",
)


@dataclass(frozen=True)
class DynamoLimits:
    partition_wcu: int = 1_000
    """Write units a second one physical partition serves: "each individual partition is limited to
    1,000 write units per second and 3,000 read units per second" (DynamoDB developer guide,
    "Understanding DynamoDB warm throughput in different scenarios"; "Best practices for designing
    and using partition keys effectively": "every partition in a DynamoDB table is designed to
    deliver a maximum capacity of 3,000 read units per second and 1,000 write units per second")."""
    partition_rcu: int = 3_000
    on_demand_initial_wcu: int = 4_000
    """What a new on-demand table sustains before it has seen any traffic: "Newly created tables
    with on-demand capacity mode ... sustain up to 4,000 writes per second and 12,000 reads per
    second" (DynamoDB developer guide, "DynamoDB on-demand capacity mode", "Initial throughput and
    scaling properties"). *Assumption*: a table has as many physical partitions as its instant write
    capacity needs at 1,000 WCU each, so a new table has 4."""
    table_quota_wcu: int = 40_000
    """The default per-table throughput quota (raisable)."""
    write: Latency = DYNAMODB_WRITE
    """A conditional UpdateItem's (or PutItem's) round trip inside the Region."""

    @property
    def write_latency_ms(self) -> float:
        """The write's median (the paper estimates of sim/search.py)."""
        return self.write.median_ms

    split_after_s: float = 300.0
    """The allowance for adaptive capacity (*an assumption*; AWS publishes no timing): a partition
    that has run hot (``heat`` of its 1,000 WCU, or throttled) in every stretch of ``cool_s`` for
    this long splits in two at the median of the keys and sort keys it was written at ("split for
    heat": DynamoDB developer guide, "DynamoDB burst and adaptive capacity", isolating frequently
    accessed items; AWS Database Blog, "Scaling DynamoDB: How partitions, hot keys, and split for
    heat impact performance", part 3: a table adds partitions when "a partition receives read or
    write traffic near its throughput capacity limit"). Burst capacity is not modelled: it "can't
    alleviate partition-level throttling" (AWS re:Post knowledge center, "How does DynamoDB handle
    spiky workloads in short intervals"). 0: no adaptive capacity."""
    heat: float = 0.8
    cool_s: float = 10.0


@dataclass(frozen=True)
class SdkRetries:
    """How the SDK retries a throttled write. Sundial's claims go through pynamodb, whose client
    is botocore's ``standard`` retry mode with 1 + 3 attempts: a throttled attempt i waits
    ``rand(0, 1) * min(1 s * 2 ** i, 20 s)``."""

    attempts: int = 4
    base_s: float = 1.0
    max_backoff_s: float = 20.0

    def pause_ms(self, attempt: int, rng: random.Random) -> float:
        """The wait after failed attempt ``attempt`` (1-based)."""
        return rng.random() * min(self.base_s * 2 ** (attempt - 1), self.max_backoff_s) * 1000


def key_position(key: str) -> float:
    """Where a partition key value hashes to, in [0, 1): DynamoDB "uses the value of the partition
    key as input to an internal hash function. The output value from the hash function determines
    the partition in which the item will be stored" (DynamoDB developer guide, "Partitions and data
    distribution"). Its function is not published; MD5 stands in for it (uniform, deterministic)."""
    return int.from_bytes(hashlib.md5(key.encode(), usedforsecurity=False).digest()[:8], "big") / 2**64


class Table:
    """A table's write capacity on its physical partitions. The table has the partitions its
    instant capacity needs (the initial 4,000 WCU of a new on-demand table, its warm throughput,
    or twice a previous peak: 1,000 WCU each) over equal ranges of the key hash space; a key value
    lands on the partition whose range holds its hash, so key values can share a partition and its
    1,000 WCU a second. The table as a whole has what on-demand mode gives it, under the table
    quota. Second-granular, first come first served. A partition that stays hot splits in two
    (:attr:`DynamoLimits.split_after_s`, the stated allowance for adaptive capacity)."""

    def __init__(self, limits: DynamoLimits, warm_wcu: int = 0, previous_peak_wcu: int = 0) -> None:
        self.limits = limits
        instant = max(limits.on_demand_initial_wcu, warm_wcu, 2 * previous_peak_wcu)
        self.capacity = min(limits.table_quota_wcu, instant)
        count = max(1, math.ceil(instant / limits.partition_wcu))
        self.starts: list[tuple[float, float]] = [(i / count, 0.0) for i in range(count)]
        """Each partition's first (key hash, sort position), in order."""
        self.ids: list[int] = list(range(count))
        self._next_id = count
        self.by_partition: dict[tuple[int, int], int] = defaultdict(int)
        self.by_second: dict[int, int] = defaultdict(int)
        self.throttled = 0
        self.written = 0
        self.splits: list[tuple[int, int]] = []
        """(second, partition) of every split for heat."""
        self._hashes: dict[str, float] = {}
        self._seen: dict[int, deque[tuple[float, float]]] = defaultdict(lambda: deque(maxlen=512))
        self._hot_since: dict[int, int] = {}
        self._last_hot: dict[int, int] = {}

    @property
    def partitions(self) -> int:
        return len(self.starts)

    def partition_of(self, key: str | float, item: float = 0.0) -> int:
        """The partition holding ``key`` (a key value, or a hash position for a key of its own)
        at sort position ``item`` in [0, 1)."""
        if isinstance(key, str):
            h = self._hashes.get(key)
            if h is None:
                h = self._hashes[key] = key_position(key)
        else:
            h = key
        return self.ids[bisect.bisect_right(self.starts, (h, item)) - 1]

    def write(self, now_ms: float, key: str | float | None, units: int, item: float = 0.0) -> bool:
        """``units`` write units on ``key`` at sort position ``item`` (None: no partition counted)
        at ``now_ms``; False when its partition or the table is over its second's budget
        (throttled)."""
        second = int(now_ms // 1000)
        partition = None if key is None else self.partition_of(key, item)
        ok = self.by_second[second] + units <= self.capacity
        if ok and partition is not None:
            ok = self.by_partition[(partition, second)] + units <= self.limits.partition_wcu
        if ok:
            self.by_second[second] += units
            self.written += units
            if partition is not None:
                self.by_partition[(partition, second)] += units
        else:
            self.throttled += units
        if partition is not None and self.limits.split_after_s > 0:
            assert key is not None
            h = key if isinstance(key, float) else self._hashes[key]
            self._seen[partition].append((h, item))
            self._heat(partition, second, throttled=not ok)
        return ok

    def _heat(self, partition: int, second: int, throttled: bool) -> None:
        limits = self.limits
        if not throttled and self.by_partition[(partition, second)] < limits.heat * limits.partition_wcu:
            return
        if second - self._last_hot.get(partition, -(10**12)) > limits.cool_s:
            self._hot_since[partition] = second  # a new stretch of heat
        self._last_hot[partition] = second
        if second - self._hot_since[partition] >= limits.split_after_s:
            self._split(partition, second)

    def _split(self, partition: int, second: int) -> None:
        """Split for heat: the partition's range in two at the median of where it was written."""
        index = self.ids.index(partition)
        seen = sorted(self._seen[partition])
        middle = seen[len(seen) // 2]
        end = self.starts[index + 1] if index + 1 < len(self.starts) else (1.0, 0.0)
        self._hot_since[partition] = second  # however it ends, the next try is a stretch later
        if not self.starts[index] < middle < end:
            return
        new = self._next_id
        self._next_id += 1
        self.starts.insert(index + 1, middle)
        self.ids.insert(index + 1, new)
        self._seen[partition] = deque((p for p in seen if p < middle), maxlen=512)
        self._seen[new] = deque((p for p in seen if p >= middle), maxlen=512)
        self.splits.append((second, partition))

    def hottest(self) -> dict[int, int]:
        """The busiest partition's write units, per second."""
        hot: dict[int, int] = defaultdict(int)
        for (_, second), units in self.by_partition.items():
            hot[second] = max(hot[second], units)
        return hot


# --- EventBridge -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Tick:
    """A rule with ``rate(1 minute)``: one tick a minute, at a phase in the minute (a rule runs
    within its minute, not at second 0) plus a few seconds of delivery jitter."""

    phase_s: float = 20.0
    jitter_s: float = 3.0

    def time_ms(self, minute_ms: int, rng: random.Random) -> float:
        return minute_ms + (self.phase_s + rng.random() * self.jitter_s) * 1000
