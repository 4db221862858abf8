"""The CDK context's settings: :class:`DeploymentSettings`, what a deployment sets in the context
(cdk.json ``"context"``, or ``cdk synth -c sundial:bucketShards=32``) under ``sundial:*`` keys
(:func:`context_key`). The CDK app reads it with :meth:`DeploymentSettings.from_context` and
refuses a synth whose settings break a rule, naming the context key; infra/settings.py only maps
the validated values to CDK types. Its rules on the trigger's and the table's sizes rest on
shared/settings/capacity.py; the clock's, on :data:`AWS` (shared/settings/tuning.py). The
functions never import this module: they read their environment (shared/settings/environment.py)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Self

from pydantic import BeforeValidator, Field, model_validator

from shared.settings.capacity import (
    ACCOUNT_CONCURRENCY,
    CLAIMS_PAST_LEAD_MS,
    MAX_EVENT_SOURCE_CONCURRENCY,
    MAX_MAXIMUM_POLLERS,
    MAX_MINIMUM_POLLERS,
    MAX_RESERVED_CONCURRENCY,
    MAX_TRIGGER_BATCH_SIZE,
    MIN_EVENT_SOURCE_CONCURRENCY,
    MIN_PROVISIONED_POLLERS,
    NEW_TABLE_WARM_READS,
    NEW_TABLE_WARM_WRITES,
    OTHER_FUNCTIONS_CONCURRENCY,
    claim_ms,
    other_lanes_concurrency,
    shared_lane_concurrency,
)
from shared.settings.model import Flag, Int, SettingsError, Text, _integer
from shared.settings.tuning import (
    LEAD_MARGIN_MS,
    MAX_DELAY_QUEUES,
    SCANNER_MAX_CONCURRENCY,
    Platform,
    Tuning,
)
from shared.topology import (
    DELAY_VISIBILITY_TIMEOUT_S,
    HIGH_PRIORITY_TRIGGER,
    RECOVER_CONCURRENCY,
    TRIGGER,
    TRIGGER_BATCH_SIZE,
    TRIGGER_BATCHING_WINDOW_S,
    TRIGGER_MEMORY_MB,
    TRIGGER_TIMEOUT_S,
    ConsumerSpec,
)

CONTEXT_PREFIX = "sundial:"
"""Every context key is ``sundial:`` + the setting's name in camel case."""

TICK_PERIOD_S = 60
"""The tick rule's period in AWS: EventBridge's finest rate. Not a setting."""
MIN_LEAD_MS = TRIGGER_BATCHING_WINDOW_S * 1000 + LEAD_MARGIN_MS
"""In AWS: the trigger's event source may hold a message for its batching window, and half a
second more covers its polling latency. A shorter lead would fire late."""
LOG_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653)  # noqa: E501  # fmt: skip
"""The retention periods CloudWatch Logs accepts (days)."""
ROLE_NAME = re.compile(r"^(?:[\w+=,.@-]+/)*[\w+=,.@-]{1,64}\*?$|^(?:[\w+=,.@-]+/)*\*$", re.ASCII)
"""An IAM role's name, after its path if it has one (``jobs/report-task``), ending in ``*`` or not."""
SNS_TOPIC_ARN = re.compile(r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}$")

AWS = Platform(
    tick_period_ms=TICK_PERIOD_S * 1000,
    batching_window_ms=TRIGGER_BATCHING_WINDOW_S * 1000,
    visibility_timeout_ms=DELAY_VISIBILITY_TIMEOUT_S * 1000,
    trigger_timeout_ms=TRIGGER_TIMEOUT_S * 1000,
)
"""The stack's: a tick a minute, the trigger's 1 s batching window and 120 s timeout, the delay
queues' 180 s visibility timeout (shared/topology.py)."""


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
    ecs_task_roles: Text = ""
    """The IAM roles (names, comma-separated; a name may end in ``*``) the containers of ``ecs``
    targets may run as, their task definitions' task and execution roles: the triggers may pass
    them to ECS tasks (``iam:PassRole``, to ``ecs-tasks.amazonaws.com`` only), in the deployment's
    account. Empty: an ``ecs`` target runs only task definitions without roles (RunTask refuses
    the others: a final failure of the run). ``stepfunctions`` and ``ecs`` targets are otherwise
    held, as every target is, to the deployment's account and Region (infra/targets.py)."""

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
        return other_lanes_concurrency(self.high_priority_concurrency, self.scanner_max_concurrency)

    @property
    def trigger_lane_concurrency(self) -> int:
        """Each delay queue's event source's maximum concurrency: ``trigger_max_concurrency``, or
        when 0 the account's room (its quota less the other lanes, the scanners and what the
        other functions keep) shared by the delay queues, at most Lambda's 1,000."""
        if self.trigger_max_concurrency:
            return self.trigger_max_concurrency
        return shared_lane_concurrency(self.account_concurrency, self._other_lanes_concurrency, self.delay_queues)

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
        problems += [
            f"{self.setting_name('ecs_task_roles')} must name IAM roles (letters, digits and +=,.@_-, "
            f"at most 64, a path before a /, a * at the end), got {name!r}"
            for name in self.ecs_task_role_names
            if not ROLE_NAME.match(name)
        ]
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def ecs_task_role_names(self) -> tuple[str, ...]:
        """``ecs_task_roles``, one name each."""
        return tuple(name.strip() for name in self.ecs_task_roles.split(",") if name.strip())

    @property
    def retain(self) -> bool:
        return self.removal_policy == "retain"

    @property
    def alarmed(self) -> bool:
        """Whether the stack has its alarms: asked for (``alarms``), or a topic to notify."""
        return self.alarms or bool(self.alarm_topic_arn)
