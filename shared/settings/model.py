"""How settings are read and how their errors are told: :class:`SettingsModel`, the frozen model
every settings class is (the functions' :class:`~shared.settings.environment.Settings`, the CDK
context's :class:`~shared.settings.context.DeploymentSettings`, the local runtime's own), the
value readers (:data:`Int`, :data:`Flag`, :data:`Text`) that take JSON (cdk.json) or text
(``-c key=value``, the environment), and :class:`SettingsError`, whose message names each setting
as it was given and why its bound is where it is."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Strict, ValidationError
from pydantic_core import ErrorDetails

from shared.domain.ids import MAX_SHARDS


class SettingsError(ValueError):
    """Settings that cannot be used; the message names each setting (as it was given: context
    key or environment variable) and what it accepts."""


# --- how values are read: JSON (cdk.json) or text (`-c key=value`, the environment) -------------


def _integer(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("must be an integer")
    if isinstance(value, str):
        if not re.fullmatch(r"\s*-?[0-9]+\s*", value):
            raise ValueError("must be an integer")
        return int(value)
    if not isinstance(value, int):
        raise ValueError("must be an integer")
    return value


def _boolean(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError("must be true or false")


Int = Annotated[int, BeforeValidator(_integer)]
Flag = Annotated[bool, BeforeValidator(_boolean)]
Text = Annotated[str, Strict()]

_WHY_AT_MOST = {
    "bucket_shards": f"a task id holds its bucket shard in {MAX_SHARDS.bit_length() - 1} bits",
    "list_shards": "a page of a listing queries every list shard",
    "delay_queues": "every delay queue's URL goes into one variable of a 4 KB environment",
    "delay_queue_urls": "every delay queue's URL goes into one variable of a 4 KB environment",
    "lead_ms": "the trigger waits out the lead on every batch",
    "trigger_batch_size": "the trigger runs a thread per message, and Lambda allows 1,024 threads",
    "trigger_min_pollers": "an SQS event source's minimum of provisioned pollers",
    "trigger_max_pollers": "an SQS event source's maximum of provisioned pollers",
    "tenant_requests_per_second": "every request of a tenant writes its one rate item, and a DynamoDB partition "
    "takes 1,000 writes a second",
    "tenant_burst": "every request of a tenant writes its one rate item, and a DynamoDB partition takes 1,000 "
    "writes a second",
}
_WHY = {
    "scanner_max_concurrency": "a tick's scanner invocations run at once, counted against the account's concurrency",
    "job_shard_concurrency": "an inline Map's concurrency",
    "trigger_memory_mb": "Lambda's memory sizes",
    "high_priority_concurrency": "an SQS event source's maximum concurrency",
    "high_priority_reserved_concurrency": "reserved concurrency: Lambda keeps 100 of an account's 1,000 unreserved",
    "trigger_max_concurrency": "an SQS event source's maximum concurrency",
}
"""Why a bound is where it is, told with the error (upper bounds only / both bounds)."""


def _problem(error: ErrorDetails) -> str:
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind == "greater_than_equal":
        return f"must be at least {ctx['ge']}"
    if kind == "less_than_equal":
        return f"must be at most {ctx['le']}"
    if kind == "too_long":
        return f"must have at most {ctx['max_length']} items"
    if kind == "literal_error":
        return f"must be one of {ctx['expected']}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "string_type":
        return "must be a string"
    if kind == "value_error":
        return str(ctx["error"])
    return error["msg"]


class SettingsModel(BaseModel):
    """A frozen model of settings whose errors name each setting as it was given."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def setting_name(cls, field: str) -> str:
        """How a setting is named where this model is read from (in error messages)."""
        return field

    @classmethod
    def validated(cls, values: Mapping[str, Any]) -> Self:
        """``values`` (field -> raw value) as this model, or a :class:`SettingsError` naming
        every setting that is wrong, its bound and the value given."""
        try:
            return cls.model_validate(dict(values))
        except ValidationError as exc:
            raise SettingsError(_describe(cls, exc)) from None


def _describe(model: type[SettingsModel], exc: ValidationError) -> str:
    lines = []
    for error in exc.errors():
        if not error["loc"]:  # a rule between settings: its message names them
            lines.append(_problem(error))
            continue
        field = str(error["loc"][0])
        problem = _problem(error)
        reason = _WHY_AT_MOST.get(field) if error["type"] in ("less_than_equal", "too_long") else None
        if error["type"] in ("less_than_equal", "greater_than_equal"):
            reason = reason or _WHY.get(field)
        if reason:
            problem += f" ({reason})"
        lines.append(f"{model.setting_name(field)} {problem}, got {error['input']!r}")
    return "; ".join(lines)
