"""Deployment settings, read once from the CDK context (cdk.json "context" or `-c key=value`).

Everything a team may want to change per deployment lives here with its default; the
constructs take a :class:`DeploymentSettings` and never read the context themselves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from aws_cdk import RemovalPolicy
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Node

from infra import names
from shared.domain.firing import MAX_DELAY_SECONDS, Timing
from shared.topology import (
    DELAY_VISIBILITY_TIMEOUT_S,
    TRIGGER_BATCHING_WINDOW_S,
    TRIGGER_MEMORY_MB,
    TRIGGER_TIMEOUT_S,
)

TICK_PERIOD_S = 60
"""The tick rule's period: EventBridge's finest rate. Not a setting."""
MAX_DELAY_QUEUES = 32
"""Every function that stages gets every delay queue's URL in one environment variable, and a
function's whole environment must fit in 4 KB."""
MIN_LEAD_MS = TRIGGER_BATCHING_WINDOW_S * 1000 + 500
"""The trigger's event source may hold a message for its batching window; half a second more
covers its polling latency. A shorter lead would fire late."""
MAX_LEAD_MS = 10_000
"""The trigger waits out the lead on every batch: billed Lambda time, well inside its timeout."""
_TIMING = Timing()
_SNS_TOPIC_ARN = re.compile(r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}$")

# CloudWatch Logs accepts only these retention periods (days).
_RETENTION: dict[int, logs.RetentionDays] = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    5: logs.RetentionDays.FIVE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS,
    90: logs.RetentionDays.THREE_MONTHS,
    120: logs.RetentionDays.FOUR_MONTHS,
    150: logs.RetentionDays.FIVE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
    400: logs.RetentionDays.THIRTEEN_MONTHS,
    545: logs.RetentionDays.EIGHTEEN_MONTHS,
    731: logs.RetentionDays.TWO_YEARS,
    1096: logs.RetentionDays.THREE_YEARS,
    1827: logs.RetentionDays.FIVE_YEARS,
    2192: logs.RetentionDays.SIX_YEARS,
    2557: logs.RetentionDays.SEVEN_YEARS,
    2922: logs.RetentionDays.EIGHT_YEARS,
    3288: logs.RetentionDays.NINE_YEARS,
    3653: logs.RetentionDays.TEN_YEARS,
}
_ARCHITECTURES: dict[str, lambda_.Architecture] = {
    "arm64": lambda_.Architecture.ARM_64,
    "x86_64": lambda_.Architecture.X86_64,
}
_REMOVAL_POLICIES: dict[str, RemovalPolicy] = {
    "retain": RemovalPolicy.RETAIN,
    "destroy": RemovalPolicy.DESTROY,
}


class SettingsError(ValueError):
    """A context value that cannot be used; the message names the key and what it accepts."""


