"""Sundial's settings, defined once: their defaults, their bounds and the rules between them.

* :class:`DeploymentSettings` is what a deployment sets in the CDK context (cdk.json
  ``"context"``, or ``cdk synth -c sundial:bucketShards=32``); the CDK app reads it with
  :meth:`DeploymentSettings.from_context` and refuses a synth whose settings break a rule, naming
  the context key. infra/settings.py only maps the validated values to CDK types.
* :class:`Settings` is what one function runs with: the deployment's :class:`Tuning` and the
  resources that function uses. :meth:`Settings.to_env` writes it into a function's environment
  (the stack, the local runtime and the tests all go through it) and :func:`from_env` reads it
  back at cold start: the only place the ``SUNDIAL_*`` variable names are spelled.

Both share :class:`Tuning`, so a bound holds wherever a setting is read. The rules that depend
on what surrounds the functions (the tick's period, the trigger's timeout and batching window,
the delay queues' visibility timeout) take a :class:`Platform`: :data:`AWS` at synth, the local
runtime its own (local/settings.py).

The domain never reads ``os.environ``: handlers build a :class:`Settings` with :func:`from_env`
and hand it (or the values in it) to the services.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, ValidationError, model_validator
from pydantic_core import ErrorDetails

from shared.domain.firing import MAX_DELAY_SECONDS, Timing
from shared.domain.ids import MAX_SHARDS
from shared.domain.signing import CACHE_SECONDS as SIGNING_CACHE_SECONDS
from shared.domain.tenants import MAX_BURST, MAX_REQUESTS_PER_SECOND, MAX_TASKS, Limits
from shared.topology import (
    DELAY_VISIBILITY_TIMEOUT_S,
    HIGH_PRIORITY_TRIGGER,
    PAGE_BYTES,
    RECOVER_CONCURRENCY,
    TRIGGER,
    TRIGGER_BATCH_SIZE,
    TRIGGER_BATCHING_WINDOW_S,
    TRIGGER_MEMORY_MB,
    TRIGGER_TIMEOUT_S,
    ConsumerSpec,
)

ENV_PREFIX = "SUNDIAL_"
"""Every function variable is ``SUNDIAL_`` + the setting's name in capitals."""
CONTEXT_PREFIX = "sundial:"
"""Every context key is ``sundial:`` + the setting's name in camel case."""

TICK_PERIOD_S = 60
"""The tick rule's period in AWS: EventBridge's finest rate. Not a setting."""
MAX_DELAY_QUEUES = 32
"""Every function that stages gets every delay queue's URL in one environment variable, and a
function's whole environment must fit in 4 KB."""
LEAD_MARGIN_MS = 500
"""The trigger's event source polls with some latency on top of its batching window."""
MIN_LEAD_MS = TRIGGER_BATCHING_WINDOW_S * 1000 + LEAD_MARGIN_MS
"""In AWS: the trigger's event source may hold a message for its batching window, and half a
second more covers its polling latency. A shorter lead would fire late."""
MAX_LEAD_MS = 10_000
"""The trigger waits out the lead on every batch: billed Lambda time, well inside its timeout."""
LEASE_MARGIN_MS = 10_000
"""A lease outlives the trigger's timeout (and the lead it waits out) by this much."""
MAX_LIST_SHARDS = 64
"""A page of a listing queries every list shard of the tenant."""
MAX_TRIGGER_BATCH_SIZE = 1_000
"""The trigger runs a thread per message of its batch (functions/trigger/handler.py: each waits
for its own due time), and a Lambda environment allows 1,024 processes and threads. Lambda's own
bound (10,000) is further."""
FULL_VCPU_MB = 1_769
"""The memory at which a Lambda function has one full vCPU; its CPU is proportional below."""
CLAIM_CPU_MS = 7.0
"""The client CPU of one claim at a full vCPU (pynamodb + botocore: 5.5-8 ms measured by
``make bench ARGS="--ceiling"``, docs/design.md section 4)."""
CLAIM_WRITE_MS = 6.0
"""A claim's conditional write, the round trip inside the Region (an assumption, as in sim/)."""
CLAIMS_PAST_LEAD_MS = 1_000
"""How far past the lead a batch's claims may run: the last ones of a batch due at one moment are
then claimed up to a second late, the lateness `make simulate`'s settings search accepts (p99
under a second; sim/search.py rejects the same batches on paper)."""
MIN_PROVISIONED_POLLERS = 2
"""Provisioned mode of an SQS event source: at least 2 pollers, a minimum of at most 200 and a
maximum of at most 2,000 (Lambda's ProvisionedPollerConfig for SQS, as aws-cdk-lib checks it)."""
MAX_RESERVED_CONCURRENCY = 900
"""Lambda keeps 100 of an account's concurrency unreserved; the default quota is 1,000."""
MIN_EVENT_SOURCE_CONCURRENCY = 2
MAX_EVENT_SOURCE_CONCURRENCY = 1_000
"""An SQS event source's maximum concurrency (ScalingConfig.MaximumConcurrency): 2 to 1,000."""
ACCOUNT_CONCURRENCY = 1_000
"""Lambda's default quota of concurrent executions per account and Region ("Lambda quotas"); new
accounts may start lower, which AWS raises with use."""
OTHER_FUNCTIONS_CONCURRENCY = 100
"""What the account's pool must keep for the API, its authorizer, the tick and the job function
when every trigger lane and the scanners run at their maximum: Lambda itself keeps 100
unreserved ("Lambda function scaling", reserved concurrency), and the API at its default stage
throttle (500 requests a second of ~50 ms) needs about 25."""
MAX_MINIMUM_POLLERS = 200
MAX_MAXIMUM_POLLERS = 2_000
NEW_TABLE_WARM_READS = 12_000
NEW_TABLE_WARM_WRITES = 4_000
"""The warm throughput a new on-demand table starts with (read and write units per second);
a warm throughput below it asks for nothing."""


