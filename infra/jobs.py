"""The state machine of sharded batch jobs (docs/jobs.md, section 2).

::

    Pre (job step "pre")               -> {"levels": [{"level": L, "shard_count": N, "shards": [0..N-1]}, ...]}
    Levels: Map over $.levels, MaxConcurrency 1           (levels strictly in order)
      Shards: Map over the level's shards, MaxConcurrency shard_concurrency
        Shard (job step "shard")       -> discarded (the result goes to S3, progress to the job item)
    Post (job step "post")             -> the job's result
    Succeed
    Catch on Pre, Levels (which fails when any shard does) and Post -> Failed (job step "fail") -> Fail

Only references travel through the execution: the job id (always read from the execution's
input, ``$$.Execution.Input.job_id``), a level, a shard number and the level's shard count. Pre
answers each level's shard numbers as a list because an inline Map iterates over a list; a
thousand small ints are a few kilobytes.

Every Lambda state retries Lambda's own failures -- throttling (``Lambda.TooManyRequestsException``),
its service errors, ``Lambda.Unknown`` and the SDK's client errors -- with backoff and jitter
(``SERVICE_ERROR_RETRIES``), and the step's ``ProcessorRetryable`` error (the step raises it for
408/429/5xx/timeouts from the processor, ``PROCESSOR_RETRIES``) ("Handling errors in Step Functions
workflows"; the Lambda service exceptions to retry are the ones the Step Functions developer guide
lists for the Lambda integration). Any other error fails the job through the ``fail`` step, which is
retried the same way and whose own failure still ends the execution failed. A job can then never
stay ``running`` behind an execution that ended: an EventBridge rule takes every execution of this
state machine that ends FAILED, TIMED_OUT or ABORTED to the job function's ``fail`` step
(:class:`ExecutionEnds`), which records the job failed unless it already ended (a cancel's ABORTED
finds it cancelled).

The execution's history holds 25,000 events; ``shared.domain.sharding.MAX_SHARDS_PER_JOB`` keeps the
largest job, retried to the end, inside it (tests/infrastructure/test_jobs.py counts it from the
synthesized definition).

One function runs every step (``functions.jobs.handler.handler``, dispatching on ``step``); it is
handed in, not built here. The state machine has a role of its own with exactly three policies:
invoking that one function, log delivery and X-Ray (the last two only work on ``"*"``: their
cdk-nag findings are acknowledged on those policies alone).
"""

from __future__ import annotations

import json
from typing import Any

from aws_cdk import Duration, Fn, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from shared.domain.sharding import PROCESSOR_RETRIES, SERVICE_ERROR_RETRIES

from . import names
from .nag import acknowledge
from .settings import DeploymentSettings

JOB_HANDLER = names.handler("jobs")
"""The handler of the job step function this construct is given (``functions.jobs.handler.handler``)."""
RETRYABLE_ERROR = "ProcessorRetryable"
LAMBDA_ERRORS = (
    "Lambda.ClientExecutionTimeoutException",
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
    "Lambda.Unknown",
)
"""Lambda's own failures of an invocation, retried with backoff: throttling included (a busy
account's concurrency), and ``Lambda.Unknown`` (the function ended without an answer)."""
JOB_ID = "$$.Execution.Input.job_id"
"""Where every state reads the job id: the execution's input, whatever the state's input is."""
RETRY_COUNT = sfn.JsonPath.number_at("$$.State.RetryCount")
"""The state's retries so far (0 on its first attempt), from the context object: the step tells
a failure's attempt by it."""

LOG_DELIVERY_ACTIONS = (
    "logs:CreateLogDelivery",
    "logs:GetLogDelivery",
    "logs:UpdateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:DescribeResourcePolicies",
    "logs:DescribeLogGroups",
)
"""What Step Functions needs to deliver an execution's logs to CloudWatch Logs (vended logs)."""
XRAY_ACTIONS = ("xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules", "xray:GetSamplingTargets")

# State names: the history and the tests name them.
PRE = "Pre"
LEVELS = "Levels"
SHARDS = "Shards"
SHARD = "Shard"
POST = "Post"
DONE = "Done"
FAILED = "Failed"
FAIL = "Fail"


LOG_GROUP_PREFIX = "/aws/vendedlogs/states/"


