"""Deployment settings: cdk.json states the defaults, every bound and rule is enforced naming the
context key, and what the stack writes into a function's environment reads back as it was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, CfnDeletionPolicy, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from infra import names
from infra import settings as infra_settings
from infra.app import cdk_json_context
from infra.settings import DeploymentSettings, SettingsError, from_context
from shared import observability
from shared.domain.firing import MAX_DELAY_SECONDS
from shared.domain.ids import MAX_SHARDS, new_task_id, parse_task_id
from shared.settings import context as settings_context
from shared.settings import tuning as settings_tuning
from shared.settings.context import LOG_RETENTION_DAYS, context_key
from shared.settings.environment import Settings, env_name, from_env
from shared.settings.tuning import MAX_DELAY_QUEUES, Tuning
from shared.topology import DELAY_VISIBILITY_TIMEOUT_S, TRIGGER_BATCHING_WINDOW_S, TRIGGER_TIMEOUT_S
from tests.infrastructure.conftest import ALTERNATE_ALARM_TOPIC, ALTERNATE_DELAY_QUEUES, Built, scratch_outdir

pytestmark = pytest.mark.infrastructure

ROOT = Path(__file__).resolve().parents[2]


def _settings(context: dict[str, Any]) -> DeploymentSettings:
    return from_context(App(context=context, outdir=scratch_outdir()).node)


def _refused(context: dict[str, Any]) -> str:
    with pytest.raises(SettingsError) as refused:
        _settings(context)
    return str(refused.value)


# --- cdk.json and the defaults -----------------------------------------------------------------


def test_cdk_json_states_every_setting_at_its_default() -> None:
    context = cdk_json_context()
    stated = {key: value for key, value in context.items() if key.startswith(settings_context.CONTEXT_PREFIX)}
    assert stated == DeploymentSettings().context()
    assert _settings(context) == DeploymentSettings()


def test_the_context_keys_are_the_ones_cdk_json_has_always_used() -> None:
    """Renaming a key would silently drop a deployment's value for it."""
    assert set(DeploymentSettings.context_keys()) == {
        "sundial:bucketShards",
        "sundial:listShards",
        "sundial:runRetentionDays",
        "sundial:defaultTenant",
        "sundial:removalPolicy",
        "sundial:architecture",
        "sundial:bytecodePython",
        "sundial:logRetentionDays",
        "sundial:apiThrottleRate",
        "sundial:apiThrottleBurst",
        "sundial:apiGatewayCloudWatchRole",
        "sundial:delayQueues",
        "sundial:scannerMaxConcurrency",
        "sundial:lookAheadMs",
        "sundial:guardMs",
        "sundial:leadMs",
        "sundial:triggerMemoryMb",
        "sundial:jobShardConcurrency",
        "sundial:misfireToleranceMs",
        "sundial:leaseMs",
        "sundial:latenessAlarmMs",
        "sundial:alarmTopicArn",
        "sundial:ecsTaskRoles",
        "sundial:tenantRequestsPerSecond",
        "sundial:tenantBurst",
        "sundial:tenantMaxTasks",
        "sundial:triggerBatchSize",
        "sundial:triggerMinPollers",
        "sundial:triggerMaxPollers",
        "sundial:triggerProvisionedConcurrency",
        "sundial:highPriorityConcurrency",
        "sundial:highPriorityReservedConcurrency",
        "sundial:triggerMaxConcurrency",
        "sundial:accountConcurrency",
        "sundial:tracing",
        "sundial:dashboard",
        "sundial:alarms",
        "sundial:canary",
        "sundial:signingKey",
        "sundial:tableWarmReads",
        "sundial:tableWarmWrites",
        "sundial:schedulerFunctionUrl",
    }


def test_deployment_defaults_are_what_the_functions_assume() -> None:
    assert DeploymentSettings().tuning() == Settings().tuning()
    assert DeploymentSettings().timing == Settings().timing


def test_timing_defaults_are_the_documented_ones() -> None:
    settings = DeploymentSettings()
    assert (
        settings.look_ahead_ms,
        settings.guard_ms,
        settings.lead_ms,
        settings.misfire_tolerance_ms,
        settings.lease_ms,
    ) == (120_000, 60_000, 2_000, 60_000, 150_000)
    assert (settings.delay_queues, settings.lateness_alarm_ms, settings.alarm_topic_arn) == (1, 1000, "")


