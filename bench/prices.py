"""Public us-east-1 prices (docs/design.md, section 4; docs/scale.md, "Cost at scale", gives
each one's source). A pure table, no imports: `make bench` (bench/capacity.py) and the model
(sim/cost.py) price their counts with the same figures."""

from __future__ import annotations

# DynamoDB
ON_DEMAND_PER_MILLION_WRU = 0.625
ON_DEMAND_PER_MILLION_RRU = 0.125
PROVISIONED_WCU_HOUR = 0.00065
PROVISIONED_RCU_HOUR = 0.00013
PROVISIONED_UTILISATION = 0.7
"""The utilisation target provisioned capacity is priced at: 70 % of what is held is used."""
STORAGE_PER_GB_MONTH = 0.25
STORAGE_IA_PER_GB_MONTH = 0.10

# SQS (standard queues)
SQS_PER_MILLION = 0.40

# Lambda (arm64)
LAMBDA_PER_MILLION = 0.20
LAMBDA_GB_SECOND = 0.0000133334
LAMBDA_PROVISIONED_GB_SECOND = 0.0000033334
"""Provisioned concurrency: per GB-second held, used or not (billed in 5-minute steps)."""
LAMBDA_PROVISIONED_DURATION_GB_SECOND = 0.0000077778
"""Duration of invocations that run on provisioned concurrency."""
LAMBDA_PROVISIONED_BILLING_S = 300
EVENT_POLLER_UNIT_HOUR_SQS = 0.00925
"""Provisioned mode of an SQS event source mapping, per Event Poller Unit-hour."""

# CloudWatch Logs
LOGS_INGESTION_PER_GB = 0.50

# For comparison
EVENTBRIDGE_SCHEDULER_PER_MILLION = 1.00


def provisioned_per_million_writes() -> float:
    """A million writes on provisioned capacity held at the utilisation target."""
    return PROVISIONED_WCU_HOUR / (3600 * PROVISIONED_UTILISATION) * 1_000_000


def provisioned_per_million_reads() -> float:
    return PROVISIONED_RCU_HOUR / (3600 * PROVISIONED_UTILISATION) * 1_000_000
