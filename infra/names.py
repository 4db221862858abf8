"""Every name the CDK app uses, in one place: the stack, construct ids, handlers, context keys.

Construct ids are part of the CloudFormation logical ids: renaming one replaces the resource
(for the table, that means a new, empty table), so change them deliberately.
"""

from __future__ import annotations

STACK_NAME = "Sundial"
SHIPPED_SOURCES = "_lambda"
"""The cdk wheel's package data (``sundial_cdk/_lambda/``): the functions' sources and the layer's
requirements (release/dist.py writes it, infra/bundling.py reads it)."""
STACK_DESCRIPTION = "Sundial: serverless task scheduler (DynamoDB time buckets, SQS delay queues, Lambda)."
PROJECT_TAG = ("project", "sundial")

# Powertools: the same service name and metrics namespace as shared/observability.py
# (tests/infrastructure checks they agree).
POWERTOOLS_SERVICE_NAME = "sundial"
POWERTOOLS_METRICS_NAMESPACE = "Sundial"

# Construct ids: the construct in the repository's stack.
CONSTRUCT_ID = "Default"
"""The Sundial construct's id in the repository's stack (infra/stack.py): CDK leaves ``Default``
out of logical IDs, so the resources keep those they had before the construct held them."""

# Construct ids: the construct's parts.
BUNDLE_ID = "Bundle"
STORAGE_ID = "Storage"
SIGNING_ID = "Signing"
API_KEYS_ID = "Auth"
API_ID = "Api"
PIPELINE_ID = "Pipeline"
JOBS_ID = "Jobs"
MONITORING_ID = "Monitoring"
CANARY_ID = "Canary"

# Construct ids: inside the constructs.
DEPENDENCIES_LAYER_ID = "Dependencies"
TABLE_ID = "Table"
IDEMPOTENCY_TABLE_ID = "IdempotencyTable"
API_FUNCTION_ID = "Handler"
REST_API_ID = "RestApi"
ACCESS_LOGS_ID = "AccessLogs"
AUTHORIZER_FUNCTION_ID = "Authorizer"
REQUEST_AUTHORIZER_ID = "RequestAuthorizer"
QUEUES_ID = "Queues"
"""Parent of the pipeline's queues; each queue's id is its name in shared/topology.py."""
TICK_RULE_ID = "EveryMinute"
TARGETS_POLICY_ID = "TargetsPolicy"
LIVE_ALIAS_ID = "Live"
LIVE_ALIAS_NAME = "live"
"""The alias of a function's current version that holds its provisioned concurrency (the trigger's,
when ``sundial:triggerProvisionedConcurrency`` is above 0); its event sources invoke it."""
DASHBOARD_ID = "Dashboard"
ALARM_TOPIC_ID = "AlarmTopic"
DLQ_DEPTH_ALARM_ID = "DeadLetters"
JOB_ENDS_DLQ_ALARM_ID = "JobEndsDeadLetters"
STRANDED_ALARM_ID = "Stranded"
LATENESS_ALARM_ID = "Lateness"
API_5XX_ALARM_ID = "Api5xx"

# Functions: the names shared/topology.py uses (ConsumerSpec.function, senders).
API = "api"
TICK = "tick"
SCANNER = "scanner"
TRIGGER = "trigger"
HIGH_PRIORITY_TRIGGER = "trigger_high"
"""The trigger's code again (its handler module re-exports the trigger's), on the high-priority
delay queue, with a capacity of its own."""
RECOVER = "recover"
"""The trigger's code a third time, on the stranded queue (shared/topology.py)."""
CANARY = "canary"
"""The canary's function (infra/canary.py)."""


def handler(function: str) -> str:
    """``functions/<function>/handler.py``'s ``handler``, as Lambda names it."""
    return f"functions.{function}.handler.handler"


def function_id(function: str) -> str:
    """The construct id of a pipeline function: ``scanner`` -> ``Scanner``, ``trigger_high`` ->
    ``TriggerHigh``."""
    return "".join(part.capitalize() for part in function.split("_"))


# Lambda handlers (module path inside the code asset, then the attribute).
API_HANDLER = handler("api")
AUTHORIZER_HANDLER = handler("authorizer")
SCHEDULER_URL_HANDLER = handler("scheduler")
"""The EventBridge Scheduler API behind a Lambda function URL (``sundial:schedulerFunctionUrl``):
the API function's code, a handler of its own for the function URL's events
(functions/scheduler/handler.py)."""
SCHEDULER_URL_ID = "SchedulerUrl"
SCHEDULER_URL_FUNCTION_ID = "Function"

# API Gateway: every path under /v1 goes to the API function; the stage is "prod", so a
# deployment's URL is https://<id>.execute-api.<region>.amazonaws.com/prod/v1/...
# and the function sees the same /v1/... paths as the local runtime does.
API_STAGE_NAME = "prod"
API_VERSION_PATH = "v1"
API_PUBLIC_PATHS = ("openapi.json", "docs")
"""The paths under /v1 anyone may read (the OpenAPI document and Swagger UI): no authorizer."""
CONSOLE_PATH = "console"
"""The web console's files: ``/console`` and everything under it, public (the console calls the API
with the key its user signs in with)."""
SCHEDULER_PATH = "scheduler"
"""The EventBridge Scheduler API's resource: ``/scheduler/{proxy+}``, signed with SigV4 and checked
by the API function (docs/eventbridge.md)."""

# Stack outputs.
OUTPUT_API_URL = "ApiUrl"
OUTPUT_TABLE_NAME = "TableName"
OUTPUT_IDEMPOTENCY_TABLE_NAME = "IdempotencyTableName"
OUTPUT_DEAD_LETTER_QUEUE_URL = "DeadLetterQueueUrl"
OUTPUT_TRIGGER_ROLE_ARN = "TriggerRoleArn"
OUTPUT_HIGH_PRIORITY_TRIGGER_ROLE_ARN = "HighPriorityTriggerRoleArn"
OUTPUT_RECOVER_ROLE_ARN = "RecoverRoleArn"
OUTPUT_DASHBOARD_NAME = "DashboardName"
"""Only when the stack has the dashboard (``sundial:dashboard``)."""
OUTPUT_SCHEDULER_FUNCTION_URL = "SchedulerFunctionUrl"
"""Unless ``sundial:schedulerFunctionUrl`` is false: the EventBridge Scheduler API's function URL."""

# CDK context keys (cdk.json "context", or `cdk synth -c key=value`): "sundial:" + a setting's name in
# camel case, each a field of shared.settings.context.DeploymentSettings (shared.settings.context.context_key).
