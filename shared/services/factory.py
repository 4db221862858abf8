"""Wiring: the real services from a deployment's settings (each handler calls one, once)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from typing import Any

import boto3

from shared.adapters.executions import SfnStarter
from shared.adapters.job_notify import LambdaJobNotifier
from shared.adapters.queues import SqsStager
from shared.adapters.scans import ScanInvoker
from shared.adapters.stranded import StrandedWatch
from shared.delivery import AwsDelivery, Deliverer, HttpDelivery
from shared.delivery.processor import HttpProcessor, LambdaProcessor, http_client
from shared.domain.codec import target_from_dict
from shared.domain.errors import StorageUnavailable
from shared.domain.ids import new_run_id
from shared.domain.jobs import ProcessorFailed
from shared.domain.own import OwnResources
from shared.domain.tasks import HttpTarget, LambdaTarget
from shared.domain.times import now_ms
from shared.services.access_keys import AccessKeys
from shared.services.backfills import BackfillService
from shared.services.firing import Scanner, Ticker, Trigger
from shared.services.firing.alerts import AlertSender
from shared.services.firing.call import Caller
from shared.services.firing.claim import Claimer
from shared.services.firing.record import Recorder
from shared.services.jobs import JobService, JobSteps, JobTargetStarter
from shared.services.limits import LimitCache, LimitService
from shared.services.ports.jobs import Processor
from shared.services.ports.pipeline import ScanRequester
from shared.services.ports.tenants import RateLimiter
from shared.services.rate_lease import LeasingRateLimiter
from shared.services.scheduler_api import Place, ScheduleEnds, SchedulerService
from shared.services.signing import SigningService
from shared.services.tasks import TaskService
from shared.services.tenants import Authenticator, TenantService
from shared.services.throttling import Throttling
from shared.services.workflows import ItemNodeStarter, WorkflowRuns, WorkflowService, WorkflowTargetStarter
from shared.settings.environment import Settings
from shared.store.access_keys import DynamoAccessKeys
from shared.store.backfills import DynamoBackfills
from shared.store.canary import DynamoCanaryResources
from shared.store.dead_letters import DynamoDeadLetters
from shared.store.dynamo import DynamoTaskRepository
from shared.store.jobs import DynamoJobStore, S3Blobs, spec_of
from shared.store.limits import DynamoLimits
from shared.store.pipeline import DynamoPipelineStore
from shared.store.rate import DynamoRateLimiter
from shared.store.scheduler_api import DynamoSchedules
from shared.store.signing import DynamoSigningSecrets, SecretValues
from shared.store.signing_kms import KmsSecretValues
from shared.store.signing_parameter import ParameterSecretValues, SigningRoot
from shared.store.table import bind_table
from shared.store.tenants import DynamoTenants
from shared.store.throttle import DynamoThrottle
from shared.store.workflows import DynamoWorkflowRuns, DynamoWorkflows


def _stager(settings: Settings) -> SqsStager | None:
    if not settings.delay_queue_urls:
        return None
    return SqsStager(
        settings.delay_queue_urls,
        settings.dead_letter_queue_url,
        settings.timing.lead_ms,
        high_priority_queue_url=settings.high_priority_queue_url or None,
    )


def _own(settings: Settings) -> OwnResources:
    return OwnResources(settings.own_prefix, settings.account_id)


def build_task_service(settings: Settings) -> TaskService:
    bind_table(settings.table_name)
    return TaskService(
        repository=DynamoTaskRepository(
            list_shards=settings.list_shards,
            retention=timedelta(days=settings.run_retention_days),
            default_max_tasks=settings.tenant_limits.max_tasks,
        ),
        dead_letters_store=DynamoDeadLetters(settings.retention_ms, settings.list_shards),
        bucket_shards=settings.bucket_shards,
        retention=timedelta(days=settings.run_retention_days),
        stager=_stager(settings),
        timing=settings.timing,
        own=_own(settings),
        limit_store=DynamoLimits(),
        workflows=DynamoWorkflows(),
    )


def build_backfill_service(settings: Settings) -> BackfillService:
    bind_table(settings.table_name)
    retention = timedelta(days=settings.run_retention_days)
    return BackfillService(
        repository=DynamoTaskRepository(list_shards=settings.list_shards, retention=retention),
        store=DynamoBackfills(settings.list_shards, retention),
        bucket_shards=settings.bucket_shards,
        timing=settings.timing,
    )


def build_limit_service(settings: Settings) -> LimitService:
    bind_table(settings.table_name)
    return LimitService(DynamoLimits())


def build_limit_cache(settings: Settings) -> LimitCache:
    """The trigger's copy of its tenants' limits: one per process (it is a cache)."""
    bind_table(settings.table_name)
    return LimitCache(DynamoLimits())


def build_scan_requests(settings: Settings) -> ScanRequester:
    return ScanInvoker(settings.scanner_function, settings.scan_invocations)


def build_ticker(settings: Settings) -> Ticker:
    bind_table(settings.table_name)
    return Ticker(
        DynamoPipelineStore(settings.retention_ms, settings.list_shards),
        build_scan_requests(settings),
        settings.timing,
        settings.bucket_shards,
        stranded=(
            StrandedWatch(settings.stranded_queue_url, settings.recover_function)
            if settings.stranded_queue_url and settings.recover_function
            else None
        ),
    )


def build_scanner(settings: Settings) -> Scanner:
    bind_table(settings.table_name)
    stager = _stager(settings)
    assert stager is not None, "the scanner needs the delay queues (settings.delay_queue_urls)"
    return Scanner(DynamoPipelineStore(settings.retention_ms, settings.list_shards), stager, settings.timing)


def build_signing_service(settings: Settings) -> SigningService | None:
    """The tenants' signing secrets (None when the deployment has no signing key: unsigned calls).
    One per process: it caches the tenants' secrets (and the parameter mode's root key)."""
    values = _secret_values(settings)
    if values is None:
        return None
    bind_table(settings.table_name)
    return SigningService(DynamoSigningSecrets(values), cache_ms=settings.signing_cache_seconds * 1000)


def _secret_values(settings: Settings) -> SecretValues | None:
    """The deployment's signing key mode (``sundial:signingKey``; docs/tenancy.md, section 4)."""
    if settings.signing_root_parameter:
        return ParameterSecretValues(SigningRoot(settings.signing_root_parameter))
    if settings.signing_key_arn:
        return KmsSecretValues(settings.signing_key_arn)
    return None


