"""One settings object per function, read from the environment once at cold start.

The domain never reads ``os.environ``: handlers build a :class:`Settings` with
:func:`from_env` and hand it (or the values in it) to the services.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from shared.domain.firing import Timing

# Environment variable names: the CDK stack (infra/) and the local runtime set exactly these.
ENV_TABLE_NAME = "SUNDIAL_TABLE_NAME"
ENV_BUCKET_SHARDS = "SUNDIAL_BUCKET_SHARDS"
ENV_LIST_SHARDS = "SUNDIAL_LIST_SHARDS"
ENV_RUN_RETENTION_DAYS = "SUNDIAL_RUN_RETENTION_DAYS"
ENV_DEFAULT_TENANT = "SUNDIAL_DEFAULT_TENANT"
ENV_DELAY_QUEUE_URLS = "SUNDIAL_DELAY_QUEUE_URLS"
ENV_DEAD_LETTER_QUEUE_URL = "SUNDIAL_DEAD_LETTER_QUEUE_URL"
ENV_SCAN_QUEUE_URL = "SUNDIAL_SCAN_QUEUE_URL"
ENV_LOOK_AHEAD_MS = "SUNDIAL_LOOK_AHEAD_MS"
ENV_GUARD_MS = "SUNDIAL_GUARD_MS"
ENV_LEAD_MS = "SUNDIAL_LEAD_MS"
ENV_MISFIRE_TOLERANCE_MS = "SUNDIAL_MISFIRE_TOLERANCE_MS"
ENV_LEASE_MS = "SUNDIAL_LEASE_MS"
ENV_JOBS_BUCKET = "SUNDIAL_JOBS_BUCKET"
ENV_JOB_STATE_MACHINE_ARN = "SUNDIAL_JOB_STATE_MACHINE_ARN"
ENV_ALLOW_LOOPBACK = "SUNDIAL_ALLOW_LOOPBACK_TARGETS"
ENV_ALLOW_PRIVATE = "SUNDIAL_ALLOW_PRIVATE_TARGETS"
ENV_IDEMPOTENCY_TABLE = "SUNDIAL_IDEMPOTENCY_TABLE"


@dataclass(frozen=True)
class Settings:
    table_name: str = "sundial"
    bucket_shards: int = 16
    """Partitions per minute bucket; see docs/design.md for how to size it."""
    list_shards: int = 4
    """Partitions per tenant in the listing index (spreads registration bursts)."""
    run_retention_days: int = 30
    """Finished tasks and runs expire (DynamoDB TTL) this long after they end."""
    default_tenant: str = "default"
    delay_queue_urls: tuple[str, ...] = ()
    """The delay queues occurrences are staged into (spread by run id)."""
    dead_letter_queue_url: str = ""
    scan_queue_url: str = ""
    jobs_bucket: str = ""
    job_state_machine_arn: str = ""
    """The S3 bucket of the jobs' data and results (docs/jobs.md)."""
    timing: Timing = field(default_factory=Timing)
    allow_loopback_targets: bool = False
    allow_private_targets: bool = False
    idempotency_table: str = "sundial-idempotency"
    """The table of Powertools' idempotency records (the API's ``Idempotency-Key`` header)."""

    @property
    def retention_ms(self) -> int:
        return self.run_retention_days * 86_400_000


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


def from_env(environ: dict[str, str] | None = None) -> Settings:
    env = os.environ if environ is None else environ
    base = Settings()
    timing = Timing(
        look_ahead_ms=int(env.get(ENV_LOOK_AHEAD_MS, base.timing.look_ahead_ms)),
        guard_ms=int(env.get(ENV_GUARD_MS, base.timing.guard_ms)),
        lead_ms=int(env.get(ENV_LEAD_MS, base.timing.lead_ms)),
        misfire_tolerance_ms=int(env.get(ENV_MISFIRE_TOLERANCE_MS, base.timing.misfire_tolerance_ms)),
        lease_ms=int(env.get(ENV_LEASE_MS, base.timing.lease_ms)),
    )
    return Settings(
        table_name=env.get(ENV_TABLE_NAME, base.table_name),
        bucket_shards=int(env.get(ENV_BUCKET_SHARDS, base.bucket_shards)),
        list_shards=int(env.get(ENV_LIST_SHARDS, base.list_shards)),
        run_retention_days=int(env.get(ENV_RUN_RETENTION_DAYS, base.run_retention_days)),
        default_tenant=env.get(ENV_DEFAULT_TENANT, base.default_tenant),
        delay_queue_urls=tuple(u for u in env.get(ENV_DELAY_QUEUE_URLS, "").split(",") if u),
        dead_letter_queue_url=env.get(ENV_DEAD_LETTER_QUEUE_URL, ""),
        scan_queue_url=env.get(ENV_SCAN_QUEUE_URL, ""),
        jobs_bucket=env.get(ENV_JOBS_BUCKET, ""),
        job_state_machine_arn=env.get(ENV_JOB_STATE_MACHINE_ARN, ""),
        timing=timing,
        allow_loopback_targets=_flag(env.get(ENV_ALLOW_LOOPBACK)),
        allow_private_targets=_flag(env.get(ENV_ALLOW_PRIVATE)),
        idempotency_table=env.get(ENV_IDEMPOTENCY_TABLE, base.idempotency_table),
    )
