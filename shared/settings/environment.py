"""The functions' environment: :class:`Settings`, what one function runs with (the deployment's
:class:`~shared.settings.tuning.Tuning` and the resources that function uses).
:meth:`Settings.to_env` writes it into a function's environment (the stack, the local runtime and
the tests all go through it) and :func:`from_env` reads it back at cold start: the only place the
``SUNDIAL_*`` variable names are spelled (:func:`env_name`).

The domain never reads ``os.environ``: handlers build a :class:`Settings` with :func:`from_env`
and hand it (or the values in it) to the services. A handler imports this module and what it
needs (shared/settings/model.py, shared/settings/tuning.py), never the CDK context's
(shared/settings/context.py) nor its capacity arithmetic (shared/settings/capacity.py)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Self

from pydantic import BeforeValidator, Field, field_validator, model_validator

from shared.domain.iam_callers import RoleKey, parse_grants
from shared.domain.signing import CACHE_SECONDS as SIGNING_CACHE_SECONDS
from shared.settings.model import Flag, Int, Text
from shared.settings.tuning import MAX_DELAY_QUEUES, SCANNER_MAX_CONCURRENCY, Tuning
from shared.topology import PAGE_BYTES

ENV_PREFIX = "SUNDIAL_"
"""Every function variable is ``SUNDIAL_`` + the setting's name in capitals."""
SSM_PARAMETER_NAME = r"^(/[A-Za-z0-9_.-]+)*$"
"""A Parameter Store name in a hierarchy (``/a/b``: the characters PutParameter accepts), or empty."""


def _urls(value: Any) -> Any:
    if isinstance(value, str):
        return tuple(url for url in value.split(",") if url)
    return value


def env_name(field: str) -> str:
    """The variable a function reads ``field`` of its :class:`Settings` from."""
    if field not in Settings.model_fields:
        raise KeyError(f"{field} is not a function setting")
    return ENV_PREFIX + field.upper()


