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

# Construct ids: inside the constructs.
DEPENDENCIES_LAYER_ID = "Dependencies"
TABLE_ID = "Table"
API_FUNCTION_ID = "Handler"
REST_API_ID = "RestApi"
ACCESS_LOGS_ID = "AccessLogs"

# Lambda handlers (module path inside the code asset, then the attribute).
API_HANDLER = "functions.api.handler.handler"

# API Gateway: every path under /v1 goes to the API function; the stage is "prod", so a
# deployment's URL is https://<id>.execute-api.<region>.amazonaws.com/prod/v1/...
# and the function sees the same /v1/... paths as the local runtime does.
API_STAGE_NAME = "prod"
API_VERSION_PATH = "v1"

# Stack outputs.
OUTPUT_API_URL = "ApiUrl"
OUTPUT_TABLE_NAME = "TableName"

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
