"""Public us-east-1 prices, each with its page (``SOURCES``). A pure table, no imports: `make
bench` (bench/capacity.py, bench/bill.py) and the model (sim/cost.py) price their counts with the
same figures. Free tiers are left out: the bill is what a deployment costs in an account whose
free tier other work already uses."""

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

LOGS_STORAGE_PER_GB_MONTH = 0.03

# API Gateway
API_REST_PER_MILLION = 3.50
"""REST APIs, the first 333 million requests of a month."""
API_HTTP_PER_MILLION = 1.00
"""HTTP APIs, the first 300 million requests of a month (each 512 KB a request)."""

# CloudWatch
ALARM_MONTH = 0.10
"""A standard-resolution alarm, per metric it evaluates."""
DASHBOARD_MONTH = 3.00
CUSTOM_METRIC_MONTH = 0.30
"""A custom metric (name and dimensions), the first 10,000; prorated by the hour it is sent in."""

# X-Ray
XRAY_PER_MILLION_TRACES = 5.00
"""Traces recorded."""

# KMS and Secrets Manager
KMS_KEY_MONTH = 1.00
"""A customer-managed key (rotation included for the first two rotations)."""
KMS_PER_MILLION_REQUESTS = 3.00
SECRET_MONTH = 0.40

# For comparison
EVENTBRIDGE_SCHEDULER_PER_MILLION = 1.00
"""Invocations, after 14 million free a month; creating and keeping a schedule is free."""

SOURCES = {
    "DynamoDB on-demand": "https://aws.amazon.com/dynamodb/pricing/on-demand/",
    "DynamoDB provisioned": "https://aws.amazon.com/dynamodb/pricing/provisioned/",
    "SQS": "https://aws.amazon.com/sqs/pricing/",
    "Lambda": "https://aws.amazon.com/lambda/pricing/",
    "API Gateway": "https://aws.amazon.com/api-gateway/pricing/",
    "CloudWatch (alarms, dashboards, metrics, logs)": "https://aws.amazon.com/cloudwatch/pricing/",
    "X-Ray": "https://aws.amazon.com/xray/pricing/",
    "KMS": "https://aws.amazon.com/kms/pricing/",
    "Secrets Manager": "https://aws.amazon.com/secrets-manager/pricing/",
    "EventBridge Scheduler": "https://aws.amazon.com/eventbridge/pricing/",
}
"""Where each price above was read (us-east-1, November 2026)."""


def provisioned_per_million_writes() -> float:
    """A million writes on provisioned capacity held at the utilisation target."""
    return PROVISIONED_WCU_HOUR / (3600 * PROVISIONED_UTILISATION) * 1_000_000


def provisioned_per_million_reads() -> float:
    return PROVISIONED_RCU_HOUR / (3600 * PROVISIONED_UTILISATION) * 1_000_000
