"""The settings that size the trigger and the table reach the template: the trigger's batch size,
its event sources' provisioned pollers, its provisioned concurrency (an alias the event sources
invoke) and the task table's warm throughput; the defaults add none of it; cdk-nag has nothing to
say about them; a setting that breaks a rule stops the app before anything is built."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template

from infra import names, synth_check
from infra.app import build_app
from infra.settings import DeploymentSettings, SettingsError
from infra.stack import SundialStack
from shared import topology
from shared.settings.context import context_key
from tests.infrastructure.conftest import Synthesized, logical_id, scratch_outdir

pytestmark = pytest.mark.infrastructure

SCALED = {
    "delay_queues": 2,
    "trigger_memory_mb": 1_769,
    "lead_ms": 3_000,
    "trigger_batch_size": 200,
    "trigger_min_pollers": 100,
    "trigger_max_pollers": 200,
    "trigger_provisioned_concurrency": 50,
    "table_warm_reads": 20_000,
    "table_warm_writes": 400_000,
}
"""docs/scale.md's paced hot second (fewer queues and environments: the template is the same)."""


class Scaled:
    def __init__(self, outdir: Path) -> None:
        app = build_app(outdir=str(outdir), overrides={context_key(field): value for field, value in SCALED.items()})
        app.synth()
        stack = app.node.find_child(names.STACK_NAME)
        assert isinstance(stack, SundialStack)
        self.stack = stack
        self.outdir = outdir
        self.template = Template.from_stack(stack)

    def resources(self, type_name: str) -> dict[str, Any]:
        return dict(self.template.find_resources(type_name))


@pytest.fixture(scope="module")
def scaled(tmp_path_factory: pytest.TempPathFactory) -> Scaled:
    return Scaled(tmp_path_factory.mktemp("scaled.out"))


def _ids(stack: SundialStack) -> dict[str, str]:
    pipeline = stack.pipeline
    ids = {
        "trigger": logical_id(stack, pipeline.trigger.function.node.default_child),
        "scanner": logical_id(stack, pipeline.scanner.function.node.default_child),
    }
    if pipeline.trigger.alias is not None:
        ids["alias"] = logical_id(stack, pipeline.trigger.alias.node.default_child)
    return ids


def _mappings(built: Synthesized | Scaled, function_id: str) -> list[dict[str, Any]]:
    """The properties of the event sources whose function (or alias of it) is ``function_id``."""
    found = []
    for mapping in built.resources("AWS::Lambda::EventSourceMapping").values():
        if function_id in str(mapping["Properties"]["FunctionName"]):
            found.append(mapping["Properties"])
    return found


# --- the defaults ------------------------------------------------------------------------------


def test_the_defaults_add_none_of_it(synthesized: Synthesized) -> None:
    assert synthesized.resources("AWS::Lambda::Alias") == {}
    assert synthesized.resources("AWS::Lambda::Version") == {}
    for mapping in synthesized.resources("AWS::Lambda::EventSourceMapping").values():
        assert "ProvisionedPollerConfig" not in mapping["Properties"]
    for table in synthesized.resources("AWS::DynamoDB::Table").values():
        assert "WarmThroughput" not in table["Properties"]
    ids = _ids(synthesized.stack)
    triggers = _mappings(synthesized, ids["trigger"])
    assert len(triggers) == DeploymentSettings().delay_queues
    for properties in triggers:
        assert properties["FunctionName"] == {"Ref": ids["trigger"]}
        assert properties["BatchSize"] == topology.TRIGGER_BATCH_SIZE


# --- the settings in the template ----------------------------------------------------------------


def test_the_batch_size_reaches_every_delay_queues_event_source_with_its_window(scaled: Scaled) -> None:
    ids = _ids(scaled.stack)
    triggers = _mappings(scaled, ids["alias"])
    queues = {properties["EventSourceArn"]["Fn::GetAtt"][0] for properties in triggers}
    expected = {logical_id(scaled.stack, queue.node.default_child) for queue in scaled.stack.pipeline.queues.delay}
    assert queues == expected
    assert len(expected) == SCALED["delay_queues"]
    for properties in triggers:
        assert properties["BatchSize"] == SCALED["trigger_batch_size"]
        # Lambda hands more than 10 messages at once only with a batching window
        assert properties["MaximumBatchingWindowInSeconds"] == topology.TRIGGER_BATCHING_WINDOW_S >= 1
    assert _mappings(scaled, ids["scanner"]) == []  # the tick invokes it (shared/adapters/scans.py)


def test_every_delay_queues_event_source_has_the_provisioned_pollers_and_the_others_none(scaled: Scaled) -> None:
    ids = _ids(scaled.stack)
    for properties in _mappings(scaled, ids["alias"]):
        assert properties["ProvisionedPollerConfig"] == {
            "MinimumPollers": SCALED["trigger_min_pollers"],
            "MaximumPollers": SCALED["trigger_max_pollers"],
        }
        assert "ScalingConfig" not in properties  # Lambda scales a source one way or the other
    recover_id = logical_id(scaled.stack, scaled.stack.pipeline.recover.function.node.default_child)
    assert _mappings(scaled, recover_id) == []  # the tick invokes it to drain the stranded queue