class Settings(Tuning):
    """What one function runs with: the deployment's tuning and the resources it uses."""

    table_name: Annotated[Text, Field(min_length=1)] = "sundial"
    idempotency_table: Annotated[Text, Field(min_length=1)] = "sundial-idempotency"
    """The table of Powertools' idempotency records (the API's ``Idempotency-Key`` header)."""
    delay_queue_urls: Annotated[tuple[Text, ...], BeforeValidator(_urls), Field(max_length=MAX_DELAY_QUEUES)] = ()
    """The delay queues occurrences are staged into (spread by run id), in index order."""
    dead_letter_queue_url: Text = ""
    scanner_function: Text = ""
    """The scanner function's name, which the tick invokes asynchronously (shared/adapters/scans.py)."""
    scan_invocations: Annotated[Int, Field(ge=1)] = SCANNER_MAX_CONCURRENCY
    """The most scanner invocations a tick starts: the deployment's ``scanner_max_concurrency``."""
    stranded_queue_url: Text = ""
    """The stranded queue (shared/topology.py, ``STRANDED``): the tick looks at its depth, the
    recovering trigger drains it."""
    recover_function: Text = ""
    """The recovering trigger's name, which the tick invokes asynchronously when the stranded queue
    holds messages (shared/adapters/stranded.py). Empty: the tick does not look."""
    high_priority_queue_url: Text = ""
    """The delay queue of high-priority occurrences (empty: they share the others)."""
    jobs_bucket: Text = ""
    """The S3 bucket of the jobs' data and results (docs/jobs.md)."""
    job_state_machine_arn: Text = ""
    job_function: Text = ""
    """The job function's name: the API invokes it to send a notify a progress report crossed."""
    own_prefix: Text = ""
    """The name prefix of the deployment's own resources (the stack's name and a dash): a task may
    not target them (shared/domain/own.py). Empty: nothing is refused."""
    account_id: Text = ""
    """The deployment's AWS account (own resources are refused in it only)."""
    signing_key_arn: Text = ""
    """The "kms" signing key mode (``sundial:signingKey``): the KMS key the tenants' callback
    signing secrets are encrypted with (docs/tenancy.md, section 4)."""
    signing_root_parameter: Annotated[Text, Field(pattern=SSM_PARAMETER_NAME)] = ""
    """The "parameter" signing key mode (the default): the Parameter Store parameter of the root
    key the tenants' callback signing secrets are derived from (``/<stack name>/signing-root``;
    the first function that needs it creates it). Neither this nor ``signing_key_arn``: callbacks
    are not signed; both: refused."""
    admin_key: Text = ""
    """The local runtime's admin key, whose hash it writes into its table at start (one is made up
    when this is unset). The functions never read it: the authorizer finds the admin key by its
    hash in the table, where a deployed stack's operator puts it (``sundial admin-key create``)."""
    signing_cache_seconds: Annotated[Int, Field(ge=1, le=SIGNING_CACHE_SECONDS)] = SIGNING_CACHE_SECONDS
    """How long a function keeps a tenant's signing secrets: a rotation reaches every
    call within it. Shorter only where a test must see a rotation without waiting a minute (the
    local runtime's end-to-end tests)."""
    allow_loopback_targets: Flag = False
    """HTTP targets may be loopback addresses (the local runtime and the tests only)."""
    allow_private_targets: Flag = False
    """HTTP targets may be private addresses (the local runtime only)."""
    page_bytes: Annotated[Int, Field(ge=1, le=PAGE_BYTES)] = PAGE_BYTES
    """What the items of one list page may take in the API's answer (shared/topology.py): Lambda's
    answer is at most 6 MB. Lower only where a test must cross it with a few items."""

    iam_roles: Text = ""
    """The roles ``grant_register`` granted and the tenant each registers tasks as, on the IAM
    routes (shared/domain/iam_callers.py): ``<tenant>=<role ARN>`` entries separated by spaces.
    Empty: no IAM caller is anyone's."""

    RESOURCE_FIELDS: ClassVar[tuple[str, ...]] = (
        "table_name",
        "idempotency_table",
        "delay_queue_urls",
        "dead_letter_queue_url",
        "scanner_function",
        "scan_invocations",
        "stranded_queue_url",
        "recover_function",
        "high_priority_queue_url",
        "jobs_bucket",
        "job_state_machine_arn",
        "job_function",
        "own_prefix",
        "account_id",
        "signing_key_arn",
        "signing_root_parameter",
        "admin_key",
        "signing_cache_seconds",
        "page_bytes",
        "iam_roles",
    )
    """A function's environment names only the resources it uses (and the local runtime's own
    knobs it is given): one left at its default is not written (and reads back as the default)."""

    @classmethod
    def setting_name(cls, field: str) -> str:
        return env_name(field)

    @classmethod
    def env_names(cls) -> frozenset[str]:
        return frozenset(env_name(field) for field in cls.model_fields)

    @classmethod
    def of(cls, tuning: Tuning, **resources: Any) -> Self:
        """A function's settings in a deployment: its tuning, and the resources the function uses."""
        return cls.validated({**tuning.tuning(), **resources})

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Self:
        """The settings :meth:`to_env` wrote (``os.environ`` unless ``environ``); a variable that
        is not there is the default, a value out of bounds a :class:`SettingsError` naming it."""
        env = os.environ if environ is None else environ
        return cls.validated({field: env[env_name(field)] for field in cls.model_fields if env_name(field) in env})

    @field_validator("iam_roles")
    @classmethod
    def _grants_parse(cls, value: str) -> str:
        parse_grants(value)
        return value

    def iam_role_tenants(self) -> dict[RoleKey, str]:
        """Each granted role's tenant (:data:`iam_roles`)."""
        return parse_grants(self.iam_roles)

    @model_validator(mode="after")
    def _urls_are_separable(self) -> Self:
        if any(not url or "," in url for url in self.delay_queue_urls):
            raise ValueError(
                f"{env_name('delay_queue_urls')} must be URLs without commas, got {self.delay_queue_urls!r}"
            )
        return self

    @model_validator(mode="after")
    def _one_signing_key_mode(self) -> Self:
        if self.signing_key_arn and self.signing_root_parameter:
            raise ValueError(
                f"{env_name('signing_key_arn')} and {env_name('signing_root_parameter')} are the two signing key "
                "modes: set one of them"
            )
        return self

    def to_env(self) -> dict[str, str]:
        """The function's environment: every setting, and each resource the function uses. The
        one place the variables are written (:func:`from_env` reads them)."""
        env = {}
        for field, value in self:
            if field in self.RESOURCE_FIELDS and value == type(self).model_fields[field].default:
                continue
            env[env_name(field)] = _text(value)
        return env

    def with_resources(self, **resources: Any) -> Self:
        """These settings with more resources (validated)."""
        return self.validated({**dict(self), **resources})


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(str(url) for url in value)
    return str(value)


def from_env(environ: Mapping[str, str] | None = None) -> Settings:
    """A function's settings, from its environment (at cold start)."""
    return Settings.from_env(environ)
