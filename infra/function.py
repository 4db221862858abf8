"""The Lambda baseline every Sundial function gets: its own role, log group and tracing.

* **Its own role**, with no managed policies: the caller hands in the exact statements the
  function needs; the construct adds writing to its own log group. The function gets the role
  through ``without_policy_updates()``, so nothing (tracing, grants) can widen the role behind
  our back -- every permission is one of the statements you can read here.
* **Its own log group**, created explicitly with a retention (no implicit, never-expiring
  ``/aws/lambda/...`` group).
* **X-Ray tracing** in the deployment's mode (``sundial:tracing``: PassThrough by default, which
  traces an invocation only when its upstream sampled it; Active on request; infra/settings.py,
  ``TRACING``). Its two write actions are in a separate policy, in either mode (PassThrough still
  writes the traces of sampled invocations), because X-Ray only accepts ``Resource: "*"``; the
  cdk-nag acknowledgment is scoped to that policy alone.
* **A policy of its own for each concern that needs a cdk-nag acknowledgment**
  (:meth:`ServiceFunction.add_policy`), so the acknowledgment covers those statements only.
* **Queue consumption** (:meth:`ServiceFunction.consume`): the event source and the three
  actions Lambda's poller needs on that one queue, added together; in provisioned mode when asked.
* **Reserved concurrency** when asked (``reserved_concurrency``): capacity set apart for the
  function alone, which is also the most it runs at once.
* **Its recursive loop detection stated** (``allow_recursion``): ``Allow`` for a function that a
  message can invoke again through the queues it sends to (``shared.topology.looping``), else
  Lambda's default, ``Terminate``, written out.
* **Provisioned concurrency** when asked (:meth:`ServiceFunction.provision`): an alias of the
  current version holds it, and the event sources added after it invoke the alias.
* The Powertools service name and metrics namespace, and the function's settings
  (:func:`function_environment`: ``shared.settings.environment.Settings.to_env``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from shared.settings import environment as runtime_settings

from . import names
from .bundling import LambdaBundle
from .nag import acknowledge
from .settings import DeploymentSettings

XRAY_WRITE_ACTIONS = ("xray:PutTraceSegments", "xray:PutTelemetryRecords")
CONSUME_ACTIONS = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")
"""What Lambda's SQS poller does with the function's role (the actions of AWS's
AWSLambdaSQSQueueExecutionRole); sqs:DeleteMessage covers DeleteMessageBatch."""


def function_environment(settings: DeploymentSettings, **resources: Any) -> dict[str, str]:
    """A function's settings as ``shared.settings.environment.from_env`` reads them: the deployment's tuning
    (shards, retention, the default tenant, the pipeline's clock) for every function, and the
    ``resources`` (fields of ``shared.settings.environment.Settings``: table, queues, bucket...) it uses."""
    return runtime_settings.Settings.of(settings, **resources).to_env()


class ServiceFunction(Construct):
    """One Lambda function with exactly the permissions it is given, and nothing else."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        bundle: LambdaBundle,
        settings: DeploymentSettings,
        handler: str,
        description: str,
        statements: Sequence[iam.PolicyStatement],
        environment: Mapping[str, str],
        memory_size: int,
        timeout: Duration,
        reserved_concurrency: int | None = None,
        allow_recursion: bool = False,
    ) -> None:
        super().__init__(scope, construct_id)
        self.log_group = logs.LogGroup(
            self,
            "Logs",
            retention=settings.log_retention,
            removal_policy=settings.cdk_removal_policy,
        )
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"{description} (this function only)",
        )
        self.policy = self._policy(statements)
        self.tracing_policy = self._tracing_policy()
        self.function = self._function(
            bundle=bundle,
            settings=settings,
            handler=handler,
            description=description,
            environment=environment,
            memory_size=memory_size,
            timeout=timeout,
            reserved_concurrency=reserved_concurrency,
            allow_recursion=allow_recursion,
        )
        # The permissions exist before the function does (its first invocations need them).
        self.function.node.add_dependency(self.policy, self.tracing_policy)
        self.invoked: lambda_.IFunction = self.function
        """What the event sources invoke: the function, or the alias holding its provisioned
        concurrency (:meth:`provision`)."""
        self.alias: lambda_.Alias | None = None
        self._consumed: list[sqs.IQueue] = []

    def _policy(self, statements: Sequence[iam.PolicyStatement]) -> iam.Policy:
        """Writing to its own log group, and the ``statements`` it was given."""
        return iam.Policy(
            self,
            "Policy",
            roles=[self.role],
            statements=[
                iam.PolicyStatement(
                    actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                    resources=[self.log_group.log_group_arn],
                ),
                *statements,
            ],
        )

    def _tracing_policy(self) -> iam.Policy:
        """X-Ray's two write actions, on ``"*"`` (acknowledged on this policy alone)."""
        policy = iam.Policy(
            self,
            "TracingPolicy",
            roles=[self.role],
            statements=[iam.PolicyStatement(actions=list(XRAY_WRITE_ACTIONS), resources=["*"])],
        )
        acknowledge(
            policy,
            "AwsSolutions-IAM5[Resource::*]",
            "X-Ray trace segments are not resources: xray:PutTraceSegments and "
            "xray:PutTelemetryRecords support no resource-level permissions and require "
            '"*" (see the Service Authorization Reference for AWS X-Ray). This policy '
            "holds only those two write actions.",
        )
        return policy

    def _function(
        self,
        *,
        bundle: LambdaBundle,
        settings: DeploymentSettings,
        handler: str,
        description: str,
        environment: Mapping[str, str],
        memory_size: int,
        timeout: Duration,
        reserved_concurrency: int | None,
        allow_recursion: bool,
    ) -> lambda_.Function:
        """The function itself, on the bundle's code and layer, with the role as it is."""
        return lambda_.Function(
            self,
            "Function",
            description=description,
            runtime=bundle.runtime,
            architecture=bundle.architecture,
            code=bundle.code,
            layers=[bundle.layer],
            handler=handler,
            role=self.role.without_policy_updates(),
            memory_size=memory_size,
            timeout=timeout,
            reserved_concurrent_executions=reserved_concurrency,
            # Lambda stops a chain of invocations through SQS after about 16 unless the function
            # allows recursion ("Use Lambda recursive loop detection to prevent infinite loops").
            recursive_loop=lambda_.RecursiveLoop.ALLOW if allow_recursion else lambda_.RecursiveLoop.TERMINATE,
            tracing=settings.lambda_tracing,
            log_group=self.log_group,
            environment={
                "POWERTOOLS_SERVICE_NAME": names.POWERTOOLS_SERVICE_NAME,
                "POWERTOOLS_METRICS_NAMESPACE": names.POWERTOOLS_METRICS_NAMESPACE,
                **environment,
            },
        )

    def provision(self, concurrency: int) -> lambda_.Alias:
        """Keep ``concurrency`` environments initialized: an alias of the current version (a new
        version is published whenever the function changes) with that provisioned concurrency,
        which the event sources added after this invoke. Invocations beyond it run on demand."""
        if self.alias is not None or self.consumed:
            raise ValueError("provision a function's concurrency once, before its event sources")
        if concurrency < 1:
            raise ValueError(f"provisioned concurrency must be at least 1, got {concurrency}")
        self.alias = lambda_.Alias(
            self,
            names.LIVE_ALIAS_ID,
            alias_name=names.LIVE_ALIAS_NAME,
            version=self.function.current_version,
            provisioned_concurrent_executions=concurrency,
        )
        # An event source on the alias is created once the role can receive from its queue (the
        # version already waits for the policies; this says so where it matters).
        self.alias.node.add_dependency(self.policy, self.tracing_policy)
        self.invoked = self.alias
        return self.alias

    def add_policy(
        self,
        construct_id: str,
        statements: Sequence[iam.PolicyStatement],
        *,
        acknowledgments: Mapping[str, str],
    ) -> iam.Policy:
        """Statements in a policy of their own, with the cdk-nag findings they raise
        (finding id -> reason) acknowledged on that policy alone."""
        policy = iam.Policy(self, construct_id, roles=[self.role], statements=list(statements))
        for rule, reason in acknowledgments.items():
            acknowledge(policy, rule, reason)
        self.function.node.add_dependency(policy)
        return policy

    @property
    def consumed(self) -> bool:
        return bool(self._consumed)

    def consume(
        self,
        queue: sqs.IQueue,
        *,
        batch_size: int,
        batching_window_s: int,
        max_concurrency: int | None,
        pollers: lambda_.ProvisionedPollerConfig | None = None,
    ) -> None:
        """An SQS event source with partial batch failures, and the poller's permissions on
        ``queue`` alone (the role takes no grants: ``SqsEventSource``'s own would be dropped).
        ``pollers``: provisioned mode, which Lambda does not combine with a maximum concurrency
        (the two are its mutually exclusive ways to scale an SQS event source)."""
        if pollers is not None and max_concurrency is not None:
            raise ValueError("an SQS event source scales by provisioned pollers or by a maximum concurrency, not both")
        self.policy.add_statements(iam.PolicyStatement(actions=list(CONSUME_ACTIONS), resources=[queue.queue_arn]))
        self.invoked.add_event_source(
            event_sources.SqsEventSource(
                queue,
                batch_size=batch_size,
                max_batching_window=Duration.seconds(batching_window_s),
                max_concurrency=max_concurrency,
                provisioned_poller_config=pollers,
                report_batch_item_failures=True,
            )
        )
        self._consumed.append(queue)
