"""The whole system on one machine: moto as its own process, the table and queues created from
the same definitions as the stack (the PynamoDB models, shared/topology.py), the jobs state
machine synthesized from the stack's own construct (infra/jobs.py) and executed by moto's Step
Functions, and the real handlers behind the parts AWS would run: API Gateway, the minute rule,
Lambda's SQS pollers, the job function Step Functions invokes (local/functions.py). With a data
folder (``LocalSettings.data``) moto's state is kept there across restarts (docs/devserver.md):
the resources found there are used again, the admin key among them."""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from local import deadline
from local.apigw import SCHEDULER_RESOURCE, AuthorizerCache, LocalContext, resource_of, with_authorizer, with_limits
from local.attribution import attributed, attributed_to, current_function
from local.botocore_loader import share_data_loader
from local.clock import VirtualClock
from local.data_lock import DataLock
from local.faults import Injector, install_faults
from local.function_url import as_default_tenant
from local.functions import EventInvokeConfig, FunctionServer
from local.http_adapter import make_server
from local.moto_host.journal import Journal
from local.moto_host.journal import remove as remove_journal
from local.moto_host.persist import SNAPSHOT
from local.moto_server import EarlyMoto, MotoServer, quiet_metrics
from local.private_files import private_folder
from local.recursion import carry_lineage
from local.settings import (
    DELAY_VISIBILITY_S,
    FUNCTIONS_URL_ENV,
    JOB_STATE_MACHINE_ARN,
    MOTO_CLOCK_ENV,
    MOTO_DATA_ENV,
    LocalSettings,
    user_lambdas,
)
from local.settings import (
    TRIGGER_TIMEOUT_S as LOCAL_TRIGGER_TIMEOUT_S,
)
from local.stepfunctions import ACCOUNT, FUNCTION_NAME, REGION, ROLE_ARN, STATE_MACHINE_NAME, JobsDefinition
from shared.domain.tenants import new_admin_key
from shared.domain.times import use_clock
from shared.settings.environment import Settings
from shared.topology import (
    HIGH_PRIORITY_QUEUE,
    HIGH_PRIORITY_TRIGGER,
    RECOVER,
    SCAN_RETRY_ATTEMPTS,
    SCANNER_TIMEOUT_S,
    STRANDED,
    ConsumerSpec,
)

if TYPE_CHECKING:
    from local.advance import Advance

POWERTOOLS_ENV = {"POWERTOOLS_TRACE_DISABLED": "1", "POWERTOOLS_LOG_LEVEL": "WARNING"}


def use_powertools_env() -> None:
    """:data:`POWERTOOLS_ENV` where the environment does not say otherwise, and the functions'
    logger at the ``POWERTOOLS_LOG_LEVEL`` that results. Powertools reads the variable when the
    logger is built, on import of shared/observability.py, which ``python -m local`` (and the
    bench) import before :meth:`Runtime.start` runs: the logger stayed at INFO, and `make run`
    printed a JSON line for every task registered among its one line per fire."""
    from shared.observability import logger

    for key, value in POWERTOOLS_ENV.items():
        os.environ.setdefault(key, value)
    logger.setLevel(os.environ.get("POWERTOOLS_LOG_LEVEL", POWERTOOLS_ENV["POWERTOOLS_LOG_LEVEL"]))


