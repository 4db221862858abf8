"""Every name the CDK app uses, in one place: the stack, construct ids, handlers, context keys.

Construct ids are part of the CloudFormation logical ids: renaming one replaces the resource
(for the table, that means a new, empty table), so change them deliberately.
"""

from __future__ import annotations

STACK_NAME = "Sundial"
STACK_DESCRIPTION = "Sundial: serverless task scheduler (DynamoDB time buckets, SQS delay queues, Lambda)."
PROJECT_TAG = ("project", "sundial")

# Powertools: the same service name and metrics namespace as shared/observability.py
# (tests/infrastructure checks they agree).
POWERTOOLS_SERVICE_NAME = "sundial"
POWERTOOLS_METRICS_NAMESPACE = "Sundial"

# Construct ids: stack level.
BUNDLE_ID = "Bundle"
STORAGE_ID = "Storage"
API_ID = "Api"
PIPELINE_ID = "Pipeline"
JOBS_ID = "Jobs"
MONITORING_ID = "Monitoring"

# Construct ids: inside the constructs.
DEPENDENCIES_LAYER_ID = "Dependencies"
TABLE_ID = "Table"
IDEMPOTENCY_TABLE_ID = "IdempotencyTable"
API_FUNCTION_ID = "Handler"
REST_API_ID = "RestApi"
ACCESS_LOGS_ID = "AccessLogs"
QUEUES_ID = "Queues"
"""Parent of the pipeline's queues; each queue's id is its name in shared/topology.py."""
TICK_RULE_ID = "EveryMinute"
TARGETS_POLICY_ID = "TargetsPolicy"
DASHBOARD_ID = "Dashboard"
ALARM_TOPIC_ID = "AlarmTopic"
DLQ_DEPTH_ALARM_ID = "DeadLetters"
LATENESS_ALARM_ID = "Lateness"

# Pipeline functions: the names shared/topology.py's ConsumerSpec.function uses.
TICK = "tick"
SCANNER = "scanner"
TRIGGER = "trigger"


def handler(function: str) -> str:
    """``functions/<function>/handler.py``'s ``handler``, as Lambda names it."""
    return f"functions.{function}.handler.handler"


def function_id(function: str) -> str:
    """The construct id of a pipeline function: ``scanner`` -> ``Scanner``."""
    return function.capitalize()


# Lambda handlers (module path inside the code asset, then the attribute).
API_HANDLER = handler("api")

# API Gateway: every path under /v1 goes to the API function; the stage is "prod", so a
# deployment's URL is https://<id>.execute-api.<region>.amazonaws.com/prod/v1/...
# and the function sees the same /v1/... paths as the local runtime does.
API_STAGE_NAME = "prod"
API_VERSION_PATH = "v1"

# Stack outputs.
OUTPUT_API_URL = "ApiUrl"
OUTPUT_TABLE_NAME = "TableName"
OUTPUT_IDEMPOTENCY_TABLE_NAME = "IdempotencyTableName"
OUTPUT_DEAD_LETTER_QUEUE_URL = "DeadLetterQueueUrl"
OUTPUT_TRIGGER_ROLE_ARN = "TriggerRoleArn"
OUTPUT_DASHBOARD_NAME = "DashboardName"

# CDK context keys (cdk.json "context", or `cdk synth -c key=value`).
CTX_BUCKET_SHARDS = "sundial:bucketShards"
CTX_LIST_SHARDS = "sundial:listShards"
CTX_RUN_RETENTION_DAYS = "sundial:runRetentionDays"
CTX_DEFAULT_TENANT = "sundial:defaultTenant"
CTX_REMOVAL_POLICY = "sundial:removalPolicy"
CTX_ARCHITECTURE = "sundial:architecture"
CTX_LOG_RETENTION_DAYS = "sundial:logRetentionDays"
CTX_API_THROTTLE_RATE = "sundial:apiThrottleRate"
CTX_API_THROTTLE_BURST = "sundial:apiThrottleBurst"
CTX_API_GATEWAY_CLOUDWATCH_ROLE = "sundial:apiGatewayCloudWatchRole"
CTX_DELAY_QUEUES = "sundial:delayQueues"
CTX_SCANNER_MAX_CONCURRENCY = "sundial:scannerMaxConcurrency"
CTX_TRIGGER_MEMORY_MB = "sundial:triggerMemoryMb"
CTX_JOB_SHARD_CONCURRENCY = "sundial:jobShardConcurrency"
CTX_LOOK_AHEAD_MS = "sundial:lookAheadMs"
CTX_GUARD_MS = "sundial:guardMs"
CTX_LEAD_MS = "sundial:leadMs"
CTX_MISFIRE_TOLERANCE_MS = "sundial:misfireToleranceMs"
CTX_LEASE_MS = "sundial:leaseMs"
CTX_LATENESS_ALARM_MS = "sundial:latenessAlarmMs"
CTX_ALARM_TOPIC_ARN = "sundial:alarmTopicArn"
