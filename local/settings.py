"""The local runtime's settings: its own knobs, and the settings its functions run with.

The runtime's knobs are read from these variables (the only place they are spelled):

* ``SUNDIAL_PORT``: the API's port on 127.0.0.1 (8080);
* ``SUNDIAL_TICK_PERIOD_S``: how often the tick runs (1 s; AWS's rule ticks every minute);
* ``SUNDIAL_LOCAL_DELAY_QUEUES``: delay queues (4: a receive from moto's SQS reads its whole queue);
* ``SUNDIAL_LOCAL_TRIGGER_BATCH_SIZE``: the trigger's batch size (10, as the stack's default
  ``sundial:triggerBatchSize``; larger batches are gathered over the trigger's batching window);
* ``SUNDIAL_LOCAL_HIGH_PRIORITY_CONCURRENCY``: the high-priority trigger's own workers (10, as the
  stack's default ``sundial:highPriorityConcurrency``): batches of the high-priority queue run
  there alone, so normal-lane batches cannot occupy them;
* ``SUNDIAL_LOCAL_SIGNING_KEY``: the signing key mode (``parameter``, as the stack's default
  ``sundial:signingKey``: the tenants' secrets derived from a root key the functions make in moto's
  Parameter Store; ``kms``: a KMS key of moto's encrypts them);
* ``SUNDIAL_MOTO_PORT``: moto's port (a free one when unset);
* ``SUNDIAL_DATA``: the data folder moto's state is kept in across restarts (docs/devserver.md;
  `make run`: ``.sundial/`` in the checkout; a runtime started otherwise keeps it in memory only
  unless given one);
* ``SUNDIAL_FRESH``: ``1`` starts with empty state (the data folder's snapshot deleted first);
* ``SUNDIAL_LOCAL_AUTHORIZER_CACHE_S``: how long the local API Gateway keeps the authorizer's
  answer for one key (60 s, as the stack's API Gateway does: a revoked key works that long);
* ``SUNDIAL_LOCAL_MOTO_FRONT``: ``werkzeug`` serves moto with moto's own server (werkzeug's, Flask
  for every request) instead of local/moto_host/front.py's lean front;
* ``SUNDIAL_CLOCK``: ``virtual`` runs the runtime on a clock that moves only when
  ``POST /v1/test/clock:advance`` moves it (docs/virtual-clock.md; ``wall`` by default);
* ``SUNDIAL_SCHEDULER_AUTH``: ``sigv4`` verifies each EventBridge Scheduler API request's
  signature against the tenants' access keys, as the stack does; ``default`` (unset) reads every
  request there as the default tenant's, signed or not, whatever its key and secret;
* ``SUNDIAL_LOCAL_FAULTS``: AWS's faults injected at random, for `make chaos` (local/faults.py:
  ``seed=7,throttle=0.02,duplicate=0.02,lapse=0.01,stop=0.005``; none when unset).

The functions' settings are :data:`FUNCTIONS` (a short look-ahead and lease keep moto's queues
short), each overridable by its own variable (``shared.settings.environment.env_name``), and checked against
the local runtime's surroundings (its tick period, the delay queues' visibility timeout) by the
rules the stack is checked by.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import Field, field_validator, model_validator

from local.faults import FAULTS_PATTERN
from local.stepfunctions import ACCOUNT, REGION, STATE_MACHINE_NAME
from shared.settings.capacity import MAX_EVENT_SOURCE_CONCURRENCY, MAX_TRIGGER_BATCH_SIZE, MIN_EVENT_SOURCE_CONCURRENCY
from shared.settings.context import DeploymentSettings
from shared.settings.environment import Settings
from shared.settings.model import Int, SettingsModel
from shared.settings.tuning import MAX_DELAY_QUEUES, Platform
from shared.topology import AUTHORIZER_CACHE_TTL_S, TRIGGER_BATCH_SIZE, TRIGGER_BATCHING_WINDOW_S

FUNCTIONS_URL_ENV = "SUNDIAL_LOCAL_FUNCTIONS_URL"
"""Where the moto process forwards Lambda invocations (set by the runtime when it starts moto)."""
MOTO_DATA_ENV = "SUNDIAL_LOCAL_MOTO_DATA"
"""The folder the moto process keeps its state in (set by the runtime from its ``data`` setting)."""
SNAPSHOT_PERIOD_S = 10.0
"""How often the moto process snapshots its state while requests come in (local/moto_host/persist.py).
What an unclean stop would lose between two is in the journal (local/moto_host/journal.py), so the
period bounds only what a start after a crash replays (about 10 s of writes) against the CPU of
the forked copies (0.3 to 0.5 s each with 6,000 to 10,000 tasks: every 2 s, as before the
journal, that was a sixth of a core at 100 fires a second)."""
MOTO_SNAPSHOT_PERIOD_ENV = "SUNDIAL_LOCAL_MOTO_SNAPSHOT_S"
"""Another period for the moto process's snapshots (the journal's tests: none but those asked for)."""
CHECKOUT_DATA = str(Path(__file__).resolve().parent.parent / ".sundial")
"""`make run`'s data folder when ``SUNDIAL_DATA`` is unset: ``.sundial/`` in the checkout."""
CHECKOUT_VIRTUAL_DATA = f"{CHECKOUT_DATA}-virtual"
"""`make run`'s data folder on the virtual clock when ``SUNDIAL_DATA`` is unset: ``.sundial-virtual/``,
apart from the wall clock's (an advanced clock's tasks and marks are weeks ahead of the wall)."""
IN_MEMORY = "memory"
"""``SUNDIAL_DATA=memory``: no data folder, everything kept in memory (the tests' runtimes: a
snapshot every 2 s of a runtime under test is CPU no test needs)."""
MOTO_CLOCK_ENV = "SUNDIAL_LOCAL_MOTO_CLOCK"
"""Set (to 1) for a moto process whose SQS follows the time the runtime sets (local/moto_patches/clock.py)."""
MOTO_FRONT_ENV = "SUNDIAL_LOCAL_MOTO_FRONT"
"""Set to ``werkzeug`` for a moto process served by moto's own server (werkzeug's, with Flask for
every request) instead of local/moto_host/front.py's: the fidelity test's reference, and the bench's
"before"."""
WERKZEUG_FRONT = "werkzeug"
INDEX_LAG_ENV = "SUNDIAL_LOCAL_INDEX_LAG_MS"
"""How long after a write the moto process's index Queries see it (local/moto_patches/index_lag.py; unset: at once)."""
READ_LAG_ENV = "SUNDIAL_LOCAL_READ_LAG_MS"
"""How long after a write the moto process's eventually consistent GetItems may still miss it
(local/moto_patches/read_lag.py; unset: never)."""
_KNOBS = {
    "port": "SUNDIAL_PORT",
    "tick_period_s": "SUNDIAL_TICK_PERIOD_S",
    "delay_queues": "SUNDIAL_LOCAL_DELAY_QUEUES",
    "trigger_batch_size": "SUNDIAL_LOCAL_TRIGGER_BATCH_SIZE",
    "high_priority_concurrency": "SUNDIAL_LOCAL_HIGH_PRIORITY_CONCURRENCY",
    "signing_key": "SUNDIAL_LOCAL_SIGNING_KEY",
    "moto_port": "SUNDIAL_MOTO_PORT",
    "lambdas": "SUNDIAL_LOCAL_LAMBDAS",
    "data": "SUNDIAL_DATA",
    "fresh": "SUNDIAL_FRESH",
    "authorizer_cache_s": "SUNDIAL_LOCAL_AUTHORIZER_CACHE_S",
    "clock": "SUNDIAL_CLOCK",
    "scheduler_auth": "SUNDIAL_SCHEDULER_AUTH",
    "faults": "SUNDIAL_LOCAL_FAULTS",
}

