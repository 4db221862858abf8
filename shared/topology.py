"""The queues and event sources of the pipeline, defined once.

The CDK stack (infra/pipeline.py) builds its queues and Lambda event sources from these
definitions and the local runtime (local/) creates its moto queues and pollers from the same
ones, so the two cannot drift (tests/infrastructure checks the template against them).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class QueueSpec:
    name: str
    """Suffix of the queue's name (the stack prefixes it)."""
    visibility_timeout_s: int
    retention_s: int = 4 * 86_400
    dead_letter: str | None = None
    """The queue messages go to after ``max_receive_count`` failed receives."""
    max_receive_count: int = 5


@dataclass(frozen=True)
class ConsumerSpec:
    """A Lambda function consuming a queue (SQS event source, partial batch failures on)."""

    function: str
    """The function's name in the stack and its handler module under functions/."""
    queue: str
    batch_size: int = 10
    batching_window_s: int = 0
    """How long the event source may hold a batch that is not full (Lambda's
    MaximumBatchingWindowInSeconds)."""
    max_concurrency: int | None = None
    """The event source's maximum concurrency (ScalingConfig.MaximumConcurrency) when the topology
    fixes one; the deployment's settings size the others (infra/pipeline.py)."""

    def __post_init__(self) -> None:
        if not 1 <= self.batch_size <= MAX_BATCH_SIZE:
            raise ValueError(f"{self.function}: a batch holds 1 to {MAX_BATCH_SIZE} messages, got {self.batch_size}")
        if not 0 <= self.batching_window_s <= MAX_BATCHING_WINDOW_S:
            raise ValueError(
                f"{self.function}: a batching window is 0 to {MAX_BATCHING_WINDOW_S} s, got {self.batching_window_s}"
            )
        if self.batch_size > MAX_UNWINDOWED_BATCH_SIZE and self.batching_window_s < 1:
            raise ValueError(
                f"{self.function}: Lambda takes a batch of more than {MAX_UNWINDOWED_BATCH_SIZE} messages from a "
                f"queue only with a batching window of at least 1 s, got {self.batch_size} and "
                f"{self.batching_window_s} s"
            )


MAX_BATCH_SIZE = 10_000
"""The most messages Lambda hands an SQS consumer at once (a standard queue's event source)."""
MAX_UNWINDOWED_BATCH_SIZE = 10
"""Lambda's SQS event source takes more messages than this per batch only with a batching window
(MaximumBatchingWindowInSeconds of at least 1)."""
MAX_BATCHING_WINDOW_S = 300


VISIBILITY_PER_TIMEOUT = 6
"""A queue that invokes a Lambda function keeps a message invisible for at least six times the
function's timeout: Lambda retries a throttled batch while its messages are in flight, and a
shorter visibility timeout makes them receivable again, burning their receives towards the
dead-letter queue (Lambda developer guide, "Using Lambda with Amazon SQS", configuring a queue:
"set the source queue's visibility timeout to at least six times the timeout that you configure
on your function")."""


def visibility_for(timeout_s: int) -> int:
    """The visibility timeout of a queue whose consumer times out after ``timeout_s``."""
    return VISIBILITY_PER_TIMEOUT * timeout_s


SCANNER_TIMEOUT_S = 60
"""The scanner function's timeout."""
TRIGGER_TIMEOUT_S = 120
"""The trigger function's timeout (and the recovering trigger's): the lead it waits out, a batch's
claims, and the slowest target (an HTTP call times out after at most 60 s), with room."""

