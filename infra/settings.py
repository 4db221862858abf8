"""Deployment settings in CDK terms.

The settings themselves (their defaults, bounds and the rules between them) are
``shared.settings.context.DeploymentSettings``: the functions cannot import aws_cdk, and the local
runtime and the tests check the same rules. Here they are read from the CDK context and their
validated values mapped to CDK types; the constructs take a :class:`DeploymentSettings` and never
read the context themselves.
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Node

from shared.settings import context
from shared.settings.context import MIN_LEAD_MS, TICK_PERIOD_S
from shared.settings.model import SettingsError
from shared.settings.tuning import MAX_DELAY_QUEUES, MAX_LEAD_MS

__all__ = [
    "MAX_DELAY_QUEUES",
    "MAX_LEAD_MS",
    "MIN_LEAD_MS",
    "TICK_PERIOD_S",
    "DeploymentSettings",
    "KeywordSettings",
    "SettingsError",
    "from_context",
]

# Every retention shared.settings.context.LOG_RETENTION_DAYS accepts (tests/infrastructure checks they agree).
RETENTION: dict[int, logs.RetentionDays] = {
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
ARCHITECTURES: dict[str, lambda_.Architecture] = {
    "arm64": lambda_.Architecture.ARM_64,
    "x86_64": lambda_.Architecture.X86_64,
}
REMOVAL_POLICIES: dict[str, RemovalPolicy] = {
    "retain": RemovalPolicy.RETAIN,
    "destroy": RemovalPolicy.DESTROY,
}
# Lambda's TracingConfig Mode ("TracingConfig", AWS Lambda API reference,
# https://docs.aws.amazon.com/lambda/latest/dg/API_TracingConfig.html: Active | PassThrough).
# PassThrough: "Lambda will only trace the request from an upstream service if it contains a
# tracing header with sampled=1" (aws-cdk-lib's aws_lambda.Tracing.PASS_THROUGH,
# https://docs.aws.amazon.com/cdk/api/v2/docs/aws-cdk-lib.aws_lambda.Tracing.html), and it still
# "propagates the tracing context to downstream services" ("Visualize Lambda function invocations
# using AWS X-Ray", https://docs.aws.amazon.com/lambda/latest/dg/services-xray.html). Active:
# Lambda samples the invocations that come without a decision itself, by X-Ray's default rule, "the
# first request each second, and five percent of any additional requests" ("Configuring sampling
# rules", https://docs.aws.amazon.com/xray/latest/devguide/xray-console-sampling.html): the tick
# and the 16 scanners, each invoked about once a minute, are nearly all traced ($5 per million).
TRACING: dict[str, lambda_.Tracing] = {
    "passthrough": lambda_.Tracing.PASS_THROUGH,
    "active": lambda_.Tracing.ACTIVE,
}


class DeploymentSettings(context.DeploymentSettings):
    """The validated settings, with their CDK forms."""

    @property
    def cdk_removal_policy(self) -> RemovalPolicy:
        return REMOVAL_POLICIES[self.removal_policy]

    @property
    def lambda_architecture(self) -> lambda_.Architecture:
        return ARCHITECTURES[self.architecture]

    @property
    def log_retention(self) -> logs.RetentionDays:
        return RETENTION[self.log_retention_days]

    @property
    def lambda_tracing(self) -> lambda_.Tracing:
        """Every function's X-Ray tracing mode (``sundial:tracing``)."""
        return TRACING[self.tracing]

    @property
    def table_warm_throughput(self) -> dynamodb.WarmThroughput | None:
        """The task table's warm throughput; None when neither value is set (the table's own)."""
        if not (self.table_warm_reads or self.table_warm_writes):
            return None
        return dynamodb.WarmThroughput(
            read_units_per_second=self.table_warm_reads or None,
            write_units_per_second=self.table_warm_writes or None,
        )

    @property
    def trigger_poller_config(self) -> lambda_.ProvisionedPollerConfig | None:
        """Provisioned mode for each delay queue's event source; None: standard mode."""
        if self.provisioned_pollers is None:
            return None
        minimum, maximum = self.provisioned_pollers
        return lambda_.ProvisionedPollerConfig(minimum_pollers=minimum, maximum_pollers=maximum)


class KeywordSettings(DeploymentSettings):
    """The settings as the :class:`~.sundial.Sundial` construct's keyword arguments take them: the
    same fields, defaults and rules, with each setting named as its argument in a
    :class:`SettingsError` (``bucket_shards``, where the context's errors say
    ``sundial:bucketShards``)."""

    @classmethod
    def setting_name(cls, field: str) -> str:
        return field


def from_context(node: Node) -> DeploymentSettings:
    """The settings the app's context states (cdk.json, ``-c key=value``, overrides); a
    :class:`SettingsError` naming each key that is wrong and what it accepts."""
    return DeploymentSettings.from_context(node.get_all_context())
