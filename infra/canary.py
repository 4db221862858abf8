"""The canary (shared/domain/canary.py): a task due every minute that the deployment fires through
its real path -- tick, scanner, delay queue, trigger -- at the canary function, which puts how late
it came as ``CanaryLatenessMs``; two alarms tell when a minute is late by more than a second or
when minutes go missing. The canary function is also the custom resource that registers the task
on deploy and cancels it when the stack goes (a Lambda-backed custom resource: CloudFormation
invokes the function and waits for its answer, "AWS Lambda-backed custom resources"), answering
in every case (shared/adapters/custom_resource.py), within :data:`SERVICE_TIMEOUT` at worst, with no
retry of its invocations.

Off by default (``sundial:canary``); its cost, about $0.85 a month with its two alarms, is in
docs/deploy.md, section 15. Its alarms come with the stack's (``sundial:alarms``, or an alarm
topic): without them the canary still fires and puts its metric, which no alarm watches."""

from __future__ import annotations

from aws_cdk import CustomResource, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from constructs import Construct

from shared import topology
from shared.domain.canary import LATE_MS
from shared.observability import CANARY_LATENESS_METRIC

from . import names
from .bundling import LambdaBundle
from .function import ServiceFunction, function_environment
from .pipeline import Queues
from .settings import DeploymentSettings
from .storage import Storage

CANARY_TABLE_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem")
"""Register the task (its tenant's count, its item) and cancel it (read, conditional update); read
and write the item naming the resource's canary (``CANARY#<key>``)."""
CANARY_FORGET_ACTIONS = ("dynamodb:DeleteItem",)
"""The item naming the resource's canary goes with the resource: on its own partitions only
(``dynamodb:LeadingKeys``, "Using IAM policy conditions for fine-grained access control",
DynamoDB developer guide)."""
CANARY_PARTITIONS = ["CANARY#*"]
SERVICE_TIMEOUT = Duration.seconds(300)
"""How long CloudFormation waits for the custom resource's answer before it fails the resource
(``ServiceTimeout``, 1 to 3,600 s, 3,600 by default: "AWS::CloudFormation::CustomResource",
https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-cloudformation-customresource.html).
The function answers in every case within its own 30 s (shared/adapters/custom_resource.py): this bounds
only the invocation that never ran (throttled, or lost) and the answer that could not be PUT, which
without it held a stack an hour, and its rollback another."""
MAX_EVENT_AGE = SERVICE_TIMEOUT
"""An invocation Lambda could not start within CloudFormation's wait is dropped: its answer would
come after CloudFormation gave up, and a create run then could register a canary for a resource
already rolled back."""
MISSING_MINUTES = 3
"""The missing-canary alarm fires when this many minutes in a row had no canary fire (the first
minutes after a deploy have none yet: one or two are no alarm)."""


class Canary(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: DeploymentSettings,
        bundle: LambdaBundle,
        storage: Storage,
        queues: Queues,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.function = ServiceFunction(
            self,
            "Function",
            bundle=bundle,
            settings=settings,
            handler=names.handler(names.CANARY),
            description="Sundial canary: registers the canary task on deploy, and times each of its fires",
            statements=[
                *storage.access_statements(actions=CANARY_TABLE_ACTIONS),
                iam.PolicyStatement(
                    actions=list(CANARY_FORGET_ACTIONS),
                    resources=[storage.table.table_arn],
                    conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": CANARY_PARTITIONS}},
                ),
                # its first occurrence falls within the writers' window: it stages it
                queues.sends_of(names.CANARY),
            ],
            environment=function_environment(
                settings,
                table_name=storage.table.table_name,
                **queues.staging_resources(),
                own_prefix=f"{stack.stack_name}-",
                account_id=stack.account,
            ),
            memory_size=128,
            timeout=Duration.seconds(30),
            allow_recursion=names.CANARY in topology.looping(settings.delay_queues),
        )
        # CloudFormation invokes the service token asynchronously, and Lambda retries a failed
        # asynchronous invocation twice by default ("How Lambda handles errors and retries with
        # asynchronous invocation",
        # https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html): each
        # retry of a create would be a request of its own. None: the function answers every
        # request itself, failures included. (The canary task's own calls, asynchronous too, are
        # not retried by Lambda either: a failed fire is what the alarms are for.)
        self.function.function.configure_async_invoke(retry_attempts=0, max_event_age=MAX_EVENT_AGE)
        self.task = CustomResource(
            self,
            "Task",
            service_token=self.function.function.function_arn,
            service_timeout=SERVICE_TIMEOUT,
            resource_type="Custom::SundialCanary",
            properties={"FunctionArn": self.function.function.function_arn},
        )
        self.task.node.add_dependency(self.function)
        self.alarms: tuple[cloudwatch.Alarm, ...] = self._alarms(stack.stack_name) if settings.alarmed else ()
        """A late minute and missing minutes; none when the stack has no alarms."""

    def _alarms(self, prefix: str) -> tuple[cloudwatch.Alarm, ...]:
        lateness = cloudwatch.Metric(
            namespace=names.POWERTOOLS_METRICS_NAMESPACE,
            metric_name=CANARY_LATENESS_METRIC,
            dimensions_map={"service": names.POWERTOOLS_SERVICE_NAME},
            period=Duration.minutes(1),
        )
        late = cloudwatch.Alarm(
            self,
            "Late",
            alarm_name=f"{prefix}-canary-late",
            alarm_description=(
                "The canary, due every minute, fired more than a second late: the firing path is "
                "backed up or throttled (docs/deploy.md, The canary)."
            ),
            metric=lateness.with_(statistic="Maximum"),
            threshold=LATE_MS,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        missing = cloudwatch.Alarm(
            self,
            "Missing",
            alarm_name=f"{prefix}-canary-missing",
            alarm_description=(
                f"The canary, due every minute, did not fire for {MISSING_MINUTES} minutes: the tick, "
                "the scanners, the delay queues or the trigger stopped (docs/deploy.md, The canary)."
            ),
            metric=lateness.with_(statistic="SampleCount"),
            threshold=1,
            comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
            evaluation_periods=MISSING_MINUTES,
            treat_missing_data=cloudwatch.TreatMissingData.BREACHING,
        )
        return (late, missing)
