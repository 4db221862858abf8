"""Everything a job runs on (docs/jobs.md): the jobs bucket (its data, each shard's items and
results), the job function (every step of the state machine) and the state machine itself
(infra/jobs.py). Whoever starts jobs (the API; the trigger, for tasks whose target is a job) gets
what it needs from :meth:`JobRunner.starter_statements` and :meth:`JobRunner.starter_resources`;
whoever cancels them (the API) from :meth:`JobRunner.grant_stop`."""

from __future__ import annotations

from aws_cdk import ArnFormat, Duration, RemovalPolicy, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from . import names
from .bundling import LambdaBundle
from .function import ServiceFunction, function_environment
from .jobs import Jobs
from .nag import acknowledge, nag_form
from .settings import DeploymentSettings
from .signing import Signing
from .storage import Storage
from .targets import target_resources

JOB_TABLE_ACTIONS = ("dynamodb:GetItem", "dynamodb:UpdateItem")
"""Read the job item; record its plan, progress, notifications and outcome (conditional updates)."""
JOB_FUNCTION_TIMEOUT = Duration.seconds(300)
"""One processor call per invocation, at most its own timeout, plus the objects around it."""
JOBS_PREFIX = "jobs/"
ENDED_WITHOUT_THE_JOB = ("FAILED", "TIMED_OUT", "ABORTED")
"""Execution statuses after which a still running job is recorded failed (functions/jobs/handler.py)."""
EXECUTION_ENDS_RETRY_ATTEMPTS = 8
EXECUTION_ENDS_MAX_EVENT_AGE = Duration.hours(24)
"""The rule's retry policy ("How EventBridge retries delivering events", EventBridge user guide,
https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-retry-policy.html: by default 185
times over 24 hours, with exponential backoff and jitter): 8 retries, within a day at most; then
the event goes to the rule target's dead-letter queue, whose depth is alarmed, rather than a day
of retries passing before anyone hears of it. Delivering one twice is harmless (the fail step
finds the job ended)."""