def test_powertools_names_match_the_observability_module() -> None:
    assert names.POWERTOOLS_SERVICE_NAME == observability.SERVICE
    assert names.POWERTOOLS_METRICS_NAMESPACE == observability.NAMESPACE


def test_every_tracing_mode_the_settings_accept_has_its_cdk_value() -> None:
    assert set(infra_settings.TRACING) == set(DeploymentSettings.model_fields["tracing"].annotation.__args__)  # type: ignore[union-attr]
    assert DeploymentSettings().lambda_tracing == lambda_.Tracing.PASS_THROUGH
    assert DeploymentSettings(tracing="active").lambda_tracing == lambda_.Tracing.ACTIVE


def test_every_log_retention_the_settings_accept_has_its_cdk_value() -> None:
    assert tuple(infra_settings.RETENTION) == LOG_RETENTION_DAYS
    for days, retention in infra_settings.RETENTION.items():
        assert DeploymentSettings(log_retention_days=days).log_retention == retention


def test_command_line_strings_are_parsed() -> None:
    settings = _settings(
        {
            "sundial:bucketShards": "32",
            "sundial:architecture": "x86_64",
            "sundial:removalPolicy": "destroy",
            "sundial:logRetentionDays": "90",
            "sundial:apiGatewayCloudWatchRole": "false",
            "sundial:delayQueues": "3",
            "sundial:leaseMs": "160000",
            "sundial:alarmTopicArn": "arn:aws:sns:us-east-1:123456789012:ops",
            "sundial:tracing": "active",
            "sundial:dashboard": "true",
            "sundial:alarms": "true",
            "sundial:canary": "true",
            "sundial:signingKey": "kms",
        }
    )
    assert settings.bucket_shards == 32
    assert settings.lambda_architecture.name == lambda_.Architecture.X86_64.name == "x86_64"
    assert settings.cdk_removal_policy == RemovalPolicy.DESTROY
    assert not settings.retain
    assert settings.log_retention_days == 90
    assert settings.api_gateway_cloudwatch_role is False
    assert settings.delay_queues == 3
    assert settings.timing.lease_ms == 160_000
    assert settings.alarm_topic_arn == "arn:aws:sns:us-east-1:123456789012:ops"
    assert settings.lambda_tracing == lambda_.Tracing.ACTIVE
    assert (settings.dashboard, settings.alarms, settings.canary) == (True, True, True)
    assert settings.signing_key == "kms"


# --- bounds ------------------------------------------------------------------------------------


def test_bucket_shards_are_bounded_by_what_a_task_id_holds() -> None:
    """2,000 shards used to synthesize and then answer 500 on the first registration."""
    message = _refused({"sundial:bucketShards": 2000})
    assert "sundial:bucketShards" in message
    assert f"at most {MAX_SHARDS}" in message
    assert "2000" in message
    _refused({"sundial:bucketShards": MAX_SHARDS + 1})
    # the largest accepted deployment: its last shard still fits in an id
    last = _settings({"sundial:bucketShards": MAX_SHARDS}).bucket_shards - 1
    assert parse_task_id(new_task_id(1_700_000_000_000, last)).shard == last


def _field_bounds() -> list[tuple[str, int, str]]:
    """(field, a value just past one of its bounds, the bound as the message states it)."""
    cases = []
    for field, info in DeploymentSettings.model_fields.items():
        for constraint in info.metadata:
            low, high = getattr(constraint, "ge", None), getattr(constraint, "le", None)
            if low is not None:
                cases.append((field, low - 1, f"at least {low}"))
            if high is not None:
                cases.append((field, high + 1, f"at most {high}"))
    return cases


@pytest.mark.parametrize(("field", "value", "bound"), _field_bounds())
def test_each_bound_is_refused_naming_the_key_and_the_bound(field: str, value: int, bound: str) -> None:
    message = _refused({context_key(field): value})
    assert message.startswith(f"{context_key(field)} must be {bound}"), message