DEAD_LETTERS = QueueSpec("dead-letters", visibility_timeout_s=30, retention_s=14 * 86_400)
"""Occurrences given up (the trigger sends them, with the reason) and messages no consumer could
take: the stack alarms on its depth. No function consumes it."""
SCAN_EVENT_MAX_AGE_S = 300
"""How long Lambda keeps trying one of the tick's asynchronous scan invocations (throttled, or
failed and retried): its shards are asked for again by every tick while their marks stay behind,
so an older request only scans what later ones do (Lambda's ``MaximumEventAgeInSeconds``, 60 to
21,600; "Configuring error handling for asynchronous invocation")."""
SCAN_RETRY_ATTEMPTS = 2
"""Lambda runs a failed scan invocation again this many times (its default and most), a minute and
then two after; then the event goes to the scanner's on-failure destination, the dead-letter
queue."""
DELAY_MAX_RECEIVES = 5
"""Deliveries of one delay-queue message before SQS moves it to the stranded queue (Lambda's
guide asks for at least 5 on a queue a function consumes). The trigger gives an occurrence up on
its last delivery (dead-lettered in the table as well, where it can be redriven); a message whose
receives were burned without the trigger seeing it is taken by the recovering trigger."""
STRANDED_RECEIVES = 5
"""Receives of a stranded message by the recovering trigger's drain before SQS moves it on to the
dead-letter queue (each 12 minutes after the last, the stranded queue's visibility timeout): only
a run another trigger still holds, a malformed message or a failed batch fails one."""
STRANDED = QueueSpec(
    "stranded",
    visibility_timeout_s=visibility_for(TRIGGER_TIMEOUT_S),
    dead_letter=DEAD_LETTERS.name,
    max_receive_count=DELAY_MAX_RECEIVES + STRANDED_RECEIVES,
    retention_s=14 * 86_400,
)
"""Where SQS moves a delay-queue message after its last receive: a message can run out of
receives without the trigger ever seeing it (its invocations throttled by the account's
concurrency or by Lambda's recursive loop detection), and the dead-letter queue alone would keep
it where no API lists it. The recovering trigger (``RECOVER``) takes each one as a last delivery:
fired late under the task's misfire policy, or given up as a dead letter that
``GET /v1/dead-letters`` lists and redrive fires again; what it cannot take either goes on to the
dead-letter queue, which is alarmed. No event source mapping polls it (its pollers' empty long
polls were about a third of an idle stack's bill): the tick looks at its depth once a minute and
invokes the recovering trigger to drain it when something waits (shared/adapters/stranded.py).

**Its receive count.** SQS keeps a message's receive count when its redrive policy moves it: AWS's
recording of a dead-letter queue's receive shows it (LocalStack's AWS-validated
test_dead_letter_queue_message_attributes, tests/aws/services/sqs/test_sqs.py, recorded
30-04-2024: a message received once from a queue of maxReceiveCount 1 reports
``ApproximateReceiveCount`` 2 on its first receive from the dead-letter queue;
tests/data/aws/sqs-dead-letter-receive.json), as the API reference words it: "the number of times
a message has been received across all queues but not deleted" (ReceiveMessage). Whether the
stranded queue's own redrive policy counts from that count too is neither documented ("Using
dead-letter queues in Amazon SQS",
https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html)
nor recorded; moto's does. The code assumes it does, and is right either way: its
``maxReceiveCount`` is the delay queues' plus :data:`STRANDED_RECEIVES`, so a stranded message
arriving with :data:`DELAY_MAX_RECEIVES` receives gets :data:`STRANDED_RECEIVES` more from the drain
(at the delay queues' count alone, SQS would move every stranded message on at its first receive,
before the recovering trigger saw it), and one whose count started again at 1 gets more tries,
each a last delivery. Nothing the recovering trigger decides reads the count: it takes every
record as its message's last delivery (functions/recover/handler.py).
tests/integration/test_stranded_receives.py drives both."""
DELAY_QUEUE = "delay"
"""Delay queues are named delay-0, delay-1, ... (their count is a deployment setting)."""
TRIGGER_MEMORY_MB = 128
"""The trigger's default memory (deployment setting ``sundial:triggerMemoryMb``). It mostly waits
out the staging lead and its process needs about 80 MB: the smallest size halves the Lambda time
billed, the largest part of a fire's cost (docs/design.md, section 4), at the price of CPU
(1/14 of a vCPU) for a batch's claims and calls."""
EVENT_SOURCE_LONG_POLL_S = 20
"""Lambda's SQS pollers long-poll for 20 seconds (the local runtime's pollers do the same)."""
TRIGGER_BATCH_SIZE = 10
"""The trigger's default batch size (deployment setting ``sundial:triggerBatchSize``): one
delay-queue receive. Larger batches need the trigger's batching window (they have it) and a lead
that covers their claims, taken one at a time (shared/settings/capacity.py, ``claim_ms``)."""
TRIGGER_BATCHING_WINDOW_S = 1
"""The trigger waits out the staging lead anyway, so its event source may gather a fuller batch
for up to a second first: one invocation, one poll, one delete and one run-log write then serve
several occurrences (docs/design.md, section 4). The lead must cover the window."""
HIGH_PRIORITY_BATCHING_WINDOW_S = 0
"""The high-priority trigger does not gather batches: what one receive returns is handed over at
once (up to 10 messages, the most Lambda takes without a window), so its occurrences have the
whole lead for their claims, which go one at a time in a batch. It costs more invocations per
high-priority fire than the normal lane's fuller batches (each waits out the lead)."""
DELAY_VISIBILITY_TIMEOUT_S = visibility_for(TRIGGER_TIMEOUT_S)
"""Six times the trigger's timeout (:data:`VISIBILITY_PER_TIMEOUT`): 720 s. Longer than a claim's
lease (the trigger's timeout + the lead + a margin), so a message redelivered after a crashed
trigger finds the lease expired; the price is that such a message comes back 12 minutes after the
crash (it was 3), which is a misfire handled by the task's policy either way (docs/deploy.md,
"Limits AWS sets")."""