class JobRunner(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: DeploymentSettings,
        bundle: LambdaBundle,
        storage: Storage,
        signing: Signing,
    ) -> None:
        super().__init__(scope, construct_id)
        self.bucket = self._bucket(settings)
        self.function = self._function(settings=settings, bundle=bundle, storage=storage, signing=signing)
        self.acknowledge_object_access(self.function.policy)
        self.processors_policy = self._processors_policy()
        self.jobs = Jobs(
            self,
            "StateMachine",
            settings=settings,
            function=self.function.function,
            shard_concurrency=settings.job_shard_concurrency,
        )
        self.execution_ends_dead_letters = self._execution_ends_dead_letters()
        self.execution_ends = self._execution_ends()

    def _bucket(self, settings: DeploymentSettings) -> s3.Bucket:
        """The jobs bucket: a job's data under ``jobs/``, expiring with the run history."""
        bucket = s3.Bucket(
            self,
            "Bucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=False,
            lifecycle_rules=[
                s3.LifecycleRule(
                    prefix=JOBS_PREFIX,
                    expiration=Duration.days(settings.run_retention_days),
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                )
            ],
            removal_policy=settings.cdk_removal_policy,
            # a throw-away stack's bucket is emptied before it is deleted (CloudFormation deletes
            # no bucket that holds objects: the teardown would end DELETE_FAILED)
            auto_delete_objects=settings.cdk_removal_policy is RemovalPolicy.DESTROY,
        )
        acknowledge(
            bucket,
            "AwsSolutions-S1",
            "The bucket holds a job's transient data (its items and each shard's result), written and "
            "read only by this stack's job function and API through their roles, and expires with the "
            "run history; S3 data events in CloudTrail record access where an account wants it.",
        )
        return bucket

    def _function(
        self, *, settings: DeploymentSettings, bundle: LambdaBundle, storage: Storage, signing: Signing
    ) -> ServiceFunction:
        """The job function: every step of the state machine, on the job's item and objects."""
        objects = self.bucket.arn_for_objects(f"{JOBS_PREFIX}*")
        return ServiceFunction(
            self,
            "Function",
            bundle=bundle,
            settings=settings,
            handler=names.handler("jobs"),
            description="Sundial jobs: every step of a sharded batch job (pre, shard, post, fail)",
            statements=[
                *storage.access_statements(actions=JOB_TABLE_ACTIONS),
                iam.PolicyStatement(actions=["s3:GetObject", "s3:PutObject"], resources=[objects]),
                # an HTTP processor's calls are signed with the job's tenant's secrets
                *signing.signer_statements(storage),
            ],
            environment=function_environment(
                settings,
                table_name=storage.table.table_name,
                jobs_bucket=self.bucket.bucket_name,
                **signing.resources(),
            ),
            memory_size=256,
            timeout=JOB_FUNCTION_TIMEOUT,
        )

    def _processors_policy(self) -> iam.Policy:
        """The job function's invoking of Lambda processors, in a policy of its own."""
        lambda_functions = target_resources(Stack.of(self))["lambda:InvokeFunction"]
        return self.function.add_policy(
            "ProcessorsPolicy",
            [iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[lambda_functions])],
            acknowledgments={
                f"AwsSolutions-IAM5[Resource::{nag_form(Stack.of(self), lambda_functions)}]": (
                    "A job's processor may be a Lambda function users name through the API at run "
                    "time, so no template can name it: lambda:InvokeFunction alone, on functions of "
                    "this deployment's account and region only."
                )
            },
        )

    def _execution_ends_dead_letters(self) -> sqs.Queue:
        """The dead-letter queue of the execution-status rule's target."""
        # An event the rule could not deliver (the job function throttled or failing past the
        # retries, or its permission gone) lands here rather than nowhere: "Using dead-letter
        # queues to process undelivered events in EventBridge",
        # https://docs.aws.amazon.com/eventbridge/latest/userguide/rule-dlq.html. The target's
        # dead_letter_queue gives the queue a policy letting events.amazonaws.com send to it from
        # this rule alone (aws:SourceArn), as that page asks; an encrypted queue must use a key
        # EventBridge may use, which SQS's own (SSE-SQS) is.
        queue = sqs.Queue(
            self,
            "ExecutionEndsDeadLetters",
            retention_period=Duration.days(14),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
        )
        acknowledge(
            queue,
            "AwsSolutions-SQS3",
            "This queue is itself a dead-letter queue: the one of the execution-status rule's target "
            "(the events EventBridge could not deliver to the job function), which cdk-nag does not see "
            "as such since no queue redrives to it. Its depth is alarmed with the stack's alarms.",
        )
        return queue

    def _execution_ends(self) -> events.Rule:
        """The rule that takes an execution's end without its job to the job function's fail step."""
        # An execution that ends FAILED, TIMED_OUT or ABORTED (its fail step itself failing, a stop
        # from outside) has its job recorded failed, unless the job had ended already: no job stays
        # "running" behind an execution that is over (Step Functions sends its status changes to
        # EventBridge's default bus: "Automating Step Functions event delivery with EventBridge").
        return events.Rule(
            self,
            "ExecutionEnds",
            description="Sundial: a job whose execution ended without it is recorded failed",
            event_pattern=events.EventPattern(
                source=["aws.states"],
                detail_type=["Step Functions Execution Status Change"],
                detail={
                    "status": list(ENDED_WITHOUT_THE_JOB),
                    "stateMachineArn": [self.jobs.state_machine.state_machine_arn],
                },
            ),
            targets=[
                events_targets.LambdaFunction(
                    self.function.function,
                    retry_attempts=EXECUTION_ENDS_RETRY_ATTEMPTS,
                    max_event_age=EXECUTION_ENDS_MAX_EVENT_AGE,
                    dead_letter_queue=self.execution_ends_dead_letters,
                )
            ],
        )

    def starter_statements(self) -> list[iam.PolicyStatement]:
        """Starting a job: its data into the bucket, its execution started."""
        return [
            iam.PolicyStatement(actions=["s3:PutObject"], resources=[self.bucket.arn_for_objects(f"{JOBS_PREFIX}*")]),
            iam.PolicyStatement(
                actions=["states:StartExecution"], resources=[self.jobs.state_machine.state_machine_arn]
            ),
        ]

    def notifier_statements(self) -> list[iam.PolicyStatement]:
        """Sending a notify a shard's progress report crossed: the job function, invoked
        asynchronously (shared/adapters/job_notify.py)."""
        return [iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[self.function.function.function_arn])]

    def notifier_resources(self) -> dict[str, str]:
        return {"job_function": self.function.function.function_name}

    def result_reader_statements(self) -> list[iam.PolicyStatement]:
        """Signing links to post's results kept in the bucket (a presigned GET is authorized as
        the role that signed it): reading ``jobs/*`` of this bucket."""
        return [
            iam.PolicyStatement(actions=["s3:GetObject"], resources=[self.bucket.arn_for_objects(f"{JOBS_PREFIX}*")])
        ]

    def executions_arn(self) -> str:
        """Every execution of the job state machine (an execution is named after its job)."""
        return Stack.of(self).format_arn(
            service="states",
            resource="execution",
            resource_name=f"{self.jobs.state_machine.state_machine_name}:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )

    def grant_stop(self, function: ServiceFunction) -> iam.Policy:
        """Cancelling a job: StopExecution on the job state machine's executions, in a policy of
        its own (the execution is named at run time: a wildcard, acknowledged there alone)."""
        executions = self.executions_arn()
        return function.add_policy(
            "JobStopPolicy",
            [iam.PolicyStatement(actions=["states:StopExecution"], resources=[executions])],
            acknowledgments={
                f"AwsSolutions-IAM5[Resource::{nag_form(Stack.of(self), executions)}]": (
                    "A job's execution is named after the job, at run time: StopExecution alone, on "
                    "the executions of this stack's job state machine and nothing else."
                )
            },
        )

    def acknowledge_object_access(self, policy: iam.Policy) -> None:
        """A job's objects are many, under one prefix: access to ``jobs/*`` of this bucket alone."""
        stack = Stack.of(self)
        bucket = stack.resolve(stack.get_logical_id(self.bucket.node.default_child))  # type: ignore[arg-type]
        acknowledge(
            policy,
            f"AwsSolutions-IAM5[Resource::<{bucket}.Arn>/{JOBS_PREFIX}*]",
            "A job writes one object per shard (its items, its result) under jobs/<job id>/: the "
            "grant covers that prefix of this stack's jobs bucket and nothing else.",
        )

    def starter_resources(self) -> dict[str, str]:
        """What a function that starts jobs needs (fields of ``shared.settings.environment.Settings``)."""
        return {
            "jobs_bucket": self.bucket.bucket_name,
            "job_state_machine_arn": self.jobs.state_machine.state_machine_arn,
        }