def test_the_bounded_fields_are_the_expected_ones() -> None:
    bounded = {field for field, _, _ in _field_bounds()}
    assert bounded == {
        "bucket_shards",
        "list_shards",
        "run_retention_days",
        "look_ahead_ms",
        "guard_ms",
        "lead_ms",
        "misfire_tolerance_ms",
        "lease_ms",
        "api_throttle_rate",
        "api_throttle_burst",
        "delay_queues",
        "scanner_max_concurrency",
        "job_shard_concurrency",
        "trigger_memory_mb",
        "lateness_alarm_ms",
        "tenant_requests_per_second",
        "tenant_burst",
        "tenant_max_tasks",
        "trigger_batch_size",
        "trigger_min_pollers",
        "trigger_max_pollers",
        "trigger_provisioned_concurrency",
        "high_priority_concurrency",
        "high_priority_reserved_concurrency",
        "trigger_max_concurrency",
        "account_concurrency",
        "table_warm_reads",
        "table_warm_writes",
    }
    assert DeploymentSettings(delay_queues=MAX_DELAY_QUEUES).delay_queues == MAX_DELAY_QUEUES


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("sundial:architecture", "sparc"),
        ("sundial:removalPolicy", "snapshot"),
        ("sundial:logRetentionDays", 31),
        ("sundial:bucketShards", 0),
        ("sundial:bucketShards", 2000),
        ("sundial:bucketShards", 1.5),
        ("sundial:listShards", "four"),
        ("sundial:apiThrottleRate", True),
        ("sundial:defaultTenant", ""),
        ("sundial:defaultTenant", 7),
        ("sundial:apiGatewayCloudWatchRole", "yes"),
        ("sundial:delayQueues", 0),
        ("sundial:delayQueues", 33),
        ("sundial:triggerMemoryMb", 127),
        ("sundial:triggerMemoryMb", 10_241),
        ("sundial:jobShardConcurrency", 0),
        ("sundial:jobShardConcurrency", 41),
        ("sundial:scannerMaxConcurrency", 1),
        ("sundial:scannerMaxConcurrency", 1001),
        ("sundial:lookAheadMs", 30_000),  # shorter than a tick period: tasks staged late
        ("sundial:lookAheadMs", 850_000),  # + guard beyond SQS's 900 s delay: messages early
        ("sundial:guardMs", -1),
        ("sundial:leadMs", 1_499),
        ("sundial:leadMs", 10_001),
        ("sundial:misfireToleranceMs", -1),
        ("sundial:leaseMs", 0),
        ("sundial:leaseMs", 720_000),  # a redelivered message would find the lease still held
        ("sundial:latenessAlarmMs", 0),
        ("sundial:alarmTopicArn", "ops-alarms"),
        ("sundial:alarmTopicArn", "arn:aws:sqs:us-east-1:123456789012:ops"),
        ("sundial:tracing", "Active"),  # the setting's spelling, not CloudFormation's
        ("sundial:tracing", "disabled"),  # PassThrough traces nothing of its own already
        ("sundial:dashboard", "yes"),
        ("sundial:alarms", 1),
        ("sundial:canary", "on"),
        ("sundial:signingKey", "KMS"),  # the setting's spelling
        ("sundial:signingKey", "secretsmanager"),
        ("sundial:signingKey", ""),
    ],
)
def test_bad_values_are_refused_with_the_key_named(key: str, value: Any) -> None:
    assert key in _refused({key: value})


def test_a_misspelt_key_is_refused_not_ignored() -> None:
    message = _refused({"sundial:bucketShard": 32})
    assert "sundial:bucketShard " in message
    assert "sundial:bucketShards" in message  # the list of settings


def test_every_problem_is_told_at_once() -> None:
    message = _refused({"sundial:bucketShards": 2000, "sundial:delayQueues": 0})
    assert "sundial:bucketShards" in message
    assert "sundial:delayQueues" in message


# --- the rules between settings ----------------------------------------------------------------

TICK_MS = settings_context.TICK_PERIOD_S * 1000
SHORTEST_LEAD = TRIGGER_BATCHING_WINDOW_S * 1000 + settings_tuning.LEAD_MARGIN_MS