def claim_ms(memory_mb: int) -> float:
    """About how long one claim takes on a trigger of ``memory_mb``: its CPU at the trigger's share
    of a vCPU, and the write. A batch's claims go one at a time (``ClaimTurn``), so a second vCPU
    does not make them faster."""
    return CLAIM_CPU_MS * FULL_VCPU_MB / min(memory_mb, FULL_VCPU_MB) + CLAIM_WRITE_MS


LOG_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653)  # noqa: E501  # fmt: skip
"""The retention periods CloudWatch Logs accepts (days)."""
SNS_TOPIC_ARN = re.compile(r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}$")
SSM_PARAMETER_NAME = r"^(/[A-Za-z0-9_.-]+)*$"
"""A Parameter Store name in a hierarchy (``/a/b``: the characters PutParameter accepts), or empty."""

_TIMING = Timing()


SCANNER_MAX_CONCURRENCY = 16
"""The scanner invocations a tick starts at most, by default: one for each of the 16 default shards."""


class SettingsError(ValueError):
    """Settings that cannot be used; the message names each setting (as it was given: context
    key or environment variable) and what it accepts."""


@dataclass(frozen=True)
class Platform:
    """What surrounds the functions, which the pipeline's clock must fit (milliseconds)."""

    tick_period_ms: int | None
    """How often the tick runs (None: the caller ticks by hand)."""
    batching_window_ms: int
    """How long the trigger's event source may hold a message."""
    visibility_timeout_ms: int
    """The delay queues' visibility timeout."""
    trigger_timeout_ms: int | None
    """The trigger's timeout (None: it has none)."""


AWS = Platform(
    tick_period_ms=TICK_PERIOD_S * 1000,
    batching_window_ms=TRIGGER_BATCHING_WINDOW_S * 1000,
    visibility_timeout_ms=DELAY_VISIBILITY_TIMEOUT_S * 1000,
    trigger_timeout_ms=TRIGGER_TIMEOUT_S * 1000,
)
"""The stack's: a tick a minute, the trigger's 1 s batching window and 120 s timeout, the delay
queues' 180 s visibility timeout (shared/topology.py)."""


# --- how values are read: JSON (cdk.json) or text (`-c key=value`, the environment) -------------


