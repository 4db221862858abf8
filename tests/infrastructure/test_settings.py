"""Deployment settings: cdk.json, the defaults and the functions' own defaults agree."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from aws_cdk import App, CfnDeletionPolicy, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_

from infra import names
from infra.app import cdk_json_context
from infra.settings import DeploymentSettings, SettingsError
from shared import observability
from shared.settings import Settings
from tests.infrastructure.conftest import ALTERNATE_ALARM_TOPIC, ALTERNATE_DELAY_QUEUES, Built

pytestmark = pytest.mark.infrastructure


def _settings(context: dict[str, Any]) -> DeploymentSettings:
    return DeploymentSettings.from_context(App(context=context).node)


def test_cdk_json_states_the_defaults() -> None:
    context = cdk_json_context()
    sundial_keys = {key for key in context if key.startswith("sundial:")}
    assert sundial_keys == {
        value for key, value in vars(names).items() if key.startswith("CTX_") and isinstance(value, str)
    }
    assert _settings(context) == DeploymentSettings()


def test_deployment_defaults_match_what_the_functions_assume() -> None:
    functions = Settings()
    deployment = DeploymentSettings()
    for field in ("bucket_shards", "list_shards", "run_retention_days", "default_tenant"):
        assert getattr(deployment, field) == getattr(functions, field), field
    assert deployment.timing == functions.timing


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


def test_command_line_strings_are_parsed() -> None:
    settings = _settings(
        {
            names.CTX_BUCKET_SHARDS: "32",
            names.CTX_ARCHITECTURE: "x86_64",
            names.CTX_REMOVAL_POLICY: "destroy",
            names.CTX_LOG_RETENTION_DAYS: "90",
            names.CTX_API_GATEWAY_CLOUDWATCH_ROLE: "false",
            names.CTX_DELAY_QUEUES: "3",
            names.CTX_LEASE_MS: "160000",
            names.CTX_ALARM_TOPIC_ARN: "arn:aws:sns:us-east-1:123456789012:ops",
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


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (names.CTX_ARCHITECTURE, "sparc"),
        (names.CTX_REMOVAL_POLICY, "snapshot"),
        (names.CTX_LOG_RETENTION_DAYS, 31),
        (names.CTX_BUCKET_SHARDS, 0),
        (names.CTX_LIST_SHARDS, "four"),
        (names.CTX_API_THROTTLE_RATE, True),
        (names.CTX_DEFAULT_TENANT, ""),
        (names.CTX_API_GATEWAY_CLOUDWATCH_ROLE, "yes"),
        (names.CTX_DELAY_QUEUES, 0),
        (names.CTX_DELAY_QUEUES, 33),
        (names.CTX_TRIGGER_MEMORY_MB, 127),
        (names.CTX_JOB_SHARD_CONCURRENCY, 0),
        (names.CTX_JOB_SHARD_CONCURRENCY, 41),
        (names.CTX_TRIGGER_MEMORY_MB, 10_241),
        (names.CTX_SCANNER_MAX_CONCURRENCY, 1),
        (names.CTX_SCANNER_MAX_CONCURRENCY, 1001),
        (names.CTX_LOOK_AHEAD_MS, 30_000),  # shorter than a tick period: tasks staged late
        (names.CTX_LOOK_AHEAD_MS, 850_000),  # + guard beyond SQS's 900 s delay: messages early
        (names.CTX_GUARD_MS, -1),
        (names.CTX_LEAD_MS, 1_499),
        (names.CTX_LEAD_MS, 10_001),
        (names.CTX_MISFIRE_TOLERANCE_MS, -1),
        (names.CTX_LEASE_MS, 0),
        (names.CTX_LEASE_MS, 180_000),  # a redelivered message would find the lease still held
        (names.CTX_LATENESS_ALARM_MS, 0),
        (names.CTX_ALARM_TOPIC_ARN, "ops-alarms"),
        (names.CTX_ALARM_TOPIC_ARN, "arn:aws:sqs:us-east-1:123456789012:ops"),
    ],
)
def test_bad_values_are_refused_with_the_key_named(key: str, value: Any) -> None:
    with pytest.raises(SettingsError, match=key):
        _settings({key: value})


def test_settings_are_immutable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        DeploymentSettings().bucket_shards = 1  # type: ignore[misc]


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
    assert stack.settings.alarm_topic_arn == ALTERNATE_ALARM_TOPIC