HIGH_PRIORITY_QUEUE = f"{DELAY_QUEUE}-high"
"""The delay queue of ``"priority": "high"`` occurrences (docs/receivers.md, section 3)."""
TRIGGER = "trigger"
HIGH_PRIORITY_TRIGGER = "trigger_high"
"""The trigger's code deployed a second time (functions/trigger_high/handler.py is the trigger's
handler), on the high-priority queue alone, with capacity of its own (its event source's maximum
concurrency, and reserved concurrency where the account has room for it; its own worker pool
locally)."""
RECOVER = "recover"
"""The trigger's code a third time, on the stranded queue: every message is its last delivery.
Not an event source's consumer: the tick invokes it asynchronously when the queue holds messages,
and it drains the queue itself (functions/recover/drain.py)."""
API = "api"
CANARY = "canary"
TICK = "tick"
SCANNER = "scanner"


def delay_queue(index: int | str, visibility_timeout_s: int = DELAY_VISIBILITY_TIMEOUT_S) -> QueueSpec:
    return QueueSpec(
        f"{DELAY_QUEUE}-{index}",
        visibility_timeout_s=visibility_timeout_s,
        dead_letter=STRANDED.name,
        max_receive_count=DELAY_MAX_RECEIVES,
    )


def high_priority_queue(visibility_timeout_s: int = DELAY_VISIBILITY_TIMEOUT_S) -> QueueSpec:
    return delay_queue("high", visibility_timeout_s)


def queues(delay_queues: int, delay_visibility_s: int = DELAY_VISIBILITY_TIMEOUT_S) -> list[QueueSpec]:
    return [
        DEAD_LETTERS,
        STRANDED,
        *(delay_queue(i, delay_visibility_s) for i in range(delay_queues)),
        high_priority_queue(delay_visibility_s),
    ]


