"""The deployment's tuning, which every function and the CDK context carry: :class:`Tuning`
(shards, retention, the default tenant and the pipeline's clock), the bounds it shares with the
other settings, and the :class:`Platform` its clock rules are checked against (the stack's,
:data:`shared.settings.context.AWS`, at synth; the local runtime its own, local/settings.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Self

from pydantic import Field, model_validator

from shared.domain.firing import MAX_DELAY_SECONDS, Timing
from shared.domain.ids import MAX_SHARDS
from shared.domain.tenants import MAX_BURST, MAX_REQUESTS_PER_SECOND, MAX_TASKS, Limits
from shared.settings.model import Int, SettingsModel, Text

MAX_DELAY_QUEUES = 32
"""Every function that stages gets every delay queue's URL in one environment variable, and a
function's whole environment must fit in 4 KB."""
LEAD_MARGIN_MS = 500
"""The trigger's event source polls with some latency on top of its batching window."""
MAX_LEAD_MS = 10_000
"""The trigger waits out the lead on every batch: billed Lambda time, well inside its timeout."""
LEASE_MARGIN_MS = 10_000
"""A lease outlives the trigger's timeout (and the lead it waits out) by this much."""
MAX_LIST_SHARDS = 64
"""A page of a listing queries every list shard of the tenant."""

SCANNER_MAX_CONCURRENCY = 16
"""The scanner invocations a tick starts at most, by default: one for each of the 16 default shards."""

_TIMING = Timing()


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