LAMBDAS_PATTERN = r"^([A-Za-z0-9_-]{1,64}=[A-Za-z_][\w.]*:[A-Za-z_]\w*(,|$))*$"
"""``name=module:handler`` pairs, comma-separated (Lambda's function names: letters, digits, - and _)."""


def user_lambdas(spec: str) -> dict[str, tuple[str, str]]:
    """``name -> (module, attribute)`` of :attr:`LocalSettings.lambdas`."""
    pairs = (part.split("=", 1) for part in spec.split(",") if part)
    return {name: tuple(target.split(":", 1)) for name, target in pairs}  # type: ignore[misc]


JOB_STATE_MACHINE_ARN = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{STATE_MACHINE_NAME}"
TRIGGER_TIMEOUT_S = 75
"""The local triggers' timeout, enforced as Lambda enforces it (local/deadline.py): the longest
HTTP call a target may ask for (60 s) and the lead fit in it. Shorter than the stack's 120 s, so
a crashed trigger's occurrence comes back sooner."""
DELAY_VISIBILITY_S = 120
"""The local delay queues' visibility timeout: longer than the local lease."""
FUNCTIONS = Settings(
    bucket_shards=2,
    look_ahead_ms=3000,
    guard_ms=2000,
    lead_ms=2000,
    lease_ms=90_000,  # the rule: at least the trigger's timeout + 10 s + the lead; under the visibility timeout
    allow_loopback_targets=True,
    allow_private_targets=True,
    jobs_bucket="sundial-jobs",
    job_state_machine_arn=JOB_STATE_MACHINE_ARN,
)
"""The functions' settings locally (the queues' URLs are added once the queues exist)."""