def consumers(delay_queues: int, trigger_batch_size: int = TRIGGER_BATCH_SIZE) -> list[ConsumerSpec]:
    """The trigger on every delay queue ``trigger_batch_size``
    messages at a time, and the high-priority trigger on the high-priority queue, without a
    batching window (at most 10 at a time). The stranded queue has no event source: the recovering
    trigger drains it when the tick asks (:data:`RECOVER`)."""
    return [
        *(
            ConsumerSpec(
                TRIGGER,
                f"{DELAY_QUEUE}-{i}",
                batch_size=trigger_batch_size,
                batching_window_s=TRIGGER_BATCHING_WINDOW_S,
            )
            for i in range(delay_queues)
        ),
        ConsumerSpec(
            HIGH_PRIORITY_TRIGGER,
            HIGH_PRIORITY_QUEUE,
            batch_size=min(trigger_batch_size, MAX_UNWINDOWED_BATCH_SIZE),
            batching_window_s=HIGH_PRIORITY_BATCHING_WINDOW_S,
        ),
    ]


RECOVER_CONCURRENCY = 1
"""The recovering trigger's drains that run at once, as the account's concurrency budget counts
them (shared/settings/capacity.py): the tick starts at most one a minute, and a drain usually ends within
it (its last receive comes back empty). One running past the next tick, or an event Lambda runs
twice, makes a second, rare and short-lived, which the room kept for the other functions
(``OTHER_FUNCTIONS_CONCURRENCY``) covers; two drains at once only split the messages."""
DRAIN_EVENT_MAX_AGE_S = 60
"""How long Lambda keeps trying one of the tick's drain invocations (throttled): the next tick
asks again if the queue still holds messages (Lambda's ``MaximumEventAgeInSeconds``, at least
60). No retry of a failed drain either (``MaximumRetryAttempts`` 0), for the same reason."""


def senders(delay_queues: int) -> dict[str, tuple[str, ...]]:
    """Function -> the queues it sends to: what each function's role may send to (infra/), and
    with :func:`consumers`, the graph in which Lambda's recursive loop detection follows a message
    (:func:`looping`). The API stages what falls due soon (a registration, a run now, a redrive),
    the canary function its task's first occurrence, the scanners stage (and Lambda sends a scan
    invocation whose retries are spent to the dead-letter queue, the scanner's on-failure
    destination, with the scanner's role), and the triggers stage retries, next occurrences, held
    copies and chain hops, and send what they give up to the dead-letter queue. The tick sends to
    no queue: it invokes the scanner (shared/adapters/scans.py) and, when the stranded queue holds messages,
    the recovering trigger (shared/adapters/stranded.py), which sends as the triggers do."""
    staging = (*(delay_queue(i).name for i in range(delay_queues)), HIGH_PRIORITY_QUEUE)
    firing = (*staging, DEAD_LETTERS.name)
    return {
        API: staging,
        CANARY: staging,
        SCANNER: (*staging, DEAD_LETTERS.name),
        TRIGGER: firing,
        HIGH_PRIORITY_TRIGGER: firing,
        RECOVER: firing,
    }


def looping(delay_queues: int) -> frozenset[str]:
    """The functions a message can invoke again through the queues: a function sends to a queue
    that invokes a function that ... invokes the first. Lambda's recursive loop detection stops
    such a chain after about 16 invocations unless the function allows recursion (Lambda developer
    guide, "Use Lambda recursive loop detection to prevent infinite loops"): a task due every
    minute is such a chain, forever, through the trigger and the delay queue it stages into."""
    invoked_by: dict[str, set[str]] = {}
    for consumer in consumers(delay_queues):
        invoked_by.setdefault(consumer.queue, set()).add(consumer.function)
    calls = {
        function: {invoked for queue in queues for invoked in invoked_by.get(queue, ())}
        for function, queues in senders(delay_queues).items()
    }

    def reaches(start: str) -> bool:
        seen: set[str] = set()
        pending = list(calls.get(start, ()))
        while pending:
            function = pending.pop()
            if function == start:
                return True
            if function not in seen:
                seen.add(function)
                pending.extend(calls.get(function, ()))
        return False

    return frozenset(function for function in calls if reaches(function))