@dataclass(frozen=True)
class DeploymentSettings:
    bucket_shards: int = 16
    """Partitions per minute bucket (SUNDIAL_BUCKET_SHARDS)."""
    list_shards: int = 4
    """Partitions per tenant in the listing index (SUNDIAL_LIST_SHARDS)."""
    run_retention_days: int = 30
    """Finished tasks and runs expire this long after they end (SUNDIAL_RUN_RETENTION_DAYS)."""
    default_tenant: str = "default"
    """The tenant of callers that carry none (SUNDIAL_DEFAULT_TENANT)."""
    removal_policy: str = "retain"
    """"retain" keeps the table (with deletion protection) and the log groups when the stack
    is deleted; "destroy" removes them (throw-away development stacks only)."""
    architecture: str = "arm64"
    """Lambda architecture, "arm64" or "x86_64"; the dependency layer is built to match."""
    log_retention_days: int = 30
    """Retention of every log group the stack creates."""
    api_throttle_rate: int = 500
    """Steady-state requests per second the API stage accepts before answering 429."""
    api_throttle_burst: int = 1000
    """Burst the API stage accepts above the steady rate."""
    api_gateway_cloudwatch_role: bool = True
    """API Gateway writes access logs only once the region's account settings name a CloudWatch
    role. True: the stack creates that role (kept when the stack is deleted, since every API in
    the region uses it) and sets it. False: the account already has one (landing zones often
    manage it centrally) and the stack leaves the setting alone."""
    delay_queues: int = 1
    """Delay queues the occurrences are spread over, each with its own trigger event source.
    Raise it when one queue's in-flight limit or one event source's pollers are not enough; never
    lower it while messages may wait in the queues it removes (they go with the queue)."""
    scanner_max_concurrency: int = 16
    """Scanners running at once (the scan-request event source's maximum concurrency, 2-1000);
    a tick's remaining shards wait in the queue. The default scans the 16 default shards at once."""
    job_shard_concurrency: int = 10
    """Shards of one job level processed at once (1-40, an inline Map's limit): how hard a job
    may hit its processor."""
    trigger_memory_mb: int = TRIGGER_MEMORY_MB
    """The trigger function's memory (128-10240 MB). The trigger mostly waits out the lead, so its
    Lambda time is the largest part of a fire's cost and grows with this; Lambda's CPU grows with
    it too, and a batch's claims and calls are CPU work: more memory, less lateness when batches
    are full (docs/design.md, section 4)."""
    look_ahead_ms: int = _TIMING.look_ahead_ms
    """Scanners stage what falls due this far ahead (SUNDIAL_LOOK_AHEAD_MS). At least one tick
    period, so a tick up to that late still stages everything before it is due."""
    guard_ms: int = _TIMING.guard_ms
    """Writers stage themselves what falls due before now + look-ahead + guard (SUNDIAL_GUARD_MS)."""
    lead_ms: int = _TIMING.lead_ms
    """Staged messages arrive up to this much early; the trigger waits out the rest (SUNDIAL_LEAD_MS)."""
    misfire_tolerance_ms: int = _TIMING.misfire_tolerance_ms
    """A claim later than this after the due time is a misfire (SUNDIAL_MISFIRE_TOLERANCE_MS)."""
    lease_ms: int = _TIMING.lease_ms
    """How long a claim holds a run (SUNDIAL_LEASE_MS). Shorter than the delay queues' visibility
    timeout, so a message redelivered after a crashed trigger finds the lease expired."""
    lateness_alarm_ms: int = 1000
    """The lateness alarm fires when the trigger's p99 lateness over 5 minutes exceeds this."""
    alarm_topic_arn: str = ""
    """An SNS topic the alarms notify (and tell when they recover); empty: alarms only show in
    CloudWatch."""

    def __post_init__(self) -> None:
        for key, value in (
            (names.CTX_BUCKET_SHARDS, self.bucket_shards),
            (names.CTX_LIST_SHARDS, self.list_shards),
            (names.CTX_RUN_RETENTION_DAYS, self.run_retention_days),
            (names.CTX_API_THROTTLE_RATE, self.api_throttle_rate),
            (names.CTX_API_THROTTLE_BURST, self.api_throttle_burst),
        ):
            if value < 1:
                raise SettingsError(f"{key} must be a positive integer, got {value!r}")
        self._validate_pipeline()
        if not self.default_tenant:
            raise SettingsError(f"{names.CTX_DEFAULT_TENANT} must not be empty")
        _pick(names.CTX_REMOVAL_POLICY, self.removal_policy, _REMOVAL_POLICIES)
        _pick(names.CTX_ARCHITECTURE, self.architecture, _ARCHITECTURES)
        _pick(names.CTX_LOG_RETENTION_DAYS, self.log_retention_days, _RETENTION)

    def _validate_pipeline(self) -> None:
        _within(names.CTX_DELAY_QUEUES, self.delay_queues, 1, MAX_DELAY_QUEUES)
        _within(names.CTX_TRIGGER_MEMORY_MB, self.trigger_memory_mb, 128, 10_240)
        _within(names.CTX_JOB_SHARD_CONCURRENCY, self.job_shard_concurrency, 1, 40)
        _within(names.CTX_SCANNER_MAX_CONCURRENCY, self.scanner_max_concurrency, 2, 1000)
        _within(names.CTX_LATENESS_ALARM_MS, self.lateness_alarm_ms, 1, None)
        _within(names.CTX_GUARD_MS, self.guard_ms, 0, None)
        _within(names.CTX_LEAD_MS, self.lead_ms, MIN_LEAD_MS, MAX_LEAD_MS)
        _within(names.CTX_MISFIRE_TOLERANCE_MS, self.misfire_tolerance_ms, 0, None)
        if self.look_ahead_ms < TICK_PERIOD_S * 1000:
            raise SettingsError(
                f"{names.CTX_LOOK_AHEAD_MS} must be at least the tick period ({TICK_PERIOD_S * 1000} ms), "
                f"got {self.look_ahead_ms!r}: tasks due between two scans would be staged late"
            )
        if self.look_ahead_ms + self.guard_ms > MAX_DELAY_SECONDS * 1000:
            raise SettingsError(
                f"{names.CTX_LOOK_AHEAD_MS} + {names.CTX_GUARD_MS} must not exceed SQS's longest delay "
                f"({MAX_DELAY_SECONDS * 1000} ms), got {self.look_ahead_ms + self.guard_ms}: "
                "what is staged further ahead would arrive early"
            )
        # A live trigger is never overtaken (lease > its timeout + the lead), a crashed one's
        # redelivered message finds the lease run out (lease < the visibility timeout).
        _within(
            names.CTX_LEASE_MS,
            self.lease_ms,
            (TRIGGER_TIMEOUT_S + 10) * 1000 + self.lead_ms,
            DELAY_VISIBILITY_TIMEOUT_S * 1000 - 1,
        )
        if self.alarm_topic_arn and not _SNS_TOPIC_ARN.match(self.alarm_topic_arn):
            raise SettingsError(
                f"{names.CTX_ALARM_TOPIC_ARN} must be empty or an SNS topic ARN, got {self.alarm_topic_arn!r}"
            )

    @classmethod
    def from_context(cls, node: Node) -> DeploymentSettings:
        base = cls()
        return cls(
            bucket_shards=_int(node, names.CTX_BUCKET_SHARDS, base.bucket_shards),
            list_shards=_int(node, names.CTX_LIST_SHARDS, base.list_shards),
            run_retention_days=_int(node, names.CTX_RUN_RETENTION_DAYS, base.run_retention_days),
            default_tenant=_str(node, names.CTX_DEFAULT_TENANT, base.default_tenant),
            removal_policy=_str(node, names.CTX_REMOVAL_POLICY, base.removal_policy),
            architecture=_str(node, names.CTX_ARCHITECTURE, base.architecture),
            log_retention_days=_int(node, names.CTX_LOG_RETENTION_DAYS, base.log_retention_days),
            api_throttle_rate=_int(node, names.CTX_API_THROTTLE_RATE, base.api_throttle_rate),
            api_throttle_burst=_int(node, names.CTX_API_THROTTLE_BURST, base.api_throttle_burst),
            api_gateway_cloudwatch_role=_bool(
                node, names.CTX_API_GATEWAY_CLOUDWATCH_ROLE, base.api_gateway_cloudwatch_role
            ),
            delay_queues=_int(node, names.CTX_DELAY_QUEUES, base.delay_queues),
            scanner_max_concurrency=_int(node, names.CTX_SCANNER_MAX_CONCURRENCY, base.scanner_max_concurrency),
            trigger_memory_mb=_int(node, names.CTX_TRIGGER_MEMORY_MB, base.trigger_memory_mb),
            job_shard_concurrency=_int(node, names.CTX_JOB_SHARD_CONCURRENCY, base.job_shard_concurrency),
            look_ahead_ms=_int(node, names.CTX_LOOK_AHEAD_MS, base.look_ahead_ms),
            guard_ms=_int(node, names.CTX_GUARD_MS, base.guard_ms),
            lead_ms=_int(node, names.CTX_LEAD_MS, base.lead_ms),
            misfire_tolerance_ms=_int(node, names.CTX_MISFIRE_TOLERANCE_MS, base.misfire_tolerance_ms),
            lease_ms=_int(node, names.CTX_LEASE_MS, base.lease_ms),
            lateness_alarm_ms=_int(node, names.CTX_LATENESS_ALARM_MS, base.lateness_alarm_ms),
            alarm_topic_arn=_str(node, names.CTX_ALARM_TOPIC_ARN, base.alarm_topic_arn),
        )

    @property
    def retain(self) -> bool:
        return self.removal_policy == "retain"

    @property
    def cdk_removal_policy(self) -> RemovalPolicy:
        return _REMOVAL_POLICIES[self.removal_policy]

    @property
    def lambda_architecture(self) -> lambda_.Architecture:
        return _ARCHITECTURES[self.architecture]

    @property
    def log_retention(self) -> logs.RetentionDays:
        return _RETENTION[self.log_retention_days]

    @property
    def timing(self) -> Timing:
        """The pipeline's clock, as the functions build it from their environment."""
        return Timing(
            look_ahead_ms=self.look_ahead_ms,
            guard_ms=self.guard_ms,
            lead_ms=self.lead_ms,
            misfire_tolerance_ms=self.misfire_tolerance_ms,
            lease_ms=self.lease_ms,
        )


