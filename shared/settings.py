"""One settings object per function, read from the environment once at cold start.

The domain never reads ``os.environ``: handlers build a :class:`Settings` with
:func:`from_env` and hand it (or the values in it) to the services.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

# Environment variable names: the CDK stack (infra/) sets exactly these.
ENV_TABLE_NAME = "SUNDIAL_TABLE_NAME"
ENV_BUCKET_SHARDS = "SUNDIAL_BUCKET_SHARDS"
ENV_LIST_SHARDS = "SUNDIAL_LIST_SHARDS"
ENV_RUN_RETENTION_DAYS = "SUNDIAL_RUN_RETENTION_DAYS"
ENV_DEFAULT_TENANT = "SUNDIAL_DEFAULT_TENANT"


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


def from_env(environ: dict[str, str] | None = None) -> Settings:
    env = os.environ if environ is None else environ
    base = Settings()
    return Settings(
        table_name=env.get(ENV_TABLE_NAME, base.table_name),
        bucket_shards=int(env.get(ENV_BUCKET_SHARDS, base.bucket_shards)),
        list_shards=int(env.get(ENV_LIST_SHARDS, base.list_shards)),
        run_retention_days=int(env.get(ENV_RUN_RETENTION_DAYS, base.run_retention_days)),
        default_tenant=env.get(ENV_DEFAULT_TENANT, base.default_tenant),
    )