def build_canary_resources(settings: Settings) -> DynamoCanaryResources:
    """Which task is the canary of a stack's custom resource (the canary function's)."""
    bind_table(settings.table_name)
    return DynamoCanaryResources()


def build_access_keys(settings: Settings) -> AccessKeys:
    """The tenants' access keys for the EventBridge Scheduler API (one per process: it keeps
    secrets it read for a minute)."""
    bind_table(settings.table_name)
    values = _secret_values(settings)
    return AccessKeys(DynamoAccessKeys(values) if values is not None else None, now_ms)


def build_tenant_service(settings: Settings) -> TenantService:
    bind_table(settings.table_name)
    signing = build_signing_service(settings)
    if signing is None:
        raise StorageUnavailable("this deployment has no signing key: tenants cannot be created")
    return TenantService(DynamoTenants(settings.tenant_limits), signing, settings.tenant_limits)


def build_authenticator(settings: Settings) -> Authenticator:
    """The authorizer's: the admin key and the tenants' keys, by their hashes in the table."""
    bind_table(settings.table_name)
    return Authenticator(DynamoTenants(settings.tenant_limits))


def build_scheduler_service(settings: Settings, tasks: TaskService, region: str, account: str) -> SchedulerService:
    """The EventBridge Scheduler API's operations (docs/eventbridge.md) over ``tasks`` (the task
    service the caller has built already), for schedules in ``region`` and ``account`` (their ARNs')."""
    bind_table(settings.table_name)
    return SchedulerService(tasks, DynamoSchedules(), Place(region, account), tasks.clock)


def build_rate_limiter(settings: Settings) -> RateLimiter:
    """The tenants' request limit: leased a tenth of a second at a time (shared/services/rate_lease.py)."""
    bind_table(settings.table_name)
    return LeasingRateLimiter(DynamoRateLimiter())