# --- the API: API Gateway (REST, Lambda proxy) in front of one function ---------------------------
# infra/api.py builds the function and the gateway's answers from these; the local API Gateway
# (local/apigw.py) enforces the same limits on the same function.

API_FUNCTION_TIMEOUT_S = 10
"""The API function's timeout. A request still running then is a function error ("Handling Lambda
errors with an API Gateway API": API Gateway answers a function error, or an answer in the wrong
format, with 502)."""
API_FUNCTION_MEMORY_MB = 256
API_INTEGRATION_TIMEOUT_S = 29
"""API Gateway's integration timeout, its default for a REST API ("Amazon API Gateway quotas":
50 ms to 29 s). Past it API Gateway answers 504 (the INTEGRATION_TIMEOUT gateway response, "Gateway
response types for API Gateway"), whatever the function goes on doing. The smaller of this and
the function's timeout governs: with 10 s against 29 s, a slow request is the function's 502."""
LAMBDA_RESPONSE_MAX_BYTES = 6 * 1024 * 1024
"""A synchronous invocation's response ("Lambda quotas": 6 MB for the request and for the
response), the proxy result as JSON: an answer over it fails the invocation, which API Gateway
answers with 502 (its own payload limit, 10 MB, is further)."""

AUTHORIZER_CACHE_TTL_S = 60
"""How long API Gateway keeps the authorizer's answer for one ``Authorization`` value ("Use API
Gateway Lambda authorizers": with caching on, the policy is cached for the TTL per identity source
value, 300 s by default, at most 3600 s, and used for every request with that value while it
lasts). The bound on how long a revoked key, or a tenant's changed limits, keep their old answer;
the local gateway keeps answers as long (local/apigw.py)."""

API_PAYLOAD_MAX_BYTES = 10 * 1024 * 1024
"""API Gateway's payload limit for a REST API ("Amazon API Gateway quotas": 10 MB); the API
function refuses far less (its own body limit, ``413 payload_too_large``)."""

PAGE_BYTES = 5 * 1024 * 1024
"""What the items of one list page may take in the function's answer (measured as Lambda sends
it: each item's compact JSON, escaped again as the body string of the proxy result). A page stops
before the item that would pass it and answers a cursor from there. The 1 MB left below
:data:`LAMBDA_RESPONSE_MAX_BYTES` holds the rest of the answer (status, headers, the page's
``next_cursor``: under a kilobyte) many times over; a page's first item always goes in, and one
item (a DynamoDB item is at most 400 KB, its JSON answer at most about twice that) is far below."""


@dataclass(frozen=True)
class GatewayAnswer:
    """An answer API Gateway gives itself when the API function cannot answer, in the API's error
    format (``{"error": {"code", "message"}}``): the stack sets it as a gateway response, the local
    API Gateway answers it the same."""

    status: int
    code: str
    message: str

    def body(self) -> dict[str, dict[str, str]]:
        return {"error": {"code": self.code, "message": self.message}}


FUNCTION_FAILED = GatewayAnswer(
    502,
    "function_failed",
    f"The API function did not answer: it ran out of time ({API_FUNCTION_TIMEOUT_S} s), failed, or its answer "
    f"was over Lambda's {LAMBDA_RESPONSE_MAX_BYTES // (1024 * 1024)} MB. Retry later, or ask for less (a smaller "
    "limit).",
)
"""A function error (timeout, crash, an answer over :data:`LAMBDA_RESPONSE_MAX_BYTES`): API Gateway's
502 (the DEFAULT_5XX gateway response carries this body; its status stays API Gateway's)."""
INTEGRATION_TIMED_OUT = GatewayAnswer(
    504,
    "timeout",
    f"The API did not answer within API Gateway's {API_INTEGRATION_TIMEOUT_S} s. Retry later.",
)
"""API Gateway's integration timeout (the INTEGRATION_TIMEOUT gateway response)."""