@pytest.mark.parametrize(
    ("accepted", "refused", "named"),
    [
        # the look-ahead covers a tick period
        ({"lookAheadMs": TICK_MS}, {"lookAheadMs": TICK_MS - 1}, ["lookAheadMs"]),
        # look-ahead + guard fit SQS's longest delay
        (
            {"lookAheadMs": 600_000, "guardMs": MAX_DELAY_SECONDS * 1000 - 600_000},
            {"lookAheadMs": 600_000, "guardMs": MAX_DELAY_SECONDS * 1000 - 600_000 + 1},
            ["lookAheadMs", "guardMs"],
        ),
        # the lead covers the trigger's batching window and the polling latency
        ({"leadMs": SHORTEST_LEAD}, {"leadMs": SHORTEST_LEAD - 1}, ["leadMs"]),
        # a lease outlives the trigger's timeout and the lead it waits out ...
        (
            {"leadMs": 5_000, "leaseMs": TRIGGER_TIMEOUT_S * 1000 + 10_000 + 5_000},
            {"leadMs": 5_000, "leaseMs": TRIGGER_TIMEOUT_S * 1000 + 10_000 + 5_000 - 1},
            ["leaseMs", "leadMs"],
        ),
        # ... and ends before the delay queues' visibility timeout
        (
            {"leaseMs": DELAY_VISIBILITY_TIMEOUT_S * 1000 - 1},
            {"leaseMs": DELAY_VISIBILITY_TIMEOUT_S * 1000},
            ["leaseMs"],
        ),
    ],
)
def test_the_rules_between_settings(accepted: dict[str, int], refused: dict[str, int], named: list[str]) -> None:
    _settings({f"sundial:{key}": value for key, value in accepted.items()})
    message = _refused({f"sundial:{key}": value for key, value in refused.items()})
    for key in named:
        assert f"sundial:{key}" in message


def test_settings_are_immutable() -> None:
    with pytest.raises(ValidationError):
        DeploymentSettings().bucket_shards = 1  # type: ignore[misc]