def log_group_name(stack: Stack) -> str:
    """``/aws/vendedlogs/states/<stack name>-jobs-<UUID>``, the UUID the last part of the stack's
    ARN (``arn:aws:cloudformation:<region>:<account>:stack/<name>/<UUID>``, the ``AWS::StackId``
    pseudo parameter: "Pseudo parameters reference" in the CloudFormation user guide,
    https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/pseudo-parameter-reference.html),
    which a new stack of the same name does not share: a group retained from a deleted stack never
    stands in the way of the next one."""
    stack_uuid = Fn.select(2, Fn.split("/", stack.stack_id))
    return f"{LOG_GROUP_PREFIX}{stack.stack_name}-jobs-{stack_uuid}"


class Jobs(Construct):
    """The jobs state machine (Standard), around a job step function it is given."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: DeploymentSettings,
        function: lambda_.IFunction,
        shard_concurrency: int = 10,
        retry_interval: Duration | None = None,
        retry_backoff_rate: float = 2,
        retry_max_attempts: int = PROCESSOR_RETRIES,
    ) -> None:
        super().__init__(scope, construct_id)
        if not 1 <= shard_concurrency <= 40:
            raise ValueError(f"shard_concurrency must be 1-40 (an inline Map's limit), got {shard_concurrency}")
        self.function = function
        self._retry_interval = retry_interval or Duration.seconds(1)
        self._retry_backoff_rate = retry_backoff_rate
        self._retry_max_attempts = retry_max_attempts

        pre = self._step(
            PRE,
            {"step": "pre", "job_id": sfn.JsonPath.string_at("$.job_id"), "retry_count": RETRY_COUNT},
            keep_output=True,
        )
        levels = self._levels(self._shards(shard_concurrency))
        post = self._step(
            POST,
            {"step": "post", "job_id": sfn.JsonPath.string_at(JOB_ID), "retry_count": RETRY_COUNT},
            keep_output=True,
        )
        self._catch_failures(pre, levels, post)

        self.log_group = self._log_group(settings)
        self.role, self.policy = self._role(function)
        self.logging_policy = self._logging_policy()
        self.tracing_policy = self._tracing_policy()
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            state_machine_type=sfn.StateMachineType.STANDARD,
            definition_body=sfn.DefinitionBody.from_chainable(
                pre.next(levels).next(post).next(sfn.Succeed(self, DONE))
            ),
            role=self.role.without_policy_updates(),
            tracing_enabled=True,
            logs=sfn.LogOptions(destination=self.log_group, level=sfn.LogLevel.ALL, include_execution_data=False),
        )
        # The permissions exist before the state machine does (its first execution needs them).
        self.state_machine.node.add_dependency(self.policy, self.logging_policy, self.tracing_policy)

    def _shards(self, shard_concurrency: int) -> sfn.Map:
        """The Shard step, over each of a level's shards, ``shard_concurrency`` at a time."""
        shard = self._step(
            SHARD,
            {
                "step": "shard",
                "job_id": sfn.JsonPath.string_at("$.job_id"),
                "level": sfn.JsonPath.number_at("$.level"),
                "shard": sfn.JsonPath.number_at("$.shard"),
                "shard_count": sfn.JsonPath.number_at("$.shard_count"),
                "retry_count": RETRY_COUNT,
            },
            keep_output=False,
        )
        shards = sfn.Map(
            self,
            SHARDS,
            items_path="$.shards",
            max_concurrency=shard_concurrency,
            item_selector={
                "job_id": sfn.JsonPath.string_at("$.job_id"),
                "level": sfn.JsonPath.number_at("$.level"),
                "shard_count": sfn.JsonPath.number_at("$.shard_count"),
                "shard": sfn.JsonPath.number_at("$$.Map.Item.Value"),
            },
            result_path=sfn.JsonPath.DISCARD,
        )
        shards.item_processor(shard)
        return shards

    def _levels(self, shards: sfn.Map) -> sfn.Map:
        """``shards`` over each level of Pre's answer, one level at a time."""
        levels = sfn.Map(
            self,
            LEVELS,
            items_path="$.levels",
            max_concurrency=1,
            item_selector={
                "job_id": sfn.JsonPath.string_at(JOB_ID),
                "level": sfn.JsonPath.number_at("$$.Map.Item.Value.level"),
                "shard_count": sfn.JsonPath.number_at("$$.Map.Item.Value.shard_count"),
                "shards": sfn.JsonPath.list_at("$$.Map.Item.Value.shards"),
            },
            result_path=sfn.JsonPath.DISCARD,
        )
        levels.item_processor(shards)
        return levels

    def _catch_failures(self, *states: sfn.TaskStateBase | sfn.Map) -> None:
        """Any error of ``states`` goes to the Failed step (job step "fail"), then Fail."""
        failed = self._step(
            FAILED,
            {
                "step": "fail",
                "job_id": sfn.JsonPath.string_at(JOB_ID),
                "error": sfn.JsonPath.string_at("$.error.Error"),
                "cause": sfn.JsonPath.string_at("$.error.Cause"),
            },
            keep_output=False,
        ).next(sfn.Fail(self, FAIL, error_path="$.error.Error", cause_path="$.error.Cause"))
        for state in states:
            state.add_catch(failed, errors=[sfn.Errors.ALL], result_path="$.error")

    def _log_group(self, settings: DeploymentSettings) -> logs.LogGroup:
        """The executions' log group (:func:`log_group_name`)."""
        # Vended logs go to a group under /aws/vendedlogs/: CloudWatch Logs' resource policy, which
        # each such delivery adds to, holds 5,120 characters ("Logging using CloudWatch Logs" in
        # the Step Functions developer guide), and a prefix lets one statement cover them all.
        # The name ends with the stack's own id, new with every creation of the stack: a retained
        # group outlives its stack, and a fixed name would fail the next deployment of a stack of
        # that name ("already exists"; :func:`log_group_name`).
        return logs.LogGroup(
            self,
            "Logs",
            log_group_name=log_group_name(Stack.of(self)),
            retention=settings.log_retention,
            removal_policy=settings.cdk_removal_policy,
        )

    def _role(self, function: lambda_.IFunction) -> tuple[iam.Role, iam.Policy]:
        """The state machine's role, and its policy of invoking the job step function alone."""
        role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("states.amazonaws.com"),
            description="Sundial jobs state machine (this state machine only)",
        )
        policy = iam.Policy(
            self,
            "Policy",
            roles=[role],
            statements=[iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[function.function_arn])],
        )
        return role, policy

    def _logging_policy(self) -> iam.Policy:
        """Log delivery, on ``"*"`` (acknowledged on this policy alone)."""
        policy = iam.Policy(
            self,
            "LoggingPolicy",
            roles=[self.role],
            statements=[iam.PolicyStatement(actions=list(LOG_DELIVERY_ACTIONS), resources=["*"])],
        )
        acknowledge(
            policy,
            "AwsSolutions-IAM5[Resource::*]",
            "Step Functions delivers execution logs through CloudWatch Logs vended log delivery, whose "
            'actions (logs:CreateLogDelivery and the rest) support no resource-level permissions and require "*" '
            "(see the Step Functions developer guide, IAM policies for logging). This policy holds only those.",
        )
        return policy

    def _tracing_policy(self) -> iam.Policy:
        """X-Ray, on ``"*"`` (acknowledged on this policy alone)."""
        policy = iam.Policy(
            self,
            "TracingPolicy",
            roles=[self.role],
            statements=[iam.PolicyStatement(actions=list(XRAY_ACTIONS), resources=["*"])],
        )
        acknowledge(
            policy,
            "AwsSolutions-IAM5[Resource::*]",
            "X-Ray trace segments and sampling rules are not resources: the X-Ray write and sampling actions "
            'support no resource-level permissions and require "*" (see the Service Authorization Reference '
            "for AWS X-Ray). This policy holds only those four actions.",
        )
        return policy

    def _step(self, name: str, payload: dict[str, Any], *, keep_output: bool) -> tasks.LambdaInvoke:
        """A call of the job step function: the step's answer is the state's output when
        ``keep_output``, else the state passes its input on (the answer is dropped)."""
        step = tasks.LambdaInvoke(
            self,
            name,
            lambda_function=self.function,
            payload=sfn.TaskInput.from_object(payload),
            output_path="$.Payload" if keep_output else None,
            result_path=None if keep_output else sfn.JsonPath.DISCARD,
            retry_on_service_exceptions=False,  # the retrier below: throttling and Lambda.Unknown too
        )
        step.add_retry(
            errors=list(LAMBDA_ERRORS),
            interval=Duration.seconds(2),
            backoff_rate=2,
            max_attempts=SERVICE_ERROR_RETRIES,
            jitter_strategy=sfn.JitterType.FULL,
        )
        step.add_retry(
            errors=[RETRYABLE_ERROR],
            interval=self._retry_interval,
            backoff_rate=self._retry_backoff_rate,
            max_attempts=self._retry_max_attempts,
        )
        return step

    def definition(self) -> str:
        """The definition as the template has it: a JSON string where the stack's tokens (the
        function's ARN) are CloudFormation intrinsics (``Fn::Join``/``Fn::GetAtt``) -- resolve them
        (``tests/support/stepfunctions.py`` does) before giving it to Step Functions."""
        resource = self.state_machine.node.default_child
        assert isinstance(resource, sfn.CfnStateMachine)
        return json.dumps(Stack.of(self).resolve(resource.definition_string))
