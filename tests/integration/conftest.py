"""Handlers in-process against moto: a fresh mocked account and table for every test."""

from __future__ import annotations

import copy
import functools
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from moto import mock_aws

from local.moto_patches.index_lag import index_lag
from shared.adapters.scans import ScanInvoker
from shared.adapters.stranded import StrandedWatch
from shared.settings.environment import Settings, env_name, from_env
from shared.settings.tuning import Platform
from shared.topology import SCANNER_TIMEOUT_S, TRIGGER_TIMEOUT_S
from tests.support.events import FakeLambdaContext, api_event, gateway
from tests.support.lateness import LATENESS_MS


@dataclass
class Answer:
    status: int
    body: Any
    headers: dict[str, str]


INDEX_LAG_S = 0.3
"""How long after a write a Query of a table's index sees it, as on AWS (a GSI is eventually
consistent: local/moto_patches/index_lag.py); a test that lists what it just wrote waits for it
(tests/support/eventually.py). A test may pin its own lag and clock inside this one."""


SIGNING_ROOT_PARAMETER = "/sundial-tests/signing-root"
"""The parameter mode's root key in these tests (made by the first function that signs)."""


@pytest.fixture
def signing_mode() -> str:
    """The deployment's ``sundial:signingKey`` in these tests: the default, "parameter"; a module
    that checks both overrides this fixture with a parametrized one."""
    return "parameter"


def signing_resources(mode: str) -> dict[str, str]:
    """The functions' settings of the signing key ``mode`` in a fresh mocked account: the KMS
    key made now, or the root's parameter name (its functions make the parameter)."""
    import boto3

    from shared.store.signing_kms import create_signing_key

    if mode == "kms":
        return {"signing_key_arn": create_signing_key(boto3.client("kms")), "signing_root_parameter": ""}
    return {"signing_key_arn": "", "signing_root_parameter": SIGNING_ROOT_PARAMETER}


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch, signing_mode: str) -> Iterator[None]:
    from functions.jobs import handler as jobs

    # The models' connections and boto3's default session are kept from one test to the next:
    # every botocore client goes through moto's stubber (moto registers it with botocore's
    # built-in handlers when imported, before any client here is made), which each mock_aws()
    # switches on over fresh backends; a session and a client made again for every test were a
    # third of an integration test's CPU.
    with mock_aws(config={"core": {"reset_boto3_session": False}}), index_lag(INDEX_LAG_S, clock=time.monotonic):
        jobs.factory.cache_clear()
        fresh_tables(from_env().table_name, from_env().idempotency_table)
        resources = signing_resources(signing_mode)
        for field in resources:  # the other mode's variable, from outside, is gone too
            monkeypatch.delenv(env_name(field), raising=False)
        use_settings(monkeypatch, **resources)
        yield
        jobs.factory.cache_clear()


_MADE_TABLES: dict[tuple[str, str, str], dict[str, Any]] = {}
"""The tables of each (region, table, idempotency table) as ensure_table and
ensure_idempotency_table made them in moto, empty: kept by this process after its first test."""