SWITCH_INTERVAL_S = 0.001
"""How long a thread of the runtime's process keeps the interpreter lock while others wait
(Python's default is 5 ms): every function of the runtime shares this process, so a trigger
woken at its due time waits for the lock behind a flood's threads; with 1 ms, make bench
--priority measured the high tasks' p99 in a flood 13 ms instead of 39 (unloaded 2.7-2.9 ms)."""
LOCAL_STACK_NAME = "sundial-local"
"""What the runtime's resources are named after where the stack's are after the stack (the root key
of the signing secrets, ``/sundial-local/signing-root``)."""
ADMIN_KEY_PARAMETER = f"/{LOCAL_STACK_NAME}/admin-key"
"""The admin key the runtime made up (none given), as a SecureString of moto's Parameter Store: kept
with moto's state, so a restart on the same data folder uses it again (a saved CLI profile works)."""
VIRTUAL_NOW_PARAMETER = f"/{LOCAL_STACK_NAME}/virtual-now"
"""Where a data folder's virtual clock is kept: the time its last advance ended at."""
ADVANCED_TOLERANCE_MS = 60_000
"""How far ahead of the wall a data folder's kept virtual clock may be for a runtime on the wall's
clock to take it (a clock advanced a few seconds, then left: the wall passes it soon)."""
SIGNING_KEY_ALIAS = f"alias/{LOCAL_STACK_NAME}-signing"
"""The KMS signing key's alias (``signing_key`` ``kms``): a restart finds the key there."""
FUNCTION_MODULES = (
    "functions.api.access",
    "functions.api.handler",
    "functions.authorizer.handler",
    "functions.jobs.handler",
    "functions.recover.handler",
    "functions.scanner.handler",
    "functions.tick.handler",
    "functions.trigger.handler",
    "functions.trigger_high.handler",
)
"""The functions' modules (their clients and settings are made when first called, not at import):
imported while moto's process starts, about 0.8 s of a start that otherwise waited for it."""
RUNTIME_MODULES = ("local.sqs_lambda", "local.advance")
"""The runtime's own modules that import the functions' observability (Powertools, X-Ray's SDK,
0.15 to 0.2 s): imported while moto's process starts, not before it is launched."""
SERVICES_CALLED = ("dynamodb", "sqs", "kms", "ssm", "lambda", "stepfunctions", "s3")
"""The AWS services the runtime and its functions call."""
MOTO_STATE_TIMEOUT_S = 120.0
"""How long a start waits for a moto that keeps its state to load it and answer, and a stop for it
to write its last snapshot and exit (seconds with 10,000 tasks: docs/measured.md)."""
SCANNER_FUNCTION = "sundial-scanner"
"""The scanner's name, which the tick invokes asynchronously (the function server runs it)."""
RECOVER_FUNCTION = "sundial-recover"
"""The recovering trigger's name, which the tick invokes asynchronously when the stranded queue
holds messages (the function server runs it; no poller watches that queue)."""
NORMAL_CLAIMS = 4
"""Normal-lane claims under way at once (Claimer.normal_claims): moto serves one request at a
time in effect, so more only queue inside it, where a high-priority claim would queue behind them."""


def _collect_and_freeze() -> None:
    """A full collection, then every object left moved out of the collector's reach (``gc.freeze``):
    later collections walk only what is made afterwards."""
    gc.collect()
    gc.freeze()