def build_workflow_service(settings: Settings, tasks: TaskService | None = None) -> WorkflowService:
    """Workflows over the table (docs/workflows.md): definitions, runs, and their nodes as extra
    runs of the tasks' service (``tasks``: the one the caller has built already)."""
    bind_table(settings.table_name)
    tasks = tasks if tasks is not None else build_task_service(settings)
    retention = timedelta(milliseconds=settings.retention_ms)
    definitions, store = DynamoWorkflows(retention), DynamoWorkflowRuns(retention)
    runs = WorkflowRuns(store, ItemNodeStarter(definitions, tasks), settings.bucket_shards)
    return WorkflowService(definitions, store, runs, tasks, tasks)


def build_trigger(settings: Settings) -> Trigger:
    """The trigger's four steps and its alerts, over the table, the delay queues and the targets."""
    bind_table(settings.table_name)
    queues = _stager(settings)
    assert queues is not None, "the trigger needs the delay queues (settings.delay_queue_urls)"
    http = HttpDelivery(allow_loopback=settings.allow_loopback_targets, allow_private=settings.allow_private_targets)
    tasks = build_task_service(settings)
    workflows = build_workflow_service(settings, tasks)
    aws = AwsDelivery()
    deliverer = Deliverer(http, aws, _job_starter(settings), WorkflowTargetStarter(workflows))
    signer = signing.signer if (signing := build_signing_service(settings)) is not None else None
    store, timing = DynamoPipelineStore(settings.retention_ms, settings.list_shards), settings.timing
    return Trigger(
        Claimer(store, queues, timing),
        Caller(deliverer, timing, signer=signer, throttling=Throttling(DynamoThrottle(), build_limit_cache(settings))),
        Recorder(
            store,
            queues,
            DynamoDeadLetters(settings.retention_ms, settings.list_shards),
            timing,
            chains=tasks,
            workflows=workflows.runs,
            schedules=ScheduleEnds(aws, DynamoSchedules()),
        ),
        AlertSender(deliverer, signer=signer),
    )


def _job_starter(settings: Settings) -> JobTargetStarter | None:
    """Tasks whose target is a job start it from the trigger (when the deployment runs jobs), as
    the task's tenant's job."""
    if not settings.job_state_machine_arn:
        return None
    return JobTargetStarter(build_job_service(settings))


@dataclass(frozen=True)
class JobStepsFactory:
    """What every job step of a process shares (the store, the bucket, the clients); the
    processor is each job's own."""

    store: DynamoJobStore
    blobs: S3Blobs
    http: HttpDelivery
    signing: SigningService | None = None

    def for_job(self, job_id: str) -> JobSteps:
        item = self.store.item(job_id)
        if item is None:
            raise ProcessorFailed(f"job {job_id} does not exist")
        target = target_from_dict(json.loads(item.processor))
        processor: Processor
        if isinstance(target, HttpTarget):
            signing, tenant = self.signing, item.tenant
            processor = HttpProcessor(
                target, self.http, (lambda: signing.signer(tenant)) if signing is not None else None
            )
        elif isinstance(target, LambdaTarget):
            processor = LambdaProcessor(target, _lambda_client())
        else:
            raise ProcessorFailed("a job's processor is an http or a lambda target")
        return JobSteps(self.store, self.blobs, processor, spec_of(job_id, item))


def build_job_steps(settings: Settings) -> JobStepsFactory:
    """Once per process (the job function's cold start)."""
    bind_table(settings.table_name)
    client = http_client(allow_loopback=settings.allow_loopback_targets, allow_private=settings.allow_private_targets)
    return JobStepsFactory(DynamoJobStore(), S3Blobs(settings.jobs_bucket), client, build_signing_service(settings))


@cache
def _lambda_client() -> Any:
    return boto3.client("lambda")


def build_job_service(settings: Settings) -> JobService:
    bind_table(settings.table_name)
    return JobService(
        DynamoJobStore(),
        S3Blobs(settings.jobs_bucket),
        SfnStarter(settings.job_state_machine_arn),
        clock=now_ms,
        new_id=new_run_id,
        own=_own(settings),
        notifier=LambdaJobNotifier(settings.job_function) if settings.job_function else None,
    )