def fresh_tables(table_name: str, idempotency_table: str) -> None:
    """The task table and the idempotency table, empty, in the fresh moto of this test. The first
    test of a process makes them as the local runtime does (shared/store/dynamo.py's ensure_table
    and shared/store/idempotency.py's ensure_idempotency_table: ten requests through botocore and
    moto, two thirds of an integration test's setup); every later one gets a copy of moto's tables
    as they stood then (0.1 ms), the same definitions, indexes and time to live."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    from shared.store.dynamo import ensure_table
    from shared.store.idempotency import ensure_idempotency_table
    from shared.store.table import TABLE_MODELS

    region = dynamodb_client().meta.region_name
    backend = dynamodb_backends[DEFAULT_ACCOUNT_ID][region]
    made = _MADE_TABLES.get((region, table_name, idempotency_table))
    if made is None or backend.tables:
        ensure_table(table_name)
        ensure_idempotency_table(idempotency_table)
        _MADE_TABLES[(region, table_name, idempotency_table)] = copy.deepcopy(backend.tables)
        return
    for model in TABLE_MODELS:  # what ensure_table(table_name) sets besides the table
        model.Meta.table_name = table_name
    backend.tables = copy.deepcopy(made)


@functools.cache
def dynamodb_client() -> Any:
    """One boto3 DynamoDB client for the tests' own requests: moto's stubber answers it in every
    test's fresh backends (the ``aws`` fixture keeps boto3's session), and making one was 8 ms."""
    import boto3

    return boto3.client("dynamodb")


ADMIN_KEY = "sk_admin_integration-tests"
"""The deployment's admin key in these tests: its hash in the table, as `sundial admin-key create`
writes it (the ``api`` fixture)."""


def store_admin_key(key: str = ADMIN_KEY) -> None:
    """The admin key's hash in the table (shared/store/admin_key.py), as a deployment's operator puts it."""
    from shared.domain.tenants import key_hash
    from shared.store.admin_key import AdminKeyStore

    AdminKeyStore(dynamodb_client(), from_env().table_name).create(key_hash(key))


@pytest.fixture
def api(aws: None, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Answer]:
    """Call the API Lambda handler as API Gateway would: ``api("POST", "/v1/tasks", body)``,
    through the authorizer (no ``Authorization`` header: the default tenant; ``headers`` may
    carry a tenant's key or :data:`ADMIN_KEY`)."""
    store_admin_key()
    api = gateway()

    def call(method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Answer:
        raw = api(api_event(method, path, body, headers), FakeLambdaContext())
        text = raw.get("body")
        headers = {**{k: v[-1] for k, v in (raw.get("multiValueHeaders") or {}).items()}, **(raw.get("headers") or {})}
        return Answer(raw["statusCode"], json.loads(text) if text else None, headers)

    return call


# --- the firing pipeline ---------------------------------------------------------------------

DELAY_QUEUES = 2
POLL_S = 0.05
"""How soon the tests' event source polls the lanes again after a poll that found messages
(receives that do not wait)."""
IDLE_POLL_S = 0.2
"""...and after one that found none: a message is staged a second before its due time (the
lead), so a fifth of a second between empty polls never makes a fire late, and the pipeline
tests' empty receives were a tenth of the integration suite's CPU at one every 50 ms."""
DELAY_VISIBILITY_S = 4
"""Longer than the lease (2 s from the due time): a redelivered message finds it expired."""
PIPELINE: dict[str, Any] = {
    "bucket_shards": 2,
    "look_ahead_ms": 2000,
    "guard_ms": 1000,
    "lead_ms": 1000,
    "lease_ms": 2000,
    "misfire_tolerance_ms": 1500,
    "allow_loopback_targets": True,
}
"""The pipeline's settings in these tests (fields of ``shared.settings.environment.Settings``): short, so
the tests are; the tests tick by hand and pump the queues with no batching window."""
PIPELINE_PLATFORM = Platform(
    tick_period_ms=None, batching_window_ms=0, visibility_timeout_ms=DELAY_VISIBILITY_S * 1000, trigger_timeout_ms=None
)


def use_settings(monkeypatch: pytest.MonkeyPatch, **fields: Any) -> Settings:
    """The functions' environment with ``fields`` (of ``shared.settings.environment.Settings``) changed, as
    the stack would write it; what they will read back."""
    settings = from_env().with_resources(**fields)
    for name, value in settings.to_env().items():
        monkeypatch.setenv(name, value)
    return settings


LATE_BY_DESIGN = ("missed", "five_minutes", "late", "paused", "crash")
"""Tests whose occurrences fire late on purpose: left out of the lateness summary."""


@dataclass
class StagingNow:
    """A stager told a scanner's shifted ``now``: stages as of the real one."""

    stager: Any
    shift_ms: int

    def stage(self, occurrences: Any, now_ms: int) -> Any:
        return self.stager.stage(occurrences, now_ms - self.shift_ms)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stager, name)


class Invocations:
    """Lambda's Invoke API as the tick's :class:`ScanInvoker` (and its :class:`StrandedWatch`)
    calls it: each asynchronous invocation's event kept, to be run by :meth:`Pipeline.tick` in
    order."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def invoke(self, FunctionName: str, InvocationType: str, Payload: bytes) -> dict[str, Any]:
        assert InvocationType == "Event", InvocationType
        self.sent.append(json.loads(Payload))
        return {"StatusCode": 202}


@dataclass
class Pipeline:
    """The queues of the pipeline on moto, and Lambda's SQS event source over them."""

    sqs: Any
    urls: dict[str, str]
    arns: dict[str, str]
    workers: list[threading.Thread] = field(default_factory=list)
    """The batches :meth:`fire` handed to a worker, while it fires."""
    scans: list[dict[str, Any]] = field(default_factory=list)
    """What each scanner invocation :meth:`tick` ran answered."""
    drains: list[dict[str, Any]] = field(default_factory=list)
    """What each drain of the stranded queue :meth:`tick` asked for answered (the recovering
    trigger's)."""

    def pump(self, queue: str, handler: Callable[..., Any], until: Callable[[], bool], timeout: float) -> bool:
        """Feed ``queue``'s messages to ``handler`` in Lambda batches until ``until()`` or timeout."""
        from local.sqs_lambda import invoke_batch, receive

        deadline = time.time() + timeout
        while time.time() < deadline:
            if until():
                return True
            messages = receive(self.sqs, self.urls[queue], wait_s=1)
            invoke_batch(self.sqs, self.urls[queue], self.arns[queue], handler, messages)
        return until()

    def fire(self, until: Callable[[], bool], timeout: float = 15) -> bool:
        """Run the trigger over every delay queue (and the high-priority trigger over its own)
        until ``until()``: as Lambda's event source does, each batch is handed to its own worker
        and the polling goes straight on (a batch waits for its due times; polling behind it
        would make the next queue's fires late)."""
        from functions.trigger.handler import handler as trigger
        from functions.trigger_high.handler import handler as trigger_high
        from local.sqs_lambda import invoke_batch, receive
        from shared.topology import HIGH_PRIORITY_QUEUE

        lanes = [*((f"delay-{i}", trigger) for i in range(DELAY_QUEUES)), (HIGH_PRIORITY_QUEUE, trigger_high)]

        workers = self.workers = []
        deadline = time.time() + timeout
        try:
            while time.time() < deadline:
                if until():
                    return True
                found = False
                for name, handler in lanes:
                    messages = receive(self.sqs, self.urls[name], wait_s=0)
                    if messages:
                        found = True
                        args = (self.sqs, self.urls[name], self.arns[name], handler, messages)
                        worker = threading.Thread(target=invoke_batch, args=args, daemon=True)
                        worker.start()
                        workers.append(worker)
                time.sleep(POLL_S if found else IDLE_POLL_S)  # the event source's polling, not a wait of the test's
            return until()
        finally:
            for worker in workers:  # nothing of this test may run on into the next
                worker.join(timeout=10)
            self.workers = []

    def idle(self) -> bool:
        """Nothing is left to fire: no batch is under way and no lane's queue holds a message
        (visible, delayed or in flight). A duplicate could only come from one of those."""
        from shared.topology import HIGH_PRIORITY_QUEUE

        if any(worker.is_alive() for worker in self.workers):
            return False
        lanes = [*(f"delay-{i}" for i in range(DELAY_QUEUES)), HIGH_PRIORITY_QUEUE]
        return not any(held(self, lane) for lane in lanes)

    def settle(self, timeout: float = 15) -> None:
        """Fire until :meth:`idle`: whatever was staged has fired, or been dropped or skipped,
        and nothing more can fire until a tick stages it (instead of firing on for a while in
        case a duplicate comes)."""
        assert self.fire(until=self.idle, timeout=timeout), "the pipeline still had something to fire"

    def tick(self, at: float | None = None) -> None:
        """The minute rule fires: tick, then every scanner invocation it asked Lambda for, in
        order. With ``at`` (a ``time.time()`` instant) the scans cover the window a tick then
        would (a fake clock for the scanner: a tick seconds later, or earlier, without waiting for
        it), and stage what they find as staging now does (its SQS delays counted from now, so a
        message is not held longer than it would be)."""
        from functions.recover.handler import handler as recover
        from functions.scanner.handler import handler as scanner
        from functions.scanner.handler import scanner as built
        from functions.tick.handler import handler as tick
        from functions.tick.handler import ticker
        from local.apigw import LocalContext
        from shared.domain.times import now_ms

        shift_ms = 0 if at is None else round(at * 1000) - now_ms()
        scanning, ticking = built(), ticker()
        stager, invoker, watch = scanning.stager, ticking.requests, ticking.stranded
        assert watch is not None, "the tick looks at the stranded queue"
        events, drains = Invocations(), Invocations()
        scanning.clock = ticking.clock = lambda: now_ms() + shift_ms
        scanning.stager = StagingNow(stager, shift_ms)  # type: ignore[assignment]
        ticking.requests = ScanInvoker(invoker.function_name, invoker.invocations, client=lambda: events)  # type: ignore[attr-defined]
        ticking.stranded = StrandedWatch(
            watch.queue_url,  # type: ignore[attr-defined]
            watch.function_name,  # type: ignore[attr-defined]
            sqs=lambda: self.sqs,
            lambda_client=lambda: drains,
        )
        try:
            tick({}, LocalContext())
            for event in events.sent:
                self.scans.append(scanner(event, LocalContext(timeout_s=SCANNER_TIMEOUT_S)))
            for event in drains.sent:
                self.drains.append(recover(event, LocalContext(timeout_s=TRIGGER_TIMEOUT_S)))
        finally:
            scanning.clock = ticking.clock = now_ms
            scanning.stager, ticking.requests, ticking.stranded = stager, invoker, watch

    def dead_letters(self) -> list[dict[str, Any]]:
        answer = self.sqs.receive_message(QueueUrl=self.urls["dead-letters"], MaxNumberOfMessages=10, WaitTimeSeconds=0)
        return [json.loads(m["Body"]) for m in answer.get("Messages", [])]


def held(pipeline: Pipeline, queue: str) -> int:
    """The messages ``queue`` holds: visible, delayed and in flight."""
    names = [
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesDelayed",
        "ApproximateNumberOfMessagesNotVisible",
    ]
    url = pipeline.urls[queue]
    attributes = pipeline.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
    return sum(int(attributes[name]) for name in names)


@pytest.fixture
def pipeline(aws: None, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[Pipeline]:
    import boto3

    from local.queues import create_queues
    from shared.adapters import queues as queues_module
    from shared.topology import HIGH_PRIORITY_QUEUE, STRANDED, queues

    sqs = boto3.client("sqs")
    urls, arns = create_queues(sqs, queues(DELAY_QUEUES, DELAY_VISIBILITY_S))
    settings = use_settings(
        monkeypatch,
        **PIPELINE,
        delay_queue_urls=tuple(urls[f"delay-{i}"] for i in range(DELAY_QUEUES)),
        high_priority_queue_url=urls[HIGH_PRIORITY_QUEUE],
        dead_letter_queue_url=urls["dead-letters"],
        scanner_function="sundial-scanner",
        stranded_queue_url=urls[STRANDED.name],
        recover_function="sundial-recover",
    )
    assert not settings.platform_problems(PIPELINE_PLATFORM), settings.platform_problems(PIPELINE_PLATFORM)
    queues_module._sqs.cache_clear()
    _clear_function_caches()
    from functions.trigger import handler as trigger

    def record(fired: Any) -> None:
        on_time = not any(word in request.node.name for word in LATE_BY_DESIGN)
        if on_time and fired.staged.attempt == 1 and fired.lateness_ms is not None:
            LATENESS_MS.append((fired.lateness_ms, request.node.name))

    trigger.observers.append(record)
    yield Pipeline(sqs, urls, arns)
    trigger.observers.remove(record)
    _clear_function_caches()
    queues_module._sqs.cache_clear()


def _clear_function_caches() -> None:
    from functions.api import common as api
    from functions.jobs import handler as jobs
    from functions.recover import handler as recover
    from functions.scanner import handler as scanner
    from functions.tick import handler as tick
    from functions.trigger import handler as trigger

    api.reset()
    jobs.factory.cache_clear()
    scanner.scanner.cache_clear()
    recover.stranded_queue_url.cache_clear()
    recover._sqs.cache_clear()
    tick.ticker.cache_clear()
    trigger.trigger.cache_clear()


@pytest.fixture
def receiver() -> Iterator[Any]:
    from tests.support.receiver import running_receiver

    with running_receiver() as running:
        yield running


@contextmanager
def jobs_on(monkeypatch: pytest.MonkeyPatch, state_machine_arn: str, bucket: str) -> Iterator[None]:
    """The job functions and the API wired to a state machine on the mocked account (its table,
    its jobs bucket, fresh clients), and unwired after: the models' connection and the cached
    clients belong to the mock account that is going."""
    import boto3

    from functions.jobs import handler as jobs
    from shared.adapters import executions
    from shared.store.dynamo import ensure_table
    from shared.store.table import TABLE_MODELS

    def forget() -> None:
        for model in TABLE_MODELS:
            model._connection = None
        executions._sfn.cache_clear()
        jobs.factory.cache_clear()

    forget()
    ensure_table("sundial-test")
    boto3.client("s3").create_bucket(Bucket=bucket)
    from local.stepfunctions import FUNCTION_NAME

    use_settings(
        monkeypatch,
        jobs_bucket=bucket,
        job_state_machine_arn=state_machine_arn,
        job_function=FUNCTION_NAME,  # the API's notify of a threshold a progress report crossed
        allow_loopback_targets=True,
    )
    try:
        yield
    finally:
        forget()