@dataclass
class Runtime:
    """The whole system, run with ``settings`` (local/settings.py; see docs/local-runtime.md)."""

    settings: LocalSettings = field(default_factory=LocalSettings)
    workers: int = 128
    on_fire: Callable[[Any], None] | None = None
    early: EarlyMoto | None = None
    """moto's process started before the runtime (``make run``: local/__main__.py), configured when
    the runtime starts moto; without one, the runtime starts its own."""
    function_settings: Settings = field(init=False)
    """What the functions run with: ``settings.functions`` and the queues' URLs, in their
    environment (``os.environ``, as Lambda would have it)."""
    moto: MotoServer = field(init=False)
    functions: FunctionServer = field(init=False)
    stopping: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _pool: ThreadPoolExecutor | None = None
    _data_lock: DataLock | None = None
    """The data folder's lock, held while the runtime runs (one runtime per data folder)."""
    _first_start: bool = False
    """The data folder held no state when this runtime started."""
    clock: VirtualClock | None = None
    """The virtual clock (``settings.clock`` "virtual"), and what advances it (local/advance.py)."""
    advance: Advance | None = None
    faults: Injector | None = None
    """AWS's faults injected at random (``settings.faults``: local/faults.py), when asked for."""
    _pools: dict[str, ThreadPoolExecutor] = field(default_factory=dict)
    """Workers of their own, by function: the high-priority trigger's (as its reserved
    concurrency in AWS); the other functions share ``_pool``, as an account's unreserved pool."""

    @property
    def port(self) -> int:
        return self.settings.port

    @property
    def delay_queues(self) -> int:
        return self.settings.delay_queues

    def start(self) -> None:
        self._use_clock()
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        carry_lineage()  # before any client: their SQS sends carry the invocation's lineage
        share_data_loader()  # each thread's connections parse botocore's data files once, not anew
        synth = JobsDefinition()  # synthesized by a subprocess while moto starts, or cached
        self.functions = FunctionServer()
        self.functions.start()
        self._start_moto()  # (the functions' modules imported meanwhile, Powertools' environment set)
        functions = self.settings.functions
        if not functions.admin_key:  # none given: the data folder's, or one for this run (printed at start)
            functions = functions.with_resources(admin_key=self._made_up_admin_key())
        self._use(functions)
        # moto's first state machine costs it ~1.5 s (it imports its ASL parser): done meanwhile.
        jobs_setup = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jobs-setup")
        jobs_created = jobs_setup.submit(self._create_jobs, synth)
        jobs_setup.shutdown(wait=False)
        urls, arns = self._create_resources()
        # Imported only now: every client must be created after AWS_ENDPOINT_URL points at moto.
        import boto3

        from functions.api.access import is_public
        from functions.api.handler import handler as api
        from functions.authorizer.handler import authorize
        from functions.jobs.handler import handler as job_step
        from functions.recover.handler import handler as recover
        from functions.scanner.handler import handler as scanner
        from functions.tick.handler import handler as tick
        from functions.trigger import handler as trigger_module
        from functions.trigger_high.handler import handler as trigger_high
        from shared.topology import consumers

        quiet_metrics()
        self._warm()
        self._kept(jobs_created)
        if self.on_fire is not None:
            trigger_module.observers.append(self.on_fire)
        handlers = self._triggers(trigger_module.handler, trigger_high)
        self.functions.handlers[FUNCTION_NAME] = attributed("jobs", job_step)
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="lambda")
        self.functions.submit = self._pool.submit if self.clock is None else self._counted(self._pool.submit)
        self._asynchronous(SCANNER_FUNCTION, attributed("scanner", scanner), self._scanner_config(urls))
        # the stack's: no retry, and the next tick asks again while messages wait
        self._asynchronous(
            RECOVER_FUNCTION,
            deadline.enforced(attributed(RECOVER, recover), LOCAL_TRIGGER_TIMEOUT_S),
            EventInvokeConfig(timeout_s=LOCAL_TRIGGER_TIMEOUT_S),
        )
        for name, (module, attribute) in user_lambdas(self.settings.lambdas).items():
            # your own functions (LocalSettings.lambdas): tasks' lambda targets, jobs' processors
            self.functions.handlers[name] = getattr(importlib.import_module(module), attribute)
        self._pools[HIGH_PRIORITY_TRIGGER] = ThreadPoolExecutor(
            max_workers=self.settings.high_priority_concurrency, thread_name_prefix="lambda-high"
        )
        gateway = self._gateway(api, authorize, is_public)
        pollers = [
            (f"poll-{c.queue}", boto3.client("sqs"), urls[c.queue], arns[c.queue], handlers[c.function], c)
            for c in consumers(self.delay_queues, self.settings.trigger_batch_size)
        ]
        if self.clock is not None:
            gateway = self._with_clock_routes(gateway, pollers, attributed("tick", tick), trigger_module)
        self._server = make_server("127.0.0.1", self.port, gateway, self._scheduler_url())
        # Everything built so far lives as long as the process: keep it out of the collector's
        # way. Full collections over it (botocore's models are ~200,000 objects) took up to
        # 0.5 s with every thread stopped, the largest lateness `make bench` saw. Most of it was
        # frozen while moto started (_start_moto): this collection walks only what came since.
        _collect_and_freeze()
        self._serve(pollers, attributed("tick", tick))

    def _kept(self, jobs_created: Any) -> None:
        """Once the resources are made: at a data folder's first start, a snapshot of them (its
        KMS key is in no journal: local/moto_host/journal.py)."""
        jobs_created.result()
        if self._first_start:
            self.moto.snapshot()

    def _triggers(self, trigger: Any, trigger_high: Any) -> dict[str, Callable[..., Any]]:
        """The triggers' handlers by function, each invocation stopped at the local triggers'
        timeout (local/deadline.py: its checks installed here, for the recover function's too);
        under injected faults, each stopped or failed invocation noted with its batch
        (local/faults.py)."""
        deadline.install()
        handlers = {
            "trigger": deadline.enforced(attributed("trigger", trigger), LOCAL_TRIGGER_TIMEOUT_S),
            HIGH_PRIORITY_TRIGGER: deadline.enforced(
                attributed(HIGH_PRIORITY_TRIGGER, trigger_high), LOCAL_TRIGGER_TIMEOUT_S
            ),
        }
        return self.faults.invocations(handlers) if self.faults is not None else handlers

    def _gateway(self, api: Any, authorize: Any, public: Any) -> Any:
        """API Gateway as the stack sets it up: the authorizer (its answers cached) before the API
        function, but on the routes that have none (the public ones, and the EventBridge Scheduler
        API's ``/scheduler/{proxy+}``, whose function verifies SigV4 itself)."""
        return with_authorizer(
            with_limits(attributed("api", api)),
            attributed("authorizer", authorize),
            lambda path: public(path) or resource_of(path).path == SCHEDULER_RESOURCE,
            anonymous=self.function_settings.default_tenant,
            cache=AuthorizerCache(self.settings.authorizer_cache_s),
        )

    def _scheduler_url(self) -> Any:
        """The scheduler function behind its function URL, as the stack serves the EventBridge
        Scheduler API (local/function_url.py): verifying signatures with ``scheduler_auth``
        ``sigv4``, else reading every request as the default tenant's."""
        from functions.scheduler.handler import handler as url_handler

        function = with_limits(attributed("scheduler", url_handler))
        if self.settings.scheduler_auth == "sigv4":
            return function
        return as_default_tenant(function, self.function_settings.default_tenant)

    def _use_clock(self) -> None:
        """The virtual clock as the process's (``shared.domain.times.use_clock``), when asked for:
        it starts at the wall's now, then stands still until an advance moves it."""
        if self.settings.clock == "virtual":
            self.clock = VirtualClock(int(time.time() * 1000))
            use_clock(self.clock)

    def _serve(self, pollers: list[Any], tick: Callable[..., Any]) -> None:
        """The API's server, and on the wall the tick and the pollers (on the virtual clock the
        advance drives those: local/advance.py)."""
        assert self._server is not None
        self._spawn("api", self._server.serve_forever, 0.2)
        if self.clock is not None:
            return
        self._spawn("tick", self._tick_forever, tick)
        for name, *args in pollers:
            self._spawn(name, self._poll_forever, *args)

    def _with_clock_routes(
        self, gateway: Any, pollers: list[Any], tick: Callable[..., Any], trigger_module: Any
    ) -> Any:
        """``gateway`` with the virtual clock's routes, driven by an :class:`Advance` (local/advance.py)."""
        from local.advance import tick_of, with_clock_routes

        return with_clock_routes(gateway, self._advance(pollers, tick_of(tick), trigger_module))

    def _advance(self, pollers: list[Any], tick: Callable[[], Any], trigger_module: Any) -> Advance:
        """What moves the virtual clock, driving the tick and the trigger's lanes (and the
        trigger's records inline on their batch's thread: local/advance.py ``InlineExecutor``)."""
        import boto3

        from functions.tick.handler import ticker
        from local.advance import Advance, InlineExecutor, Lane

        assert self.clock is not None
        lanes = [
            Lane(url, arn, handler, self._pools.get(consumer.function, self._pool).submit)  # type: ignore[union-attr]
            for _, _, url, arn, handler, consumer in pollers
        ]
        self.advance = Advance(
            clock=self.clock,
            moto=self.moto,
            sqs=boto3.client("sqs"),
            table=self.function_settings.table_name,
            lanes=lanes,
            tick=tick,
            ticker=ticker(),
            keep=self._keep_clock if self.settings.data else None,
        )
        trigger_module.observers.append(self.advance.count)
        trigger_module.ThreadPoolExecutor = InlineExecutor
        return self.advance

    def _counted(self, submit: Callable[..., Any]) -> Callable[[Callable[[], None]], Any]:
        """``submit`` with each unit of work counted busy on the virtual clock from its hand-over."""
        clock = self.clock
        assert clock is not None

        def counted(work: Callable[[], None]) -> Any:
            clock.hand_over()

            def run() -> None:
                with clock.busy(carried=True):
                    work()

            return submit(run)

        return counted

    def _start_moto(self) -> None:
        """moto's process, its state loaded from the data folder when there is one, its SQS on
        the runtime's clock when that is virtual."""
        env = {FUNCTIONS_URL_ENV: self.functions.url}
        if self.settings.data:
            env[MOTO_DATA_ENV] = str(self._claim_data())
        if self.clock is not None:
            env[MOTO_CLOCK_ENV] = "1"
        self.moto = MotoServer(self.settings.moto_port, env=env, shown=bool(self.settings.data))
        self.moto.launch(self.early)
        self.moto.use()  # before any client: the functions' modules create theirs when first called
        use_powertools_env()
        for module in (*FUNCTION_MODULES, *RUNTIME_MODULES):  # while moto imports its own and loads a kept state
            importlib.import_module(module)
        self._load_service_models()
        self._build_api_document()
        _collect_and_freeze()  # the imports' objects, while moto starts: 0.04-0.09 s a start waited for
        self.moto.wait_ready(timeout=MOTO_STATE_TIMEOUT_S if self.settings.data else 30.0)
        if self.clock is not None:
            self._resume_clock()
            self.moto.set_clock(self.clock.now_ms())
        else:
            self._refuse_an_advanced_folder()
        self.faults = install_faults(self.settings.faults, self.settings.data)  # local/faults.py (none unless asked)

    @staticmethod
    def _load_service_models() -> None:
        """A client of each service the runtime calls, made while moto starts: the first client of
        a service parses its model (botocore's loader, shared by every session: local/botocore_loader.py
        keeps it), 0.05 to 0.1 s each that the start would otherwise spend after moto answers. A
        client is made without a request."""
        import boto3

        for service in SERVICES_CALLED:
            boto3.client(service)

    @staticmethod
    def _build_api_document() -> None:
        """The API's OpenAPI document, built while moto starts (0.13 s): a deployed API builds it at
        its first ``GET /v1/openapi.json`` and keeps it (``functions.api.handler.openapi_document``);
        here the runtime would otherwise wait for moto idle, and then build it for the first
        request."""
        from functions.api.handler import openapi_document

        openapi_document("/")  # the local runtime's API answers at its root: no stage in its paths

    def _claim_data(self) -> Path:
        """The data folder, locked for this runtime (a second one on it is refused), emptied
        first when ``fresh``."""
        folder = private_folder(Path(self.settings.data))  # its snapshot holds secrets in clear
        self._data_lock = DataLock(folder)
        self._data_lock.claim(wait_s=MOTO_STATE_TIMEOUT_S + 10)  # a runtime stopping on it: once it saved
        if self.settings.fresh:
            (folder / SNAPSHOT).unlink(missing_ok=True)
            remove_journal(folder)
        self._first_start = not (folder / SNAPSHOT).exists() and not Journal(folder).numbers()
        return folder

    def _resume_clock(self) -> None:
        """A data folder's virtual clock starts where its last advance left it (kept in moto's
        Parameter Store with the state it advanced, :meth:`_keep_clock`), not at the wall's now:
        its tasks' marks and messages are on the virtual time, which never goes back."""
        assert self.clock is not None
        kept = self._kept_clock()
        if kept is not None:
            self.clock.resume_at(kept)

    def _refuse_an_advanced_folder(self) -> None:
        """A runtime on the wall's clock refuses a data folder a virtual clock advanced past the
        wall: its tasks would wait for the wall to catch up (weeks), its marks stand there."""
        from local.advance import iso

        kept = self._kept_clock()
        wall = int(time.time() * 1000)  # wall: the runtime's clock is the wall's
        if kept is not None and kept > wall + ADVANCED_TOLERANCE_MS:
            ahead = (kept - wall) / 3_600_000
            raise RuntimeError(
                f"the data folder {self.settings.data} was advanced by a virtual clock to {iso(kept)}, "
                f"{ahead:.1f} h ahead of the wall: start it with {LocalSettings.setting_name('clock')}=virtual, "
                f"or empty with {LocalSettings.setting_name('fresh')}=1, or name another "
                f"{LocalSettings.setting_name('data')}"
            )

    def _kept_clock(self) -> int | None:
        """Where a virtual clock left this data folder (None: none ever advanced it)."""
        import boto3

        if not self.settings.data:
            return None
        ssm = boto3.client("ssm")
        try:
            return int(ssm.get_parameter(Name=VIRTUAL_NOW_PARAMETER)["Parameter"]["Value"])
        except ssm.exceptions.ParameterNotFound:
            return None

    def _keep_clock(self, now_ms: int) -> None:
        import boto3

        boto3.client("ssm").put_parameter(Name=VIRTUAL_NOW_PARAMETER, Value=str(now_ms), Type="String", Overwrite=True)

    def _made_up_admin_key(self) -> str:
        """The admin key kept in moto's Parameter Store (a data folder's earlier run made it), or a
        new one, kept there."""
        import boto3

        ssm = boto3.client("ssm")
        try:
            value: str = ssm.get_parameter(Name=ADMIN_KEY_PARAMETER, WithDecryption=True)["Parameter"]["Value"]
            return value
        except ssm.exceptions.ParameterNotFound:
            key = new_admin_key()
            ssm.put_parameter(Name=ADMIN_KEY_PARAMETER, Value=key, Type="SecureString")
            return key

    def _asynchronous(self, name: str, handler: Callable[..., Any], config: EventInvokeConfig) -> None:
        """A function the tick invokes asynchronously (through moto's Lambda), and what Lambda does
        with its events (the stack's ``EventInvokeConfig``)."""
        self.functions.event_configs[name] = config
        self.functions.handlers[name] = handler

    def _scanner_config(self, urls: dict[str, str]) -> EventInvokeConfig:
        import boto3

        return EventInvokeConfig(
            # Lambda's waits are 60 and 120 s: one and two tick periods, which the runtime shortens
            retry_delays_s=tuple(self.settings.tick_period_s * (i + 1) for i in range(SCAN_RETRY_ATTEMPTS)),
            on_failure=self._dead_letter_event(boto3.client("sqs"), urls["dead-letters"]),
            timeout_s=SCANNER_TIMEOUT_S,
        )

    def _use(self, settings: Settings) -> None:
        """The functions' environment (what ``shared.settings.environment.from_env`` reads back)."""
        self.function_settings = settings
        os.environ.update(settings.to_env())

    @staticmethod
    def _warm() -> None:
        """What Lambda's init phase would have done before the first event: build each
        function's services and open their connections, so the first fire is not a cold start."""
        from functions.api.common import jobs, tasks
        from functions.jobs.handler import factory
        from functions.scanner.handler import scanner
        from functions.tick.handler import ticker
        from functions.trigger.handler import trigger
        from shared.store.models import TaskItem

        tasks()
        jobs()
        factory()
        ticker()
        scanner()
        built = trigger()
        built.claimer.normal_claims = threading.BoundedSemaphore(NORMAL_CLAIMS)
        TaskItem.exists()
        built.claimer.store.watermark(0)

    def _create_resources(self) -> tuple[dict[str, str], dict[str, str]]:
        import boto3

        from local.queues import QUEUE_PREFIX, create_queues
        from shared.domain.tenants import key_hash
        from shared.store.admin_key import AdminKeyStore
        from shared.store.dynamo import ensure_table
        from shared.store.idempotency import ensure_idempotency_table
        from shared.store.signing_kms import create_signing_key
        from shared.store.signing_parameter import root_parameter_name
        from shared.store.status_backfill import backfill_once
        from shared.topology import queues

        urls, arns = create_queues(boto3.client("sqs"), queues(self.delay_queues, DELAY_VISIBILITY_S))
        # sundial:signingKey: the KMS key made now, or the root's parameter (its functions make it)
        kms = self.settings.signing_key == "kms"
        settings = self.function_settings.with_resources(
            delay_queue_urls=tuple(urls[f"delay-{i}"] for i in range(self.delay_queues)),
            high_priority_queue_url=urls[HIGH_PRIORITY_QUEUE],
            dead_letter_queue_url=urls["dead-letters"],
            scanner_function=SCANNER_FUNCTION,
            job_function=FUNCTION_NAME,  # the API sends a notify a progress report crossed through it
            scan_invocations=self.settings.deployment.scanner_max_concurrency,
            stranded_queue_url=urls[STRANDED.name],
            recover_function=RECOVER_FUNCTION,
            own_prefix=QUEUE_PREFIX,  # the runtime's queues (and its job function) are sundial-*
            account_id=ACCOUNT,
            signing_key_arn=self._signing_key(boto3.client("kms"), create_signing_key) if kms else "",
            signing_root_parameter="" if kms else root_parameter_name(LOCAL_STACK_NAME),
        )
        self._use(settings)
        ensure_table(settings.table_name)
        ensure_idempotency_table(settings.idempotency_table)
        # items a kept data folder holds from before the status index: put in it once (a Scan)
        backfill_once(boto3.client("dynamodb"), settings.table_name, settings.list_shards)
        # The admin key as a deployed stack keeps it: its hash, written as `sundial admin-key create`
        # does; kept from an earlier run, or replaced as `sundial admin-key rotate` does when another is given.
        admin = AdminKeyStore(boto3.client("dynamodb"), settings.table_name)
        if admin.current_hash() != key_hash(settings.admin_key):
            admin.rotate(key_hash(settings.admin_key))
        return urls, arns

    @staticmethod
    def _signing_key(kms: Any, create: Callable[[Any], str]) -> str:
        """The signing key under :data:`SIGNING_KEY_ALIAS` (kept from an earlier run), or a new one there."""
        try:
            arn: str = kms.describe_key(KeyId=SIGNING_KEY_ALIAS)["KeyMetadata"]["Arn"]
            return arn
        except kms.exceptions.NotFoundException:
            arn = create(kms)
            kms.create_alias(AliasName=SIGNING_KEY_ALIAS, TargetKeyId=arn)
            return arn

    def _create_jobs(self, definition: JobsDefinition) -> None:
        """The jobs bucket and state machine (at ``JOB_STATE_MACHINE_ARN``, which the functions'
        settings name), on a thread of its own: a session of its own (the default one is not
        thread-safe)."""
        import boto3

        session = boto3.session.Session()
        s3 = session.client("s3")
        with contextlib.suppress(s3.exceptions.BucketAlreadyOwnedByYou):  # kept from an earlier run (a data folder)
            s3.create_bucket(Bucket=self.settings.functions.jobs_bucket)
        stepfunctions = session.client("stepfunctions")
        try:  # kept from an earlier run: replaced by this run's definition where it differs
            kept = stepfunctions.describe_state_machine(stateMachineArn=JOB_STATE_MACHINE_ARN)
        except stepfunctions.exceptions.StateMachineDoesNotExist:
            kept = None
        if kept is None:
            arn = stepfunctions.create_state_machine(
                name=STATE_MACHINE_NAME, definition=definition.result(), roleArn=ROLE_ARN
            )["stateMachineArn"]
        else:  # (moto parses a definition it is given: 0.1 s of a restart, for nothing when it is the same)
            arn = JOB_STATE_MACHINE_ARN
            wanted = {"definition": definition.result(), "roleArn": ROLE_ARN}
            if any(kept[name] != value for name, value in wanted.items()):
                stepfunctions.update_state_machine(stateMachineArn=arn, **wanted)
        if arn != JOB_STATE_MACHINE_ARN:
            raise RuntimeError(f"moto created the jobs state machine as {arn}, not {JOB_STATE_MACHINE_ARN}")

    @staticmethod
    def _dead_letter_event(sqs: Any, url: str) -> Callable[[str, Any, BaseException], None]:
        """The scanner's on-failure destination: the dead-letter queue gets Lambda's invocation
        record ("Configuring destinations for asynchronous invocation": the request's payload,
        the condition, the error)."""

        def send(function: str, event: Any, error: BaseException) -> None:
            record = {
                "version": "1.0",
                "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
                "requestContext": {
                    "functionArn": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{function}:$LATEST",
                    "condition": "RetriesExhausted",
                    "approximateInvokeCount": SCAN_RETRY_ATTEMPTS + 1,
                },
                "requestPayload": event,
                "responseContext": {"statusCode": 200, "functionError": "Unhandled"},
                "responsePayload": {"errorType": type(error).__name__, "errorMessage": str(error)},
            }
            sqs.send_message(QueueUrl=url, MessageBody=json.dumps(record))

        return send

    def _spawn(self, name: str, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _tick_forever(self, tick: Callable[..., Any]) -> None:
        """The minute rule, every ``tick_period_s`` (aligned to the period), one tick at start."""
        while not self.stopping.is_set():
            try:
                tick({}, LocalContext())
            except Exception as exc:
                print(f"tick failed: {exc}", flush=True)
            period = self.settings.tick_period_s
            self.stopping.wait(period - time.time() % period)

    def _poll_forever(self, sqs: Any, url: str, arn: str, handler: Callable[..., Any], consumer: ConsumerSpec) -> None:
        """Lambda's SQS poller for ``consumer`` (local/sqs_lambda.py ``poll``), each batch on the
        function's pool, within the event source's maximum concurrency as the stack sets it."""
        from local.sqs_lambda import EventSource, poll

        pool = self._pools.get(consumer.function, self._pool)
        assert pool is not None
        source = f"{consumer.function} event source"  # the calls Lambda would make, for `make bench`
        current_function.set(source)
        poll(
            sqs,
            url,
            arn,
            handler,
            consumer,
            EventSource(self.settings.deployment.event_source_concurrency(consumer)),
            submit=lambda invoke, batch: pool.submit(attributed_to, source, invoke, batch),
            stopping=self.stopping,
        )

    def stop(self) -> None:
        self.stopping.set()
        if self._data_lock is not None:
            self._data_lock.stopping()  # a runtime started on the folder meanwhile waits for the last snapshot
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        for pool in (self._pool, *self._pools.values()):
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
        if hasattr(self, "moto"):  # (a start that failed may not have got so far)
            self.moto.stop(timeout=MOTO_STATE_TIMEOUT_S if self.settings.data else 5.0)  # ends the pollers' long polls
        if hasattr(self, "functions"):
            self.functions.stop()
        if self._data_lock is not None:
            self._data_lock.release()
        for thread in self._threads:
            thread.join(timeout=3)