def test_a_minimum_alone_leaves_the_maximum_to_lambda() -> None:
    config = DeploymentSettings(trigger_min_pollers=2).trigger_poller_config
    assert config is not None
    assert (config.minimum_pollers, config.maximum_pollers) == (2, None)
    assert DeploymentSettings().trigger_poller_config is None


def test_an_alias_of_the_current_version_holds_the_provisioned_concurrency(scaled: Scaled) -> None:
    ids = _ids(scaled.stack)
    [(alias_id, alias)] = scaled.resources("AWS::Lambda::Alias").items()
    assert alias_id == ids["alias"]
    [(version_id, version)] = scaled.resources("AWS::Lambda::Version").items()
    assert version["Properties"]["FunctionName"] == {"Ref": ids["trigger"]}
    assert alias["Properties"] == {
        "FunctionName": {"Ref": ids["trigger"]},
        "FunctionVersion": {"Fn::GetAtt": [version_id, "Version"]},
        "Name": names.LIVE_ALIAS_NAME,
        "ProvisionedConcurrencyConfig": {"ProvisionedConcurrentExecutions": SCALED["trigger_provisioned_concurrency"]},
    }
    # the alias (and the event sources on it) come after the role may receive from the queues
    trigger_policy = logical_id(scaled.stack, scaled.stack.pipeline.trigger.policy.node.default_child)
    assert trigger_policy in alias["DependsOn"]


def test_the_event_sources_invoke_the_alias_not_the_unprovisioned_function(scaled: Scaled) -> None:
    ids = _ids(scaled.stack)
    triggers = _mappings(scaled, ids["alias"])
    assert len(triggers) == SCALED["delay_queues"]
    for properties in triggers:
        assert {"Ref": ids["alias"]} in properties["FunctionName"]["Fn::Join"][1][0]["Fn::Select"][1]["Fn::Split"]
        assert properties["FunctionName"]["Fn::Join"][1][1] == f":{names.LIVE_ALIAS_NAME}"
    assert _mappings(scaled, ids["trigger"]) == []  # none on the function itself


def test_the_task_table_is_pre_warmed_and_the_idempotency_table_is_not(scaled: Scaled) -> None:
    storage = scaled.stack.storage
    tables = scaled.resources("AWS::DynamoDB::Table")
    task_table = tables[logical_id(scaled.stack, storage.table.node.default_child)]["Properties"]
    assert task_table["WarmThroughput"] == {
        "ReadUnitsPerSecond": SCALED["table_warm_reads"],
        "WriteUnitsPerSecond": SCALED["table_warm_writes"],
    }
    idempotency = tables[logical_id(scaled.stack, storage.idempotency_table.node.default_child)]["Properties"]
    assert "WarmThroughput" not in idempotency


def test_one_warm_value_alone_is_stated_alone() -> None:
    warm = DeploymentSettings(table_warm_writes=8_000).table_warm_throughput
    assert warm is not None
    assert (warm.read_units_per_second, warm.write_units_per_second) == (None, 8_000)
    assert DeploymentSettings().table_warm_throughput is None


def test_cdk_nag_has_no_finding_on_the_scaled_stack(scaled: Scaled) -> None:
    assert synth_check.unacknowledged_findings(scaled.outdir) == []


# --- what the constructs refuse ------------------------------------------------------------------


def test_an_event_source_is_not_given_pollers_and_a_maximum_concurrency(scaled: Scaled) -> None:
    scanner = scaled.stack.pipeline.scanner
    queue = sqs.Queue(scaled.stack, "Extra")
    config = DeploymentSettings(trigger_min_pollers=2).trigger_poller_config
    with pytest.raises(ValueError, match="not both"):
        scanner.consume(queue, batch_size=1, batching_window_s=0, max_concurrency=5, pollers=config)


def test_concurrency_is_provisioned_once_and_before_the_event_sources(scaled: Scaled) -> None:
    with pytest.raises(ValueError, match="once, before its event sources"):
        scaled.stack.pipeline.trigger.provision(10)
    with pytest.raises(ValueError, match="once, before its event sources"):
        scaled.stack.pipeline.high_priority_trigger.provision(10)  # it has its event source


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"triggerBatchSize": 50}, "sundial:triggerBatchSize"),
        ({"triggerBatchSize": 1001}, "sundial:triggerBatchSize"),
        ({"triggerMinPollers": 1}, "sundial:triggerMinPollers"),
        ({"triggerMinPollers": 10, "triggerMaxPollers": 2001}, "sundial:triggerMaxPollers"),
        ({"triggerMaxPollers": 10}, "sundial:triggerMinPollers"),
        ({"triggerProvisionedConcurrency": -1}, "sundial:triggerProvisionedConcurrency"),
        ({"tableWarmWrites": 1000}, "sundial:tableWarmWrites"),
        ({"tableWarmReads": 1000}, "sundial:tableWarmReads"),
    ],
)
def test_the_app_refuses_a_bad_value_naming_the_key(overrides: dict[str, Any], named: str) -> None:
    with pytest.raises(SettingsError) as refused:
        build_app(
            outdir=scratch_outdir(), nag=False, overrides={f"sundial:{key}": value for key, value in overrides.items()}
        )
    assert named in str(refused.value)
