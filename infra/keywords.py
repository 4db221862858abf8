"""The :class:`~.sundial.Sundial` construct's keyword arguments: :class:`SundialSettings`, one key
per ``sundial:*`` setting of cdk.json, with the settings model's type, default and documentation
(``shared.settings.context.DeploymentSettings``, which also validates them).

Written by ``python -m release.keywords`` from the model: do not edit by hand.
"""

from __future__ import annotations

from typing import Literal, TypedDict

__all__ = ["SundialSettings"]


class SundialSettings(TypedDict, total=False):
    """A Sundial deployment's settings as keyword arguments: each is a ``sundial:*`` context key of
    cdk.json (named in its documentation), with the same default and the same validation; one left
    out takes its default."""

    bucket_shards: int
    """Default ``16`` (cdk.json: ``sundial:bucketShards``). Partitions per minute bucket
    (docs/design.md says how to size it). A task id carries its shard (shared/domain/ids.py), so at
    most ``ids.MAX_SHARDS``."""

    list_shards: int
    """Default ``4`` (cdk.json: ``sundial:listShards``). Partitions per tenant in the listing index
    (spreads registration bursts)."""

    run_retention_days: int
    """Default ``30`` (cdk.json: ``sundial:runRetentionDays``). Finished tasks and runs expire
    (DynamoDB TTL, the jobs' S3 objects) this long after they end."""

    default_tenant: str
    """Default ``"default"`` (cdk.json: ``sundial:defaultTenant``). The tenant of callers that carry
    none (the local runtime only: a deployed API wants a key)."""

    tenant_requests_per_second: int
    """Default ``100`` (cdk.json: ``sundial:tenantRequestsPerSecond``). A new tenant's requests per
    second (and the default tenant's); PATCH /v1/tenants/{id} changes it."""

    tenant_burst: int
    """Default ``200`` (cdk.json: ``sundial:tenantBurst``). A new tenant's burst: requests admitted at
    once above its rate."""

    tenant_max_tasks: int
    """Default ``1000000`` (cdk.json: ``sundial:tenantMaxTasks``). A new tenant's quota of tasks that
    can still fire."""

    look_ahead_ms: int
    """Default ``120000`` (cdk.json: ``sundial:lookAheadMs``). Scanners stage what falls due this far
    ahead. At least one tick period, so a tick up to that late still stages everything before it is
    due."""

    guard_ms: int
    """Default ``60000`` (cdk.json: ``sundial:guardMs``). Writers stage themselves what falls due
    before now + look-ahead + guard."""

    lead_ms: int
    """Default ``2000`` (cdk.json: ``sundial:leadMs``). Staged messages arrive up to this much early;
    the trigger waits out the rest. It covers the trigger event source's batching window and its
    polling latency."""

    misfire_tolerance_ms: int
    """Default ``60000`` (cdk.json: ``sundial:misfireToleranceMs``). A claim later than this after the
    due time is a misfire."""

    lease_ms: int
    """Default ``150000`` (cdk.json: ``sundial:leaseMs``). How long a claim holds a run from its due
    time: longer than a trigger can live, shorter than the delay queues' visibility timeout (so a
    message redelivered after a crashed trigger finds the lease expired)."""

    removal_policy: Literal["retain", "destroy"]
    """Default ``"retain"`` (cdk.json: ``sundial:removalPolicy``). "retain" keeps the table (with
    deletion protection) and the log groups when the stack is deleted; "destroy" removes them
    (throw-away development stacks only)."""

    architecture: Literal["arm64", "x86_64"]
    """Default ``"arm64"`` (cdk.json: ``sundial:architecture``). Lambda architecture; the dependency
    layer is built to match."""

    bytecode_python: str
    """Default ``""`` (cdk.json: ``sundial:bytecodePython``). Empty: the layer and the code ship as
    source only, and every cold start compiles what it imports (the same assets whatever machine
    synthesizes them). Else the command of a Python of the functions' runtime version exactly
    (``python3.14``), which the synth runs to ship bytecode next to the sources (infra/bundling.py;
    docs/deploy.md, "Bytecode and cold starts"); a synth that cannot run it, or finds another
    version, stops."""

    log_retention_days: int
    """Default ``30``; one of 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096,
    1827, 2192, 2557, 2922, 3288, 3653 (cdk.json: ``sundial:logRetentionDays``). Retention of every
    log group the stack creates (one of CloudWatch Logs' periods)."""

    api_throttle_rate: int
    """Default ``500`` (cdk.json: ``sundial:apiThrottleRate``). Steady-state requests per second the
    API stage accepts before answering 429."""

    api_throttle_burst: int
    """Default ``1000`` (cdk.json: ``sundial:apiThrottleBurst``). Burst the API stage accepts above the
    steady rate."""

    api_gateway_cloudwatch_role: bool
    """Default ``True`` (cdk.json: ``sundial:apiGatewayCloudWatchRole``). API Gateway writes access
    logs only once the region's account settings name a CloudWatch role. True: the stack creates
    that role (kept when the stack is deleted, since every API in the region uses it) and sets it.
    False: the account already has one (landing zones often manage it centrally) and the stack
    leaves the setting alone."""

    delay_queues: int
    """Default ``1`` (cdk.json: ``sundial:delayQueues``). Delay queues the occurrences are spread over,
    each with its own trigger event source. Raise it when one queue's in-flight limit or one event
    source's pollers are not enough; never lower it while messages may wait in the queues it removes
    (they go with the queue)."""

    scanner_max_concurrency: int
    """Default ``16`` (cdk.json: ``sundial:scannerMaxConcurrency``). Scanner invocations a tick starts
    at most: it deals the shards it found busy into this many groups, each scanned one shard after
    another by one asynchronous invocation, so a tick's scans take at most this many environments at
    once. The default scans the 16 default shards at once, one each."""

    job_shard_concurrency: int
    """Default ``10`` (cdk.json: ``sundial:jobShardConcurrency``). Shards of one job level processed at
    once: how hard a job may hit its processor."""

    trigger_memory_mb: int
    """Default ``128`` (cdk.json: ``sundial:triggerMemoryMb``). The trigger function's memory. The
    trigger mostly waits out the lead, so its Lambda time is the largest part of a fire's cost and
    grows with this; Lambda's CPU grows with it too, and a batch's claims and calls are CPU work:
    more memory, less lateness when batches are full (docs/design.md, section 4)."""

    trigger_batch_size: int
    """Default ``10`` (cdk.json: ``sundial:triggerBatchSize``). Messages the trigger's event sources
    hand one invocation (BatchSize; the trigger's batching window, 1 s, lets Lambda gather more than
    10). Fuller batches share one invocation's wait out of the lead, one run-log write and fewer
    calls, but the batch's claims go one at a time: they must fit the lead at the trigger's CPU
    (:func:`claim_ms`), so a larger batch wants more memory."""

    trigger_min_pollers: int
    """Default ``0`` (cdk.json: ``sundial:triggerMinPollers``). 0: the delay queues' event sources
    scale in standard mode (5 batches at first, 300 more a minute). 2 to 200: provisioned mode, with
    at least this many pollers on each delay queue's event source, always on (and billed), scaling
    three times as fast up to ``trigger_max_pollers``."""

    trigger_max_pollers: int
    """Default ``0`` (cdk.json: ``sundial:triggerMaxPollers``). Provisioned mode: the most pollers of
    each delay queue's event source (2 to 2,000; 0: Lambda's default, 200). Needs
    ``trigger_min_pollers``."""

    high_priority_concurrency: int
    """Default ``10`` (cdk.json: ``sundial:highPriorityConcurrency``). The most batches the
    high-priority trigger (the lane of ``"priority": "high"`` tasks) runs at once: its event
    source's maximum concurrency. The normal lane is capped too (``trigger_max_concurrency``), so a
    flood of normal occurrences leaves this much of the account's pool (docs/receivers.md, section
    3)."""

    high_priority_reserved_concurrency: int
    """Default ``0`` (cdk.json: ``sundial:highPriorityReservedConcurrency``). Concurrency reserved for
    the high-priority trigger (0: none): environments no other function of the account can take,
    which the cap of the normal lane cannot promise when other workloads share the account. Off by
    default: a reservation fails to deploy where the account's quota leaves less than 100 unreserved
    (new accounts start with a low quota). At least ``high_priority_concurrency`` when set: an event
    source invoking beyond a function's reserved concurrency is throttled, and each throttled batch
    burns its messages' receives."""

    trigger_max_concurrency: int
    """Default ``0`` (cdk.json: ``sundial:triggerMaxConcurrency``). The most batches each delay queue's
    event source runs at once in standard mode (its maximum concurrency), so the trigger cannot take
    the whole account's pool from the API, its authorizer, the tick and the high-priority lane. 0:
    what the account's quota leaves once the other lanes, the scanners and 100 for the other
    functions are counted, shared by the delay queues (:attr:`trigger_lane_concurrency`; 873 at the
    defaults). Provisioned mode (``trigger_min_pollers``) has no maximum concurrency;
    ``trigger_max_pollers`` bounds it."""

    account_concurrency: int
    """Default ``1000`` (cdk.json: ``sundial:accountConcurrency``). The account's quota of concurrent
    executions in this Region (Lambda's default: 1,000): the caps of the trigger's lanes and the
    scanners must leave 100 of it to the other functions."""

    trigger_provisioned_concurrency: int
    """Default ``0`` (cdk.json: ``sundial:triggerProvisionedConcurrency``). Execution environments of
    the trigger kept initialized (and billed) at all times; 0: none. Above 0 the event sources
    invoke an alias ("live") of the trigger's current version, which holds them."""

    table_warm_reads: int
    """Default ``0`` (cdk.json: ``sundial:tableWarmReads``). The task table's warm throughput in read
    units per second (0: not set): what the on-demand table serves at once, without throttling while
    it scales. DynamoDB never lowers it again."""

    table_warm_writes: int
    """Default ``0`` (cdk.json: ``sundial:tableWarmWrites``). The task table's warm throughput in write
    units per second (0: not set). A hot second's claims are one write each."""

    lateness_alarm_ms: int
    """Default ``1000`` (cdk.json: ``sundial:latenessAlarmMs``). The lateness alarm fires when the
    trigger's p99 lateness over 5 minutes exceeds this."""

    tracing: Literal["passthrough", "active"]
    """Default ``"passthrough"`` (cdk.json: ``sundial:tracing``). The functions' X-Ray tracing mode.
    "passthrough": a function traces an invocation only when its upstream trace header says sampled
    (an API request API Gateway's stage sampled, and what the API sent while traced), so the tick
    and the scanners, which run every minute, cost nothing in traces. "active": Lambda samples every
    function's invocations itself (1 a second and 5 % of the rest), nearly every idle invocation a
    trace (docs/deploy.md, section 11)."""

    dashboard: bool
    """Default ``False`` (cdk.json: ``sundial:dashboard``). A CloudWatch dashboard of the firing
    pipeline ($3 a month)."""

    alarms: bool
    """Default ``False`` (cdk.json: ``sundial:alarms``). The stack's alarms ($0.10 a month each:
    docs/deploy.md, section 10); an alarm topic (``alarm_topic_arn``) creates them too."""

    signing_key: Literal["parameter", "kms"]
    """Default ``"parameter"`` (cdk.json: ``sundial:signingKey``). Where the tenants' callback signing
    secrets come from (docs/tenancy.md, section 4). "parameter": each is derived (HMAC-SHA256) from
    one root key the functions keep in a Parameter Store SecureString (standard tier, the AWS
    managed key aws/ssm): nothing a month. "kms": each is random, stored encrypted with a
    customer-managed KMS key of the stack ($1 a month): the key has a policy of its own, the signers
    cannot make a secret they were not given, and every use is in CloudTrail. Switching changes
    every tenant's secret: each must be rotated."""

    canary: bool
    """Default ``False`` (cdk.json: ``sundial:canary``). A canary task due every minute, fired through
    the deployment's own path and timed, with alarms (when the stack has alarms) when a minute is
    missed or over a second late (about $0.85 a month: docs/deploy.md, section 15)."""

    scheduler_function_url: bool
    """Default ``True`` (cdk.json: ``sundial:schedulerFunctionUrl``). Serve the EventBridge Scheduler
    API from a Lambda function URL (auth type NONE: the function verifies each request's SigV4
    signature itself), a small function of its own with the API function's code and what its
    ``/scheduler`` routes need: the ``SchedulerFunctionUrl`` output, the endpoint clients sign for.
    On by default: API Gateway's REST API keeps a SigV4 ``Authorization`` header from its function
    (AWS's recording of a signed call: docs/eventbridge.md, section 5), so ``/scheduler`` on the
    API's URL cannot verify a signature; false leaves the URL out (docs/deploy.md, section 5)."""

    alarm_topic_arn: str
    """Default ``""`` (cdk.json: ``sundial:alarmTopicArn``). An SNS topic the alarms notify (and tell
    when they recover); setting it creates the alarms whatever ``alarms`` says. Empty: alarms, when
    ``alarms`` asks for them, only show in CloudWatch."""

    ecs_task_roles: str
    """Default ``""`` (cdk.json: ``sundial:ecsTaskRoles``). The IAM roles (names, comma-separated; a
    name may end in ``*``) the containers of ``ecs`` targets may run as, their task definitions'
    task and execution roles: the triggers may pass them to ECS tasks (``iam:PassRole``, to
    ``ecs-tasks.amazonaws.com`` only), in the deployment's account. Empty: an ``ecs`` target runs
    only task definitions without roles (RunTask refuses the others: a final failure of the run).
    ``stepfunctions`` and ``ecs`` targets are otherwise held, as every target is, to the
    deployment's account and Region (infra/targets.py)."""
