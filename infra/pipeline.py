"""The firing pipeline (docs/design.md, section 2): minute rule -> tick -> scanners (invoked
asynchronously) -> delay queues -> trigger -> targets, with the dead-letter queue behind them.

The queues and the event sources are built from ``shared/topology.py`` -- names, visibility
timeouts, retention, redrive targets, receive counts and batch sizes -- the same definitions the
local runtime builds its queues and pollers from; tests/infrastructure checks the template
against them both ways. Nothing here restates one of those numbers. The deployment's settings
size what AWS alone has: the trigger's batch size (``topology.consumers`` takes it), its event
sources' provisioned pollers, its provisioned concurrency (an alias the event sources invoke) and
how many scanner invocations a tick starts.

Each function has its own role with the exact actions it performs on the exact ARNs:

=========  ==================================================  =============================
function   table (no index)                                    queues
=========  ==================================================  =============================
tick       BatchGetItem, PutItem, Query (marks, ``W#clean``,   GetQueueAttributes: stranded
           a look at each shard's buckets)                     (it invokes the scanner and
                                                               the recovering trigger)
scanner    UpdateItem, Query (scan lease + mark, buckets)       send: delay queues, dead letters
                                                               (its on-failure destination)
trigger    GetItem, PutItem, UpdateItem, BatchGetItem          consume + send: delay queues;
           (claims, run logs, runs, re-arming, chained runs)   send: dead letters
recover    the trigger's                                       consume: stranded (itself, no
                                                               event source); send: the
                                                               trigger's
=========  ==================================================  =============================

The high-priority trigger (``trigger_high``) is the trigger's code and permissions again, with a
role of its own, consuming the high-priority delay queue alone with **reserved** concurrency
(``sundial:highPriorityConcurrency``): capacity no other function of the account can take, so a
flood of normal occurrences cannot starve ``"priority": "high"`` tasks (an event source's maximum
concurrency only caps, it keeps nothing; docs/receivers.md, section 3). Every stager (the API,
the scanners, both triggers) sends a high-priority occurrence there, a retry too.

The trigger also calls the targets users register (Lambda, SQS, SNS, EventBridge), whose ARNs
are known only at run time: those four actions are granted on every resource of their kind in
the deployment's own account and region, in a policy of their own (see infra/targets.py).
Targets in other accounts or regions are refused (AccessDenied: a final failure of the run).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from aws_cdk import Duration, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from shared import topology

from . import names
from .bundling import LambdaBundle
from .function import CONSUME_ACTIONS, ServiceFunction, function_environment
from .nag import nag_form
from .settings import TICK_PERIOD_S, DeploymentSettings
from .signing import Signing
from .storage import Storage
from .targets import TARGET_ACTIONS, start_statements, target_resources


class JobStarting(Protocol):
    """What the trigger needs to start the jobs of tasks whose target is a job: infra/job_runner.py's
    ``JobRunner``, composed by infra/stack.py (the pipeline does not import it: no import cycle)."""

    def starter_statements(self) -> list[iam.PolicyStatement]: ...

    def starter_resources(self) -> dict[str, str]: ...

    def acknowledge_object_access(self, policy: iam.Policy) -> None: ...


SEND_ACTIONS = ("sqs:SendMessage",)
"""Also authorizes SendMessageBatch: SQS has no separate permission for its batch actions."""

TICK_TABLE_ACTIONS = ("dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:Query")
"""Read every shard's mark and its own ``W#clean`` (one BatchGetItem), look at a shard's buckets
(a Query of one item), keep what it found clean (PutItem of ``W#clean``): on the mark and bucket
partitions only (``TICK_PARTITIONS``)."""
TICK_PARTITIONS = ["W#*", "B#*"]
TRIGGER_NAME_ACTIONS = ("dynamodb:DeleteItem",)
"""The name of an EventBridge Scheduler schedule that asked to be deleted after completion goes
when its task has fired its last (docs/eventbridge.md, section 7): one conditional delete, on
the schedule-name partitions only (``SCHEDULE_NAME_PARTITIONS``, through ``dynamodb:LeadingKeys``:
"Using IAM policy conditions for fine-grained access control", DynamoDB Developer Guide). moto
enforces no IAM policy: tests/infrastructure/test_iam.py holds the grant."""
SCHEDULE_NAME_PARTITIONS = ["SN#*"]
TICK_QUEUE_ACTIONS = ("sqs:GetQueueAttributes",)
"""The stranded queue's depth, once a minute (shared/adapters/stranded.py)."""
SCANNER_TABLE_ACTIONS = ("dynamodb:UpdateItem", "dynamodb:Query")
"""Take a shard's scan lease and read its mark (one conditional update), query its buckets' due
window, move the mark and release the lease (a conditional update)."""
TRIGGER_TABLE_ACTIONS = (
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:BatchGetItem",
    "dynamodb:ConditionCheckItem",
)
"""Claim (conditional update), re-read a refused claim, read run logs, write run logs, runs and
the next occurrence, record retries and outcomes (conditional updates) and dead letters. A
transaction needs its items' own actions: the run log with the tenants' task counters, an
outcome with its tenant's counter, and, when a batch's run log could not be written, a check
that it was not written after all (``ConditionCheckItem``; docs/tenancy.md, section 2 step 5).
A chain's hop (docs/chains.md) reads the child task (GetItem) and writes its run and history
record in one transaction (PutItem twice). A tenant's limits per destination
(``T#<tenant>`` / ``L#<name>``) are read with the ``Query`` the
signer's statement grants on the tenants' partitions (infra/signing.py); their state
(``LIMIT#...``) is read and written with the actions above (docs/receivers.md)."""


@dataclass(frozen=True)
class FunctionProfile:
    description: str
    timeout: Duration
    memory_mb: int = 256


PROFILES = {
    names.TICK: FunctionProfile(
        "Sundial tick: every minute, invokes the scanner for the bucket shards with work, and the recovering "
        "trigger when the stranded queue holds messages",
        Duration.seconds(30),
    ),
    names.SCANNER: FunctionProfile(
        "Sundial scanner: stages its shards' due occurrences into the delay queues",
        Duration.seconds(topology.SCANNER_TIMEOUT_S),
    ),
    names.TRIGGER: FunctionProfile(
        "Sundial trigger: claims, fires and records staged occurrences",
        Duration.seconds(topology.TRIGGER_TIMEOUT_S),
    ),
    names.HIGH_PRIORITY_TRIGGER: FunctionProfile(
        "Sundial high-priority trigger: claims, fires and records staged high-priority occurrences",
        Duration.seconds(topology.TRIGGER_TIMEOUT_S),
    ),
    names.RECOVER: FunctionProfile(
        "Sundial recovering trigger: drains the stranded queue when the tick asks, firing late, or giving up "
        "as dead letters, occurrences whose messages ran out of receives",
        Duration.seconds(topology.TRIGGER_TIMEOUT_S),
    ),
}
"""The trigger's timeout stays below the delay queues' visibility timeout
(``topology.DELAY_VISIBILITY_TIMEOUT_S``): SQS never hands a message to a second trigger while
the first may still be working on it. tests/infrastructure checks every consumer's."""

TICK_MAX_EVENT_AGE = Duration.seconds(TICK_PERIOD_S)
"""A tick that could not run within a period is superseded by the next one, which scans every
shard from its watermark; retrying it would only scan twice."""


class Queues(Construct):
    """Every queue of ``topology.queues(delay_queues)``: SSE, TLS only, redrive as defined.

    The dead-letter queue has no dead-letter queue of its own; cdk-nag (AwsSolutions-SQS3) sees
    that the other queues redrive to it, so no acknowledgment is needed.
    """

    def __init__(self, scope: Construct, construct_id: str, *, settings: DeploymentSettings) -> None:
        super().__init__(scope, construct_id)
        self.specs = topology.queues(settings.delay_queues)
        stack_name = Stack.of(self).stack_name
        self.by_name: dict[str, sqs.Queue] = {}
        pending = list(self.specs)
        while pending:  # a queue after the queue it redrives to
            ready = [spec for spec in pending if spec.dead_letter is None or spec.dead_letter in self.by_name]
            if not ready:
                raise ValueError(f"dead-letter targets missing or circular: {[spec.name for spec in pending]}")
            for spec in ready:
                self.by_name[spec.name] = self._queue(spec, stack_name)
                pending.remove(spec)

        self.dead_letters = self.by_name[topology.DEAD_LETTERS.name]
        self.delay = [self.by_name[topology.delay_queue(i).name] for i in range(settings.delay_queues)]
        self.high_priority = self.by_name[topology.HIGH_PRIORITY_QUEUE]
        self.stranded = self.by_name[topology.STRANDED.name]

    def _queue(self, spec: topology.QueueSpec, stack_name: str) -> sqs.Queue:
        redrive = None
        if spec.dead_letter is not None:
            redrive = sqs.DeadLetterQueue(
                queue=self.by_name[spec.dead_letter], max_receive_count=spec.max_receive_count
            )
        # Queues go with the stack whatever the removal policy: their names are fixed (a retained
        # queue would block the next deployment of the stack), and what a dead letter records
        # is also on its task's item in the (retained) table.
        return sqs.Queue(
            self,
            spec.name,
            queue_name=f"{stack_name}-{spec.name}",
            visibility_timeout=Duration.seconds(spec.visibility_timeout_s),
            retention_period=Duration.seconds(spec.retention_s),
            dead_letter_queue=redrive,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
        )

    def staging_resources(self) -> dict[str, Any]:
        """What a function that stages occurrences needs to find the delay queues (in index order:
        the stagers pick a queue by its position), and the high-priority one."""
        return {
            "delay_queue_urls": tuple(queue.queue_url for queue in self.delay),
            "high_priority_queue_url": self.high_priority.queue_url,
        }

    def sends_of(self, function: str) -> iam.PolicyStatement:
        """Sending (one message or a batch) to the queues ``function`` sends to
        (``topology.senders``), and to nothing else."""
        return send_statement([self.by_name[name] for name in topology.senders(len(self.delay))[function]])


def send_statement(queues: Sequence[sqs.IQueue]) -> iam.PolicyStatement:
    return iam.PolicyStatement(actions=list(SEND_ACTIONS), resources=[queue.queue_arn for queue in queues])


@dataclass(frozen=True)
class _TriggerGrants:
    """What each trigger (the trigger, the high-priority trigger, the recovering trigger) may do
    and is told: the same table actions, sends, job starts and signing, each with its own role."""

    storage: Storage
    queues: Queues
    jobs: JobStarting
    signing: Signing

    def statements(self, name: str) -> list[iam.PolicyStatement]:
        storage = self.storage
        return [
            *storage.access_statements(actions=TRIGGER_TABLE_ACTIONS),
            self.queues.sends_of(name),
            # a task whose target is a job starts it
            *self.jobs.starter_statements(),
            # HTTP callbacks are signed with the task's tenant's secrets
            *self.signing.signer_statements(storage),
            # a completed EventBridge Scheduler schedule's name is deleted when it asked
            iam.PolicyStatement(
                actions=list(TRIGGER_NAME_ACTIONS),
                resources=[storage.table.table_arn],
                conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": SCHEDULE_NAME_PARTITIONS}},
            ),
        ]

    def environment(self, settings: DeploymentSettings, **resources: Any) -> dict[str, str]:
        queues = self.queues
        return {
            # A deployed trigger never calls loopback (there it is the Lambda runtime API)
            # or private addresses (it runs outside any VPC): every function's settings say
            # so (allow_loopback_targets and allow_private_targets are false), whatever a task
            # says.
            **function_environment(
                settings,
                table_name=self.storage.table.table_name,
                dead_letter_queue_url=queues.dead_letters.queue_url,
                **queues.staging_resources(),
                **self.jobs.starter_resources(),
                **self.signing.resources(),
                **resources,
            ),
            # One INFO line per fire would cost more than the fire (docs/design.md, section 4);
            # failures are logged at WARNING.
            "POWERTOOLS_LOG_LEVEL": "WARNING",
        }


class Pipeline(Construct):
    """The minute rule, the tick, the scanners and the trigger, over :class:`Queues`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: DeploymentSettings,
        bundle: LambdaBundle,
        storage: Storage,
        jobs: JobStarting,
        signing: Signing,
    ) -> None:
        super().__init__(scope, construct_id)
        self.queues = Queues(self, names.QUEUES_ID, settings=settings)
        self.scanner = self._scanner(settings=settings, bundle=bundle, storage=storage)
        triggers = _TriggerGrants(storage=storage, queues=self.queues, jobs=jobs, signing=signing)
        self.trigger = self._function(
            names.TRIGGER,
            settings=settings,
            bundle=bundle,
            statements=triggers.statements(names.TRIGGER),
            environment=triggers.environment(settings),
        )
        self.high_priority_trigger = self._function(
            names.HIGH_PRIORITY_TRIGGER,
            settings=settings,
            bundle=bundle,
            statements=triggers.statements(names.HIGH_PRIORITY_TRIGGER),
            environment=triggers.environment(settings),
            reserved_concurrency=settings.high_priority_reserved_concurrency or None,
        )
        self.recover = self._recover(settings=settings, bundle=bundle, triggers=triggers)
        self.tick = self._tick(settings=settings, bundle=bundle, storage=storage)
        self.triggers = (self.trigger, self.high_priority_trigger, self.recover)
        for trigger in self.triggers:
            jobs.acknowledge_object_access(trigger.policy)
        self.functions = {
            names.TICK: self.tick,
            names.SCANNER: self.scanner,
            names.TRIGGER: self.trigger,
            names.HIGH_PRIORITY_TRIGGER: self.high_priority_trigger,
            names.RECOVER: self.recover,
        }
        self.targets_policies: dict[ServiceFunction, iam.Policy] = {}
        """Each trigger's policy of the target actions (:meth:`_grant_targets`)."""
        for trigger in self.triggers:
            self._grant_targets(trigger, settings.ecs_task_role_names)
        self._event_sources(settings)
        self.rule = self._tick_rule()

    def _scanner(self, *, settings: DeploymentSettings, bundle: LambdaBundle, storage: Storage) -> ServiceFunction:
        """The scanner, which the tick invokes asynchronously for its shards."""
        queues = self.queues
        scanner = self._function(
            names.SCANNER,
            settings=settings,
            bundle=bundle,
            statements=[*storage.access_statements(actions=SCANNER_TABLE_ACTIONS), queues.sends_of(names.SCANNER)],
            environment=function_environment(
                settings, table_name=storage.table.table_name, **queues.staging_resources()
            ),
        )
        # The tick's asynchronous invocations (shared/adapters/scans.py): Lambda tries a failed one twice
        # more and a throttled one until it is SCAN_EVENT_MAX_AGE_S old, then sends it to the
        # dead-letter queue (alarmed). The scanner's role may send there (topology.senders).
        scanner.function.configure_async_invoke(
            retry_attempts=topology.SCAN_RETRY_ATTEMPTS,
            max_event_age=Duration.seconds(topology.SCAN_EVENT_MAX_AGE_S),
            on_failure=destinations.SqsDestination(queues.dead_letters),
        )
        return scanner

    def _recover(
        self, *, settings: DeploymentSettings, bundle: LambdaBundle, triggers: _TriggerGrants
    ) -> ServiceFunction:
        """The recovering trigger, which the tick invokes asynchronously to drain the stranded queue."""
        stranded = self.queues.stranded
        # No event source: the recovering trigger receives from the stranded queue itself when the
        # tick invokes it (functions/recover/drain.py), with the actions Lambda's poller would have.
        recover = self._function(
            names.RECOVER,
            settings=settings,
            bundle=bundle,
            statements=[
                *triggers.statements(names.RECOVER),
                iam.PolicyStatement(actions=list(CONSUME_ACTIONS), resources=[stranded.queue_arn]),
            ],
            environment=triggers.environment(settings, stranded_queue_url=stranded.queue_url),
        )
        # A drain that failed or could not start is not retried: the next tick asks again while
        # messages wait ("Configuring error handling for asynchronous invocation").
        recover.function.configure_async_invoke(
            retry_attempts=0, max_event_age=Duration.seconds(topology.DRAIN_EVENT_MAX_AGE_S)
        )
        return recover

    def _tick(self, *, settings: DeploymentSettings, bundle: LambdaBundle, storage: Storage) -> ServiceFunction:
        """The tick, which invokes the scanner and the recovering trigger (built before it)."""
        stranded = self.queues.stranded
        # The tick also looks at the stranded queue's depth once a minute and, when messages wait
        # there, invokes the recovering trigger asynchronously to drain it (shared/adapters/stranded.py).
        return self._function(
            names.TICK,
            settings=settings,
            bundle=bundle,
            statements=[
                iam.PolicyStatement(
                    actions=list(TICK_TABLE_ACTIONS),
                    resources=[storage.table.table_arn],
                    conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": TICK_PARTITIONS}},
                ),
                iam.PolicyStatement(
                    actions=["lambda:InvokeFunction"],
                    resources=[self.scanner.function.function_arn, self.recover.function.function_arn],
                ),
                iam.PolicyStatement(actions=list(TICK_QUEUE_ACTIONS), resources=[stranded.queue_arn]),
            ],
            environment=function_environment(
                settings,
                table_name=storage.table.table_name,
                scanner_function=self.scanner.function.function_name,
                scan_invocations=settings.scanner_max_concurrency,
                stranded_queue_url=stranded.queue_url,
                recover_function=self.recover.function.function_name,
            ),
        )

    def _event_sources(self, settings: DeploymentSettings) -> None:
        """The trigger's provisioned concurrency when asked, then every consumer's event source
        (``topology.consumers``)."""
        if settings.trigger_provisioned_concurrency:
            # before the event sources: they invoke the alias that holds it
            self.trigger.provision(settings.trigger_provisioned_concurrency)

        for consumer in topology.consumers(settings.delay_queues, settings.trigger_batch_size):
            pollers = settings.trigger_poller_config if consumer.function == names.TRIGGER else None
            self.functions[consumer.function].consume(
                self.queues.by_name[consumer.queue],
                batch_size=consumer.batch_size,
                batching_window_s=consumer.batching_window_s,
                # Every event source is capped (provisioned pollers cap the normal lane in their
                # mode, which takes no maximum concurrency): no lane can take the account's pool.
                max_concurrency=None if pollers else settings.event_source_concurrency(consumer),
                pollers=pollers,
            )

    def _tick_rule(self) -> events.Rule:
        """The minute rule that invokes the tick, which is never retried (:data:`TICK_MAX_EVENT_AGE`)."""
        rule = events.Rule(
            self,
            names.TICK_RULE_ID,
            description="Sundial: the minute tick that drives the scanners",
            schedule=events.Schedule.rate(Duration.seconds(TICK_PERIOD_S)),
            targets=[events_targets.LambdaFunction(self.tick.function)],
        )
        self.tick.function.configure_async_invoke(retry_attempts=0, max_event_age=TICK_MAX_EVENT_AGE)
        return rule

    def _function(
        self,
        name: str,
        *,
        settings: DeploymentSettings,
        bundle: LambdaBundle,
        statements: Sequence[iam.PolicyStatement],
        environment: dict[str, str],
        reserved_concurrency: int | None = None,
    ) -> ServiceFunction:
        profile = PROFILES[name]
        trigger = name in (names.TRIGGER, names.HIGH_PRIORITY_TRIGGER, names.RECOVER)
        return ServiceFunction(
            self,
            names.function_id(name),
            bundle=bundle,
            settings=settings,
            handler=names.handler(name),
            description=profile.description,
            statements=statements,
            environment=environment,
            memory_size=settings.trigger_memory_mb if trigger else profile.memory_mb,
            timeout=profile.timeout,
            reserved_concurrency=reserved_concurrency,
            allow_recursion=name in topology.looping(settings.delay_queues),
        )

    def _grant_targets(self, trigger: ServiceFunction, task_roles: tuple[str, ...]) -> None:
        """The target actions, on the trigger's role (each trigger's); ``task_roles``: the roles
        ECS tasks may run as (``ecs_task_roles``)."""
        resources = target_resources(Stack.of(self))
        statements = [iam.PolicyStatement(actions=[action], resources=[resources[action]]) for action in TARGET_ACTIONS]
        starts, started = start_statements(Stack.of(self), task_roles)
        reason = (
            "Task targets are ARNs users register through the API at run time, so no template can "
            "name them. Each action is granted alone, on its own kind of resource, and only within "
            "this deployment's account and region: {what}. The policy holds only the target actions "
            "and belongs to the trigger's role alone; targets elsewhere are refused."
        )
        policy = trigger.add_policy(
            names.TARGETS_POLICY_ID,
            [*statements, *starts],
            acknowledgments=started
            | {
                f"AwsSolutions-IAM5[Resource::{nag_form(Stack.of(self), resources[action])}]": reason.format(what=what)
                for action, what in (
                    ("lambda:InvokeFunction", "lambda:InvokeFunction on functions (asynchronous invoke)"),
                    ("sqs:SendMessage", "sqs:SendMessage on queues"),
                    ("sns:Publish", "sns:Publish on topics"),
                    ("events:PutEvents", "events:PutEvents on event buses"),
                )
            },
        )
        self.targets_policies[trigger] = policy