Port = Annotated[Int, Field(ge=1, le=65_535)]


class LocalSettings(SettingsModel):
    port: Port = 8080
    """The API's port on 127.0.0.1."""
    tick_period_s: Annotated[float, Field(gt=0, le=60)] = 1.0
    """How often the tick runs (AWS's rule: every minute)."""
    delay_queues: Annotated[Int, Field(ge=1, le=MAX_DELAY_QUEUES)] = 4
    """Delay queues the occurrences are spread over."""
    trigger_batch_size: Annotated[Int, Field(ge=1, le=MAX_TRIGGER_BATCH_SIZE)] = TRIGGER_BATCH_SIZE
    """Messages the trigger's pollers hand one invocation (the stack's ``sundial:triggerBatchSize``).
    No rule ties it to the lead here: the local trigger's CPU is the machine's, not Lambda's."""
    high_priority_concurrency: Annotated[
        Int, Field(ge=MIN_EVENT_SOURCE_CONCURRENCY, le=MAX_EVENT_SOURCE_CONCURRENCY)
    ] = 10
    """Workers of the high-priority trigger's own pool, and its event source's maximum concurrency
    (the stack's ``sundial:highPriorityConcurrency``): the high-priority queue's batches run there
    alone."""
    signing_key: Literal["parameter", "kms"] = "parameter"
    """The signing key mode (the stack's ``sundial:signingKey``): "parameter", a root key the
    functions make in moto's Parameter Store; "kms", a KMS key the runtime makes in moto."""
    moto_port: Port | None = None
    """moto's port (None: a free one)."""
    lambdas: Annotated[str, Field(pattern=LAMBDAS_PATTERN)] = ""
    """Your own Lambda functions, for tasks' ``lambda`` targets and jobs' ``lambda`` processors:
    ``name=module:handler`` pairs, comma-separated (``reindex=app.jobs:handler``). The runtime
    imports each handler and runs it when the function is invoked
    (``arn:aws:lambda:us-east-1:123456789012:function:<name>``), as Lambda would."""
    data: str = ""
    """The data folder moto's state is kept in across restarts ("", or ``memory``: in memory only,
    forgotten at a stop; `make run`'s is ``.sundial/`` in the checkout unless set)."""
    fresh: bool = False
    """Start with empty state: the data folder's snapshot is deleted first."""
    clock: Literal["wall", "virtual"] = "wall"
    """The runtime's time: the wall's, or a virtual clock only ``POST /v1/test/clock:advance``
    moves (local/advance.py)."""
    scheduler_auth: Literal["default", "sigv4"] = "default"
    """Who a request to the EventBridge Scheduler API (``/scheduler``) acts as: "default", the
    default tenant, whatever signed it (the guide's snippets run as they are, with any key); "sigv4",
    the tenant whose access key signed it, verified as the stack verifies it (a wrong secret, a
    changed body, a stale date or another Region refused)."""
    authorizer_cache_s: Annotated[float, Field(ge=0, le=3600)] = AUTHORIZER_CACHE_TTL_S
    """How long the local API Gateway keeps the authorizer's answer for one ``Authorization``
    value (API Gateway's authorizer cache, the stack's TTL; 0: none)."""
    faults: Annotated[str, Field(pattern=FAULTS_PATTERN)] = ""
    """AWS's faults injected at random (local/faults.py; `make chaos`): ``seed=7,throttle=0.02,
    duplicate=0.02,lapse=0.01,stop=0.005``, each a probability ("": none, the default)."""
    functions: Settings = FUNCTIONS
    """What the functions run with (before the runtime adds its queues' URLs)."""

    @field_validator("data")
    @classmethod
    def _in_memory(cls, value: str) -> str:
        return "" if value == IN_MEMORY else value

    @classmethod
    def setting_name(cls, field: str) -> str:
        return _KNOBS.get(field, field)

    @classmethod
    def env_names(cls) -> frozenset[str]:
        """Every variable the local runtime reads: its knobs and its functions' settings."""
        return frozenset(
            {
                *_KNOBS.values(),
                FUNCTIONS_URL_ENV,
                INDEX_LAG_ENV,
                READ_LAG_ENV,
                MOTO_DATA_ENV,
                MOTO_SNAPSHOT_PERIOD_ENV,
                MOTO_FRONT_ENV,
                *Settings.env_names(),
            }
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, make_run: bool = False, **overrides: Any) -> Self:
        """The settings of a runtime started with ``environ`` (``os.environ`` unless given):
        its knobs, and :data:`FUNCTIONS` with the function variables ``environ`` sets;
        ``overrides`` (field -> value) win over both. ``make_run``: `make run`'s, whose data
        folder is :data:`CHECKOUT_DATA` unless set (:data:`CHECKOUT_VIRTUAL_DATA` on the virtual clock)."""
        env = os.environ if environ is None else environ
        functions = Settings.from_env(
            {**FUNCTIONS.to_env(), **{name: value for name, value in env.items() if name in Settings.env_names()}}
        ).with_resources(job_state_machine_arn=JOB_STATE_MACHINE_ARN)  # the runtime creates it under this name
        knobs = {field: env[name] for field, name in _KNOBS.items() if env.get(name)}
        virtual = knobs.get("clock", "wall") == "virtual"
        defaults = {"data": CHECKOUT_VIRTUAL_DATA if virtual else CHECKOUT_DATA} if make_run else {}
        return cls.validated({**defaults, **knobs, "functions": functions, **overrides})

    @property
    def deployment(self) -> DeploymentSettings:
        """The stack's settings this runtime stands for (its delay queues, its high lane): the
        event sources' maximum concurrency comes from them, as the stack's does."""
        return DeploymentSettings(
            delay_queues=self.delay_queues, high_priority_concurrency=self.high_priority_concurrency
        )

    @property
    def platform(self) -> Platform:
        """What surrounds the functions locally: the tick every ``tick_period_s``, Lambda's
        batching window as in AWS, the local delay queues' visibility timeout, the local
        triggers' timeout (enforced: local/deadline.py)."""
        return Platform(
            tick_period_ms=math.ceil(self.tick_period_s * 1000),
            batching_window_ms=TRIGGER_BATCHING_WINDOW_S * 1000,
            visibility_timeout_ms=DELAY_VISIBILITY_S * 1000,
            trigger_timeout_ms=TRIGGER_TIMEOUT_S * 1000,
        )

    @model_validator(mode="after")
    def _functions_fit(self) -> Self:
        problems = self.functions.platform_problems(self.platform)
        if problems:
            raise ValueError("; ".join(problems))
        return self