def test_python_app_py_refuses_a_bad_setting_with_one_line_naming_it() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CDK_OUTDIR": "/nonexistent/never-written"}
    done = subprocess.run(
        [sys.executable, "app.py", "-c", "sundial:bucketShards=2000"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert "sundial:bucketShards must be at most 1024" in done.stderr
    assert "Traceback" not in done.stderr


# --- the functions' environment: written by Settings.to_env, read by from_env -------------------

_text = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=40)
_url = _text.filter(lambda url: url != "" and "," not in url)


@st.composite
def function_settings(draw: st.DrawFn) -> Settings:
    look_ahead = draw(st.integers(1, 600_000))
    return Settings(
        bucket_shards=draw(st.integers(1, MAX_SHARDS)),
        list_shards=draw(st.integers(1, settings_tuning.MAX_LIST_SHARDS)),
        run_retention_days=draw(st.integers(1, 10_000)),
        default_tenant=draw(_text.filter(bool)),
        look_ahead_ms=look_ahead,
        guard_ms=draw(st.integers(0, MAX_DELAY_SECONDS * 1000 - look_ahead)),
        lead_ms=draw(st.integers(0, settings_tuning.MAX_LEAD_MS)),
        misfire_tolerance_ms=draw(st.integers(0, 10**9)),
        lease_ms=draw(st.integers(1, 10**9)),
        table_name=draw(_text.filter(bool)),
        idempotency_table=draw(_text.filter(bool)),
        delay_queue_urls=tuple(draw(st.lists(_url, max_size=MAX_DELAY_QUEUES))),
        dead_letter_queue_url=draw(_text),
        scanner_function=draw(_text),
        scan_invocations=draw(st.integers(1, 1000)),
        jobs_bucket=draw(_text),
        job_state_machine_arn=draw(_text),
        allow_loopback_targets=draw(st.booleans()),
        allow_private_targets=draw(st.booleans()),
    )


@given(function_settings())
def test_settings_read_back_from_the_environment_they_write(settings: Settings) -> None:
    env = settings.to_env()
    assert all(isinstance(value, str) for value in env.values())
    assert from_env(env) == settings


@given(function_settings())
def test_a_function_environment_names_only_the_resources_it_was_given(settings: Settings) -> None:
    env = settings.to_env()
    for field in Tuning.model_fields:
        assert env_name(field) in env
    for field in Settings.RESOURCE_FIELDS:
        assert (env_name(field) in env) == (getattr(settings, field) != Settings.model_fields[field].default)


@st.composite
def deployments(draw: st.DrawFn) -> DeploymentSettings:
    look_ahead = draw(st.integers(TICK_MS, 600_000))
    lead = draw(st.integers(SHORTEST_LEAD, settings_tuning.MAX_LEAD_MS))
    return DeploymentSettings(
        bucket_shards=draw(st.integers(1, MAX_SHARDS)),
        default_tenant=draw(_text.filter(bool)),
        look_ahead_ms=look_ahead,
        guard_ms=draw(st.integers(0, MAX_DELAY_SECONDS * 1000 - look_ahead)),
        lead_ms=lead,
        lease_ms=draw(st.integers(TRIGGER_TIMEOUT_S * 1000 + 10_000 + lead, DELAY_VISIBILITY_TIMEOUT_S * 1000 - 1)),
        removal_policy=draw(st.sampled_from(["retain", "destroy"])),
        log_retention_days=draw(st.sampled_from(LOG_RETENTION_DAYS)),
        api_gateway_cloudwatch_role=draw(st.booleans()),
        delay_queues=draw(st.integers(1, MAX_DELAY_QUEUES)),
        trigger_memory_mb=draw(st.integers(128, 10_240)),
        tracing=draw(st.sampled_from(["passthrough", "active"])),
        dashboard=draw(st.booleans()),
        alarms=draw(st.booleans()),
        canary=draw(st.booleans()),
        signing_key=draw(st.sampled_from(["parameter", "kms"])),
    )


def _as_command_line(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@given(deployments(), st.booleans())
def test_a_deployment_reads_back_from_its_context(deployment: DeploymentSettings, as_text: bool) -> None:
    """As cdk.json states it (JSON values) or as `-c key=value` does (strings)."""
    context = deployment.context()
    if as_text:
        context = {key: _as_command_line(value) for key, value in context.items()}
    assert DeploymentSettings.from_context(context) == deployment


@given(deployments())
def test_a_deployment_reaches_every_function_as_it_is(deployment: DeploymentSettings) -> None:
    env = Settings.of(deployment, table_name="t", delay_queue_urls=("https://q/0",)).to_env()
    read = from_env(env)
    assert read.tuning() == deployment.tuning()
    assert read.timing == deployment.timing


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("bucket_shards", "2000"),
        ("bucket_shards", "sixteen"),
        ("lead_ms", "10001"),
        ("allow_loopback_targets", "maybe"),
        ("table_name", ""),
        ("delay_queue_urls", ",".join(f"https://q/{i}" for i in range(MAX_DELAY_QUEUES + 1))),
    ],
)
def test_a_function_refuses_an_environment_out_of_bounds_naming_the_variable(field: str, value: str) -> None:
    with pytest.raises(SettingsError, match=env_name(field)):
        from_env({env_name(field): value})


# --- the context reaches the stack -------------------------------------------------------------


def test_context_reaches_the_constructs(alternate: Built) -> None:
    """The session's stack built with overrides (see conftest), read through its L1 properties."""
    stack = alternate.stack
    table = stack.storage.table.node.default_child
    assert isinstance(table, dynamodb.CfnTable)
    assert table.deletion_protection_enabled is False
    assert table.cfn_options.deletion_policy == CfnDeletionPolicy.DELETE
    assert stack.api.rest_api.node.try_find_child("CloudWatchRole") is None
    assert stack.api.rest_api.node.try_find_child("Account") is None
    assert len(stack.pipeline.queues.delay) == ALTERNATE_DELAY_QUEUES
    trigger = stack.pipeline.trigger.function.node.default_child
    assert isinstance(trigger, lambda_.CfnFunction)
    assert trigger.memory_size == 512
    assert trigger.tracing_config == lambda_.CfnFunction.TracingConfigProperty(mode="Active")
    assert stack.settings.alarm_topic_arn == ALTERNATE_ALARM_TOPIC
    assert stack.settings.bucket_shards == 32
    assert (stack.settings.tracing, stack.settings.dashboard, stack.settings.canary) == ("active", True, True)
    assert stack.monitoring.dashboard is not None
    assert stack.canary is not None