def _integer(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("must be an integer")
    if isinstance(value, str):
        if not re.fullmatch(r"\s*-?[0-9]+\s*", value):
            raise ValueError("must be an integer")
        return int(value)
    if not isinstance(value, int):
        raise ValueError("must be an integer")
    return value


def _boolean(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError("must be true or false")


def _urls(value: Any) -> Any:
    if isinstance(value, str):
        return tuple(url for url in value.split(",") if url)
    return value


Int = Annotated[int, BeforeValidator(_integer)]
Flag = Annotated[bool, BeforeValidator(_boolean)]
Text = Annotated[str, Strict()]

_WHY_AT_MOST = {
    "bucket_shards": f"a task id holds its bucket shard in {MAX_SHARDS.bit_length() - 1} bits",
    "list_shards": "a page of a listing queries every list shard",
    "delay_queues": "every delay queue's URL goes into one variable of a 4 KB environment",
    "delay_queue_urls": "every delay queue's URL goes into one variable of a 4 KB environment",
    "lead_ms": "the trigger waits out the lead on every batch",
    "trigger_batch_size": "the trigger runs a thread per message, and Lambda allows 1,024 threads",
    "trigger_min_pollers": "an SQS event source's minimum of provisioned pollers",
    "trigger_max_pollers": "an SQS event source's maximum of provisioned pollers",
    "tenant_requests_per_second": "every request of a tenant writes its one rate item, and a DynamoDB partition "
    "takes 1,000 writes a second",
    "tenant_burst": "every request of a tenant writes its one rate item, and a DynamoDB partition takes 1,000 "
    "writes a second",
}
_WHY = {
    "scanner_max_concurrency": "a tick's scanner invocations run at once, counted against the account's concurrency",
    "job_shard_concurrency": "an inline Map's concurrency",
    "trigger_memory_mb": "Lambda's memory sizes",
    "high_priority_concurrency": "an SQS event source's maximum concurrency",
    "high_priority_reserved_concurrency": "reserved concurrency: Lambda keeps 100 of an account's 1,000 unreserved",
    "trigger_max_concurrency": "an SQS event source's maximum concurrency",
}
"""Why a bound is where it is, told with the error (upper bounds only / both bounds)."""


def _problem(error: ErrorDetails) -> str:
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind == "greater_than_equal":
        return f"must be at least {ctx['ge']}"
    if kind == "less_than_equal":
        return f"must be at most {ctx['le']}"
    if kind == "too_long":
        return f"must have at most {ctx['max_length']} items"
    if kind == "literal_error":
        return f"must be one of {ctx['expected']}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "string_type":
        return "must be a string"
    if kind == "value_error":
        return str(ctx["error"])
    return error["msg"]


class SettingsModel(BaseModel):
    """A frozen model of settings whose errors name each setting as it was given."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def setting_name(cls, field: str) -> str:
        """How a setting is named where this model is read from (in error messages)."""
        return field

    @classmethod
    def validated(cls, values: Mapping[str, Any]) -> Self:
        """``values`` (field -> raw value) as this model, or a :class:`SettingsError` naming
        every setting that is wrong, its bound and the value given."""
        try:
            return cls.model_validate(dict(values))
        except ValidationError as exc:
            raise SettingsError(_describe(cls, exc)) from None


def _describe(model: type[SettingsModel], exc: ValidationError) -> str:
    lines = []
    for error in exc.errors():
        if not error["loc"]:  # a rule between settings: its message names them
            lines.append(_problem(error))
            continue
        field = str(error["loc"][0])
        problem = _problem(error)
        reason = _WHY_AT_MOST.get(field) if error["type"] in ("less_than_equal", "too_long") else None
        if error["type"] in ("less_than_equal", "greater_than_equal"):
            reason = reason or _WHY.get(field)
        if reason:
            problem += f" ({reason})"
        lines.append(f"{model.setting_name(field)} {problem}, got {error['input']!r}")
    return "; ".join(lines)


# --- the settings ------------------------------------------------------------------------------


class Tuning(SettingsModel):
    """What a deployment sets for every function: shards, retention, the default tenant and the
    pipeline's clock."""

    bucket_shards: Annotated[Int, Field(ge=1, le=MAX_SHARDS)] = 16
    """Partitions per minute bucket (docs/design.md says how to size it). A task id carries its
    shard (shared/domain/ids.py), so at most ``ids.MAX_SHARDS``."""
    list_shards: Annotated[Int, Field(ge=1, le=MAX_LIST_SHARDS)] = 4
    """Partitions per tenant in the listing index (spreads registration bursts)."""
    run_retention_days: Annotated[Int, Field(ge=1)] = 30
    """Finished tasks and runs expire (DynamoDB TTL, the jobs' S3 objects) this long after they end."""
    default_tenant: Annotated[Text, Field(min_length=1)] = "default"
    """The tenant of callers that carry none (the local runtime only: a deployed API wants a key)."""
    tenant_requests_per_second: Annotated[Int, Field(ge=1, le=MAX_REQUESTS_PER_SECOND)] = 100
    """A new tenant's requests per second (and the default tenant's); PATCH /v1/tenants/{id} changes it."""
    tenant_burst: Annotated[Int, Field(ge=1, le=MAX_BURST)] = 200
    """A new tenant's burst: requests admitted at once above its rate."""
    tenant_max_tasks: Annotated[Int, Field(ge=1, le=MAX_TASKS)] = 1_000_000
    """A new tenant's quota of tasks that can still fire."""
    look_ahead_ms: Annotated[Int, Field(ge=1)] = _TIMING.look_ahead_ms
    """Scanners stage what falls due this far ahead. At least one tick period, so a tick up to that
    late still stages everything before it is due."""
    guard_ms: Annotated[Int, Field(ge=0)] = _TIMING.guard_ms
    """Writers stage themselves what falls due before now + look-ahead + guard."""
    lead_ms: Annotated[Int, Field(ge=0, le=MAX_LEAD_MS)] = _TIMING.lead_ms
    """Staged messages arrive up to this much early; the trigger waits out the rest. It covers the
    trigger event source's batching window and its polling latency."""
    misfire_tolerance_ms: Annotated[Int, Field(ge=0)] = _TIMING.misfire_tolerance_ms
    """A claim later than this after the due time is a misfire."""
    lease_ms: Annotated[Int, Field(ge=1)] = _TIMING.lease_ms
    """How long a claim holds a run from its due time: longer than a trigger can live, shorter
    than the delay queues' visibility timeout (so a message redelivered after a crashed trigger
    finds the lease expired)."""

    @model_validator(mode="after")
    def _clock_fits_sqs(self) -> Self:
        name = self.setting_name
        if self.look_ahead_ms + self.guard_ms > MAX_DELAY_SECONDS * 1000:
            raise ValueError(
                f"{name('look_ahead_ms')} + {name('guard_ms')} must be at most SQS's longest delay "
                f"({MAX_DELAY_SECONDS * 1000} ms), got {self.look_ahead_ms + self.guard_ms}: "
                "what is staged further ahead would arrive early"
            )
        return self

    def platform_problems(self, platform: Platform) -> list[str]:
        """The rules between the clock and what surrounds the functions, broken on ``platform``."""
        name = self.setting_name
        problems = []
        if platform.tick_period_ms is not None and self.look_ahead_ms < platform.tick_period_ms:
            problems.append(
                f"{name('look_ahead_ms')} must be at least the tick period ({platform.tick_period_ms} ms), "
                f"got {self.look_ahead_ms}: tasks due between two scans would be staged late"
            )
        shortest_lead = platform.batching_window_ms + LEAD_MARGIN_MS
        if self.lead_ms < shortest_lead:
            problems.append(
                f"{name('lead_ms')} must be at least the trigger's batching window + {LEAD_MARGIN_MS} ms "
                f"({shortest_lead} ms), got {self.lead_ms}: messages held that long would fire late"
            )
        if platform.trigger_timeout_ms is not None:
            shortest_lease = platform.trigger_timeout_ms + LEASE_MARGIN_MS + self.lead_ms
            if self.lease_ms < shortest_lease:
                problems.append(
                    f"{name('lease_ms')} must be at least the trigger's timeout + {LEASE_MARGIN_MS} ms + "
                    f"{name('lead_ms')} ({shortest_lease} ms), got {self.lease_ms}: "
                    "a live trigger's claim could be taken over"
                )
        if self.lease_ms >= platform.visibility_timeout_ms:
            problems.append(
                f"{name('lease_ms')} must be less than the delay queues' visibility timeout "
                f"({platform.visibility_timeout_ms} ms), got {self.lease_ms}: a message redelivered "
                "after a crashed trigger would find the lease still held"
            )
        return problems

    def tuning(self) -> dict[str, Any]:
        """The values of :class:`Tuning`'s fields (what a deployment hands every function)."""
        return {field: getattr(self, field) for field in Tuning.model_fields}

    @property
    def timing(self) -> Timing:
        """The pipeline's clock."""
        return Timing(
            look_ahead_ms=self.look_ahead_ms,
            guard_ms=self.guard_ms,
            lead_ms=self.lead_ms,
            misfire_tolerance_ms=self.misfire_tolerance_ms,
            lease_ms=self.lease_ms,
        )

    @property
    def retention_ms(self) -> int:
        return self.run_retention_days * 86_400_000

    @property
    def tenant_limits(self) -> Limits:
        """A new tenant's limits (and those of the default tenant, which has no item of its own)."""
        return Limits(self.tenant_requests_per_second, self.tenant_burst, self.tenant_max_tasks)


def context_key(field: str) -> str:
    """``bucket_shards`` -> ``sundial:bucketShards``."""
    if field in _CONTEXT_SPELLINGS:
        return CONTEXT_PREFIX + _CONTEXT_SPELLINGS[field]
    head, *rest = field.split("_")
    return CONTEXT_PREFIX + head + "".join(part.capitalize() for part in rest)


_CONTEXT_SPELLINGS = {"api_gateway_cloudwatch_role": "apiGatewayCloudWatchRole"}


class DeploymentSettings(Tuning):
    """A deployment's settings: the CDK context's ``sundial:*`` keys, each a field here."""

    removal_policy: Literal["retain", "destroy"] = "retain"
    """"retain" keeps the table (with deletion protection) and the log groups when the stack
    is deleted; "destroy" removes them (throw-away development stacks only)."""
    architecture: Literal["arm64", "x86_64"] = "arm64"
    """Lambda architecture; the dependency layer is built to match."""
    bytecode_python: Text = ""
    """Empty: the layer and the code ship as source only, and every cold start compiles what it
    imports (the same assets whatever machine synthesizes them). Else the command of a Python of
    the functions' runtime version exactly (``python3.14``), which the synth runs to ship bytecode
    next to the sources (infra/bundling.py; docs/deploy.md, "Bytecode and cold starts"); a synth
    that cannot run it, or finds another version, stops."""
    log_retention_days: Annotated[Literal[LOG_RETENTION_DAYS], BeforeValidator(_integer)] = 30  # type: ignore[valid-type]
    """Retention of every log group the stack creates (one of CloudWatch Logs' periods)."""
    api_throttle_rate: Annotated[Int, Field(ge=1)] = 500
    """Steady-state requests per second the API stage accepts before answering 429."""
    api_throttle_burst: Annotated[Int, Field(ge=1)] = 1000
    """Burst the API stage accepts above the steady rate."""
    api_gateway_cloudwatch_role: Flag = True
    """API Gateway writes access logs only once the region's account settings name a CloudWatch
    role. True: the stack creates that role (kept when the stack is deleted, since every API in
    the region uses it) and sets it. False: the account already has one (landing zones often
    manage it centrally) and the stack leaves the setting alone."""
    delay_queues: Annotated[Int, Field(ge=1, le=MAX_DELAY_QUEUES)] = 1
    """Delay queues the occurrences are spread over, each with its own trigger event source.
    Raise it when one queue's in-flight limit or one event source's pollers are not enough; never
    lower it while messages may wait in the queues it removes (they go with the queue)."""
    scanner_max_concurrency: Annotated[Int, Field(ge=2, le=1000)] = SCANNER_MAX_CONCURRENCY
    """Scanner invocations a tick starts at most: it deals the shards it found busy into this many
    groups, each scanned one shard after another by one asynchronous invocation, so a tick's scans
    take at most this many environments at once. The default scans the 16 default shards at once,
    one each."""
    job_shard_concurrency: Annotated[Int, Field(ge=1, le=40)] = 10
    """Shards of one job level processed at once: how hard a job may hit its processor."""
    trigger_memory_mb: Annotated[Int, Field(ge=128, le=10_240)] = TRIGGER_MEMORY_MB
    """The trigger function's memory. The trigger mostly waits out the lead, so its Lambda time is
    the largest part of a fire's cost and grows with this; Lambda's CPU grows with it too, and a
    batch's claims and calls are CPU work: more memory, less lateness when batches are full
    (docs/design.md, section 4)."""
    trigger_batch_size: Annotated[Int, Field(ge=1, le=MAX_TRIGGER_BATCH_SIZE)] = TRIGGER_BATCH_SIZE
    """Messages the trigger's event sources hand one invocation (BatchSize; the trigger's batching
    window, 1 s, lets Lambda gather more than 10). Fuller batches share one invocation's wait out of
    the lead, one run-log write and fewer calls, but the batch's claims go one at a time: they must
    fit the lead at the trigger's CPU (:func:`claim_ms`), so a larger batch wants more memory."""
    trigger_min_pollers: Annotated[Int, Field(ge=0, le=MAX_MINIMUM_POLLERS)] = 0
    """0: the delay queues' event sources scale in standard mode (5 batches at first, 300 more a
    minute). 2 to 200: provisioned mode, with at least this many pollers on each delay queue's event
    source, always on (and billed), scaling three times as fast up to ``trigger_max_pollers``."""
    trigger_max_pollers: Annotated[Int, Field(ge=0, le=MAX_MAXIMUM_POLLERS)] = 0
    """Provisioned mode: the most pollers of each delay queue's event source (2 to 2,000; 0: Lambda's
    default, 200). Needs ``trigger_min_pollers``."""
    high_priority_concurrency: Annotated[
        Int, Field(ge=MIN_EVENT_SOURCE_CONCURRENCY, le=MAX_EVENT_SOURCE_CONCURRENCY)
    ] = 10
    """The most batches the high-priority trigger (the lane of ``"priority": "high"`` tasks) runs
    at once: its event source's maximum concurrency. The normal lane is capped too
    (``trigger_max_concurrency``), so a flood of normal occurrences leaves this much of the
    account's pool (docs/receivers.md, section 3)."""
    high_priority_reserved_concurrency: Annotated[Int, Field(ge=0, le=MAX_RESERVED_CONCURRENCY)] = 0
    """Concurrency reserved for the high-priority trigger (0: none): environments no other function
    of the account can take, which the cap of the normal lane cannot promise when other workloads
    share the account. Off by default: a reservation fails to deploy where the account's quota
    leaves less than 100 unreserved (new accounts start with a low quota). At least
    ``high_priority_concurrency`` when set: an event source invoking beyond a function's reserved
    concurrency is throttled, and each throttled batch burns its messages' receives."""
    trigger_max_concurrency: Annotated[Int, Field(ge=0, le=MAX_EVENT_SOURCE_CONCURRENCY)] = 0
    """The most batches each delay queue's event source runs at once in standard mode (its maximum
    concurrency), so the trigger cannot take the whole account's pool from the API, its
    authorizer, the tick and the high-priority lane. 0: what the account's quota leaves once the
    other lanes, the scanners and 100 for the other functions are counted, shared by the delay
    queues (:attr:`trigger_lane_concurrency`; 873 at the defaults). Provisioned mode
    (``trigger_min_pollers``) has no maximum concurrency; ``trigger_max_pollers`` bounds it."""
    account_concurrency: Annotated[Int, Field(ge=10)] = ACCOUNT_CONCURRENCY
    """The account's quota of concurrent executions in this Region (Lambda's default: 1,000): the
    caps of the trigger's lanes and the scanners must leave 100 of it to the other functions."""
    trigger_provisioned_concurrency: Annotated[Int, Field(ge=0)] = 0
    """Execution environments of the trigger kept initialized (and billed) at all times; 0: none.
    Above 0 the event sources invoke an alias ("live") of the trigger's current version, which
    holds them."""
    table_warm_reads: Annotated[Int, Field(ge=0)] = 0
    """The task table's warm throughput in read units per second (0: not set): what the on-demand
    table serves at once, without throttling while it scales. DynamoDB never lowers it again."""
    table_warm_writes: Annotated[Int, Field(ge=0)] = 0
    """The task table's warm throughput in write units per second (0: not set). A hot second's
    claims are one write each."""
    lateness_alarm_ms: Annotated[Int, Field(ge=1)] = 1000
    """The lateness alarm fires when the trigger's p99 lateness over 5 minutes exceeds this."""
    tracing: Literal["passthrough", "active"] = "passthrough"
    """The functions' X-Ray tracing mode. "passthrough": a function traces an invocation only when
    its upstream trace header says sampled (an API request API Gateway's stage sampled, and what
    the API sent while traced), so the tick and the scanners, which run every minute, cost nothing
    in traces. "active": Lambda samples every function's invocations itself (1 a second and 5 % of
    the rest), nearly every idle invocation a trace (docs/deploy.md, section 11)."""
    dashboard: Flag = False
    """A CloudWatch dashboard of the firing pipeline ($3 a month)."""
    alarms: Flag = False
    """The stack's alarms ($0.10 a month each: docs/deploy.md, section 10); an alarm topic
    (``alarm_topic_arn``) creates them too."""
    signing_key: Literal["parameter", "kms"] = "parameter"
    """Where the tenants' callback signing secrets come from (docs/tenancy.md, section 4).
    "parameter": each is derived (HMAC-SHA256) from one root key the functions keep in a Parameter
    Store SecureString (standard tier, the AWS managed key aws/ssm): nothing a month. "kms": each is
    random, stored encrypted with a customer-managed KMS key of the stack ($1 a month): the key
    has a policy of its own, the signers cannot make a secret they were not given, and every use
    is in CloudTrail. Switching changes every tenant's secret: each must be rotated."""
    canary: Flag = False
    """A canary task due every minute, fired through the deployment's own path and timed, with
    alarms (when the stack has alarms) when a minute is missed or over a second late (about $0.85 a
    month: docs/deploy.md, section 15)."""
    scheduler_function_url: Flag = True
    """Serve the EventBridge Scheduler API from a Lambda function URL (auth type NONE: the function
    verifies each request's SigV4 signature itself), a small function of its own with the API
    function's code and what its ``/scheduler`` routes need: the ``SchedulerFunctionUrl`` output,
    the endpoint clients sign for. On by default: API Gateway's REST API keeps a SigV4
    ``Authorization`` header from its function (AWS's recording of a signed call:
    docs/eventbridge.md, section 5), so ``/scheduler`` on the API's URL cannot verify a signature;
    false leaves the URL out (docs/deploy.md, section 5)."""
    alarm_topic_arn: Text = ""
    """An SNS topic the alarms notify (and tell when they recover); setting it creates the alarms
    whatever ``alarms`` says. Empty: alarms, when ``alarms`` asks for them, only show in
    CloudWatch."""

    @classmethod
    def setting_name(cls, field: str) -> str:
        return context_key(field)

    @classmethod
    def context_keys(cls) -> dict[str, str]:
        """Context key -> field, for every setting."""
        return {context_key(field): field for field in cls.model_fields}

    @classmethod
    def from_context(cls, context: Mapping[str, Any]) -> Self:
        """The settings a CDK context states (every ``sundial:*`` key of it; the others are the
        CDK's own). An unknown ``sundial:*`` key is refused too: a misspelt one would be ignored."""
        keys = cls.context_keys()
        unknown = sorted(key for key in context if key.startswith(CONTEXT_PREFIX) and key not in keys)
        if unknown:
            raise SettingsError(f"unknown setting {', '.join(unknown)} (the settings are {', '.join(sorted(keys))})")
        return cls.validated({keys[key]: value for key, value in context.items() if key in keys})

    def context(self) -> dict[str, Any]:
        """Every setting under its context key (what cdk.json states)."""
        return {context_key(field): value for field, value in self.model_dump().items()}

    def scaling_problems(self) -> list[str]:
        """The rules of the settings that size the trigger and the table, broken.

        A batch's claims go one at a time, and its messages arrive at least the lead before their
        due times (the rounding of SQS's whole-second delays adds up to a second more). When they
        are all due at one moment, claims that take longer than the lead claim the last ones late
        whatever the batching window did: more than a second late is refused
        (:data:`CLAIMS_PAST_LEAD_MS`). Shorter is not a promise of no lateness (the window and
        the polling take part of the lead, later messages of a batch are mostly due later):
        docs/deploy.md tells the trade-off."""
        name = self.setting_name
        problems = []
        claims = self.trigger_batch_size * claim_ms(self.trigger_memory_mb)
        if claims > self.lead_ms + CLAIMS_PAST_LEAD_MS:
            problems.append(
                f"a batch of {name('trigger_batch_size')} claims, taken one at a time at "
                f"{name('trigger_memory_mb')} (about {claim_ms(self.trigger_memory_mb):.0f} ms each), must end "
                f"within a second after {name('lead_ms')} ({self.lead_ms} ms), got {self.trigger_batch_size} "
                f"claims: about {claims:.0f} ms; a batch due at one moment would claim its last occurrences "
                "over a second late (lower the batch size, or raise the memory or the lead)"
            )
        for field in ("trigger_min_pollers", "trigger_max_pollers"):
            if 0 < getattr(self, field) < MIN_PROVISIONED_POLLERS:
                problems.append(
                    f"{name(field)} must be 0 (standard mode) or at least {MIN_PROVISIONED_POLLERS} "
                    f"(provisioned mode), got {getattr(self, field)}"
                )
        if self.trigger_max_pollers and not self.trigger_min_pollers:
            problems.append(
                f"{name('trigger_max_pollers')} needs {name('trigger_min_pollers')} (provisioned mode), "
                f"got {self.trigger_max_pollers} with {name('trigger_min_pollers')} 0"
            )
        if (
            self.trigger_min_pollers
            and self.trigger_max_pollers
            and self.trigger_max_pollers < self.trigger_min_pollers
        ):
            problems.append(
                f"{name('trigger_max_pollers')} must be at least {name('trigger_min_pollers')} "
                f"({self.trigger_min_pollers}), got {self.trigger_max_pollers}"
            )
        problems.extend(self.concurrency_problems())
        for field, least in (("table_warm_reads", NEW_TABLE_WARM_READS), ("table_warm_writes", NEW_TABLE_WARM_WRITES)):
            if 0 < getattr(self, field) < least:
                problems.append(
                    f"{name(field)} must be 0 (not set) or at least {least} (what a new on-demand table "
                    f"has already), got {getattr(self, field)}"
                )
        return problems

    def concurrency_problems(self) -> list[str]:
        """The rules between the event sources' caps, the reserved concurrency and the account's
        pool, broken."""
        name = self.setting_name
        problems = []
        reserved = self.high_priority_reserved_concurrency
        if reserved and reserved < self.high_priority_concurrency:
            problems.append(
                f"{name('high_priority_reserved_concurrency')} must be 0 (none) or at least "
                f"{name('high_priority_concurrency')} ({self.high_priority_concurrency}), got {reserved}: "
                "the lane's event source would invoke beyond the reservation, and each throttled batch "
                "burns its messages' receives"
            )
        if self.provisioned_pollers is None:
            lanes = self.trigger_lane_concurrency * self.delay_queues
            used = lanes + self._other_lanes_concurrency
            room = self.account_concurrency - OTHER_FUNCTIONS_CONCURRENCY
            if self.trigger_lane_concurrency < MIN_EVENT_SOURCE_CONCURRENCY:
                problems.append(
                    f"{name('account_concurrency')} ({self.account_concurrency}) less "
                    f"{OTHER_FUNCTIONS_CONCURRENCY} for the other functions, {name('high_priority_concurrency')}, "
                    f"{name('scanner_max_concurrency')} and the recovering trigger's {RECOVER_CONCURRENCY} must "
                    f"leave each of the {name('delay_queues')} ({self.delay_queues}) at least "
                    f"{MIN_EVENT_SOURCE_CONCURRENCY}: lower those caps, or raise the account's quota and say so"
                )
            elif used > room:
                problems.append(
                    f"{name('trigger_max_concurrency')} x {name('delay_queues')} ({lanes}) + "
                    f"{name('high_priority_concurrency')} + {name('scanner_max_concurrency')} + the recovering "
                    f"trigger's {RECOVER_CONCURRENCY} must leave {OTHER_FUNCTIONS_CONCURRENCY} of "
                    f"{name('account_concurrency')} ({self.account_concurrency}) to the API, its authorizer, "
                    f"the tick and the jobs, got {used}: lower a cap, or raise the account's quota and say so"
                )
        return problems

    def event_source_concurrency(self, consumer: ConsumerSpec) -> int:
        """The maximum concurrency of ``consumer``'s event source: the topology's, else its lane's
        setting. The high-priority lane's stays within its reserved concurrency when it has one
        (:meth:`concurrency_problems` refuses more): beyond it, invocations are throttled and each
        throttled batch burns its messages' receives ("Using Lambda with Amazon SQS", maximum
        concurrency and reserved concurrency)."""
        if consumer.max_concurrency is not None:
            return consumer.max_concurrency
        return {
            TRIGGER: self.trigger_lane_concurrency,
            HIGH_PRIORITY_TRIGGER: self.high_priority_concurrency,
        }[consumer.function]

    @property
    def _other_lanes_concurrency(self) -> int:
        return self.high_priority_concurrency + self.scanner_max_concurrency + RECOVER_CONCURRENCY

    @property
    def trigger_lane_concurrency(self) -> int:
        """Each delay queue's event source's maximum concurrency: ``trigger_max_concurrency``, or
        when 0 the account's room (its quota less the other lanes, the scanners and what the
        other functions keep) shared by the delay queues, at most Lambda's 1,000."""
        if self.trigger_max_concurrency:
            return self.trigger_max_concurrency
        room = self.account_concurrency - OTHER_FUNCTIONS_CONCURRENCY - self._other_lanes_concurrency
        return min(MAX_EVENT_SOURCE_CONCURRENCY, room // self.delay_queues)

    @property
    def provisioned_pollers(self) -> tuple[int, int | None] | None:
        """(minimum, maximum or None: Lambda's default) of each delay queue's event source in
        provisioned mode; None: standard mode."""
        if not self.trigger_min_pollers:
            return None
        return self.trigger_min_pollers, self.trigger_max_pollers or None

    @model_validator(mode="after")
    def _fits_aws(self) -> Self:
        problems = [*self.platform_problems(AWS), *self.scaling_problems()]
        if self.alarm_topic_arn and not SNS_TOPIC_ARN.match(self.alarm_topic_arn):
            problems.append(
                f"{self.setting_name('alarm_topic_arn')} must be empty or an SNS topic ARN, "
                f"got {self.alarm_topic_arn!r}"
            )
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def retain(self) -> bool:
        return self.removal_policy == "retain"

    @property
    def alarmed(self) -> bool:
        """Whether the stack has its alarms: asked for (``alarms``), or a topic to notify."""
        return self.alarms or bool(self.alarm_topic_arn)


def env_name(field: str) -> str:
    """The variable a function reads ``field`` of its :class:`Settings` from."""
    if field not in Settings.model_fields:
        raise KeyError(f"{field} is not a function setting")
    return ENV_PREFIX + field.upper()


class Settings(Tuning):
    """What one function runs with: the deployment's tuning and the resources it uses."""

    table_name: Annotated[Text, Field(min_length=1)] = "sundial"
    idempotency_table: Annotated[Text, Field(min_length=1)] = "sundial-idempotency"
    """The table of Powertools' idempotency records (the API's ``Idempotency-Key`` header)."""
    delay_queue_urls: Annotated[tuple[Text, ...], BeforeValidator(_urls), Field(max_length=MAX_DELAY_QUEUES)] = ()
    """The delay queues occurrences are staged into (spread by run id), in index order."""
    dead_letter_queue_url: Text = ""
    scanner_function: Text = ""
    """The scanner function's name, which the tick invokes asynchronously (shared/scans.py)."""
    scan_invocations: Annotated[Int, Field(ge=1)] = SCANNER_MAX_CONCURRENCY
    """The most scanner invocations a tick starts: the deployment's ``scanner_max_concurrency``."""
    stranded_queue_url: Text = ""
    """The stranded queue (shared/topology.py, ``STRANDED``): the tick looks at its depth, the
    recovering trigger drains it."""
    recover_function: Text = ""
    """The recovering trigger's name, which the tick invokes asynchronously when the stranded queue
    holds messages (shared/stranded.py). Empty: the tick does not look."""
    high_priority_queue_url: Text = ""
    """The delay queue of high-priority occurrences (empty: they share the others)."""
    jobs_bucket: Text = ""
    """The S3 bucket of the jobs' data and results (docs/jobs.md)."""
    job_state_machine_arn: Text = ""
    job_function: Text = ""
    """The job function's name: the API invokes it to send a notify a progress report crossed."""
    own_prefix: Text = ""
    """The name prefix of the deployment's own resources (the stack's name and a dash): a task may
    not target them (shared/domain/own.py). Empty: nothing is refused."""
    account_id: Text = ""
    """The deployment's AWS account (own resources are refused in it only)."""
    signing_key_arn: Text = ""
    """The "kms" signing key mode (``sundial:signingKey``): the KMS key the tenants' callback
    signing secrets are encrypted with (docs/tenancy.md, section 4)."""
    signing_root_parameter: Annotated[Text, Field(pattern=SSM_PARAMETER_NAME)] = ""
    """The "parameter" signing key mode (the default): the Parameter Store parameter of the root
    key the tenants' callback signing secrets are derived from (``/<stack name>/signing-root``;
    the first function that needs it creates it). Neither this nor ``signing_key_arn``: callbacks
    are not signed; both: refused."""
    admin_key: Text = ""
    """The local runtime's admin key, whose hash it writes into its table at start (one is made up
    when this is unset). The functions never read it: the authorizer finds the admin key by its
    hash in the table, where a deployed stack's operator puts it (``sundial admin-key create``)."""
    signing_cache_seconds: Annotated[Int, Field(ge=1, le=SIGNING_CACHE_SECONDS)] = SIGNING_CACHE_SECONDS
    """How long a function keeps a tenant's signing secrets: a rotation reaches every
    call within it. Shorter only where a test must see a rotation without waiting a minute (the
    local runtime's end-to-end tests)."""
    allow_loopback_targets: Flag = False
    """HTTP targets may be loopback addresses (the local runtime and the tests only)."""
    allow_private_targets: Flag = False
    """HTTP targets may be private addresses (the local runtime only)."""
    page_bytes: Annotated[Int, Field(ge=1, le=PAGE_BYTES)] = PAGE_BYTES
    """What the items of one list page may take in the API's answer (shared/topology.py): Lambda's
    answer is at most 6 MB. Lower only where a test must cross it with a few items."""

    RESOURCE_FIELDS: ClassVar[tuple[str, ...]] = (
        "table_name",
        "idempotency_table",
        "delay_queue_urls",
        "dead_letter_queue_url",
        "scanner_function",
        "scan_invocations",
        "stranded_queue_url",
        "recover_function",
        "high_priority_queue_url",
        "jobs_bucket",
        "job_state_machine_arn",
        "job_function",
        "own_prefix",
        "account_id",
        "signing_key_arn",
        "signing_root_parameter",
        "admin_key",
        "signing_cache_seconds",
        "page_bytes",
    )
    """A function's environment names only the resources it uses (and the local runtime's own
    knobs it is given): one left at its default is not written (and reads back as the default)."""

    @classmethod
    def setting_name(cls, field: str) -> str:
        return env_name(field)

    @classmethod
    def env_names(cls) -> frozenset[str]:
        return frozenset(env_name(field) for field in cls.model_fields)

    @classmethod
    def of(cls, tuning: Tuning, **resources: Any) -> Self:
        """A function's settings in a deployment: its tuning, and the resources the function uses."""
        return cls.validated({**tuning.tuning(), **resources})

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Self:
        """The settings :meth:`to_env` wrote (``os.environ`` unless ``environ``); a variable that
        is not there is the default, a value out of bounds a :class:`SettingsError` naming it."""
        env = os.environ if environ is None else environ
        return cls.validated({field: env[env_name(field)] for field in cls.model_fields if env_name(field) in env})

    @model_validator(mode="after")
    def _urls_are_separable(self) -> Self:
        if any(not url or "," in url for url in self.delay_queue_urls):
            raise ValueError(
                f"{env_name('delay_queue_urls')} must be URLs without commas, got {self.delay_queue_urls!r}"
            )
        return self

    @model_validator(mode="after")
    def _one_signing_key_mode(self) -> Self:
        if self.signing_key_arn and self.signing_root_parameter:
            raise ValueError(
                f"{env_name('signing_key_arn')} and {env_name('signing_root_parameter')} are the two signing key "
                "modes: set one of them"
            )
        return self

    def to_env(self) -> dict[str, str]:
        """The function's environment: every setting, and each resource the function uses. The
        one place the variables are written (:func:`from_env` reads them)."""
        env = {}
        for field, value in self:
            if field in self.RESOURCE_FIELDS and value == type(self).model_fields[field].default:
                continue
            env[env_name(field)] = _text(value)
        return env

    def with_resources(self, **resources: Any) -> Self:
        """These settings with more resources (validated)."""
        return self.validated({**dict(self), **resources})


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(str(url) for url in value)
    return str(value)


def from_env(environ: Mapping[str, str] | None = None) -> Settings:
    """A function's settings, from its environment (at cold start)."""
    return Settings.from_env(environ)