def _within(key: str, value: int, low: int, high: int | None) -> None:
    if value < low or (high is not None and value > high):
        bounds = f"from {low} to {high}" if high is not None else f"at least {low}"
        raise SettingsError(f"{key} must be {bounds}, got {value!r}")


def _pick(key: str, value: Any, choices: dict[Any, Any]) -> Any:
    if value not in choices:
        accepted = ", ".join(repr(choice) for choice in choices)
        raise SettingsError(f"{key} must be one of {accepted}, got {value!r}")
    return choices[value]


def _int(node: Node, key: str, default: int) -> int:
    raw = node.try_get_context(key)
    if raw is None:
        return default
    # `-c key=value` on the command line hands every value over as a string.
    if isinstance(raw, bool) or not isinstance(raw, int | str):
        raise SettingsError(f"{key} must be an integer, got {raw!r}")
    try:
        return int(raw)
    except ValueError as exc:
        raise SettingsError(f"{key} must be an integer, got {raw!r}") from exc


def _bool(node: Node, key: str, default: bool) -> bool:
    raw = node.try_get_context(key)
    if raw is None:
        return default
    if isinstance(raw, bool):
        return raw
    if raw in ("true", "false"):  # from `-c key=value`
        return raw == "true"
    raise SettingsError(f"{key} must be true or false, got {raw!r}")


def _str(node: Node, key: str, default: str) -> str:
    raw = node.try_get_context(key)
    if raw is None:
        return default
    if not isinstance(raw, str):
        raise SettingsError(f"{key} must be a string, got {raw!r}")
    return raw
