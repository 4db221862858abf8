"""The settings that size the trigger and the table (docs/deploy.md, "Sizing the trigger and the
table"): their bounds, the rules between them, and how the batch size reaches the consumers the
stack and the local runtime build from shared/topology.py."""

from __future__ import annotations

from typing import Any

import pytest

from shared import topology
from shared.settings.capacity import (
    CLAIM_CPU_MS,
    CLAIM_WRITE_MS,
    CLAIMS_PAST_LEAD_MS,
    FULL_VCPU_MB,
    MAX_TRIGGER_BATCH_SIZE,
    NEW_TABLE_WARM_READS,
    NEW_TABLE_WARM_WRITES,
    claim_ms,
)
from shared.settings.context import DeploymentSettings
from shared.settings.model import SettingsError

pytestmark = pytest.mark.unit


def _settings(**context: Any) -> DeploymentSettings:
    return DeploymentSettings.from_context({f"sundial:{key}": value for key, value in context.items()})


def _accepted(**context: Any) -> DeploymentSettings:
    """The settings ``context`` states, checked to be taken as given (each value reaches its
    setting, none is refused or changed on the way)."""
    settings = _settings(**context)
    stated = settings.context()
    assert {f"sundial:{key}": stated[f"sundial:{key}"] for key in context} == {
        f"sundial:{key}": value for key, value in context.items()
    }
    return settings


def _claims_past_the_lead_ms(settings: DeploymentSettings) -> float:
    """How far past the lead a batch's claims, one at a time, run (negative: within it)."""
    return settings.trigger_batch_size * claim_ms(settings.trigger_memory_mb) - settings.lead_ms


def _refused(**context: Any) -> str:
    with pytest.raises(SettingsError) as refused:
        _settings(**context)
    return str(refused.value)


def test_the_defaults_ask_for_nothing() -> None:
    settings = DeploymentSettings()
    assert settings.trigger_batch_size == topology.TRIGGER_BATCH_SIZE == 10
    assert settings.provisioned_pollers is None
    assert (settings.trigger_provisioned_concurrency, settings.table_warm_reads, settings.table_warm_writes) == (
        0,
        0,
        0,
    )


# --- the batch size and the lead -----------------------------------------------------------------


def test_a_claim_takes_the_cpu_share_of_the_memory_and_no_more_than_one_vcpu() -> None:
    assert claim_ms(FULL_VCPU_MB) == CLAIM_CPU_MS + CLAIM_WRITE_MS
    assert claim_ms(10_240) == claim_ms(FULL_VCPU_MB)  # claims in turn use one vCPU at most
    assert claim_ms(128) == pytest.approx(CLAIM_CPU_MS * FULL_VCPU_MB / 128 + CLAIM_WRITE_MS)
    assert claim_ms(128) > claim_ms(1_024) > claim_ms(FULL_VCPU_MB)


def test_every_batch_size_that_fits_the_lead_is_accepted_and_the_next_is_refused() -> None:
    for memory, lead in ((128, 1_500), (128, 2_000), (1_024, 2_000), (1_769, 3_000), (10_240, 10_000)):
        largest = min(MAX_TRIGGER_BATCH_SIZE, int((lead + CLAIMS_PAST_LEAD_MS) // claim_ms(memory)))
        _settings(triggerBatchSize=largest, triggerMemoryMb=memory, leadMs=lead)
        if largest < MAX_TRIGGER_BATCH_SIZE:
            message = _refused(triggerBatchSize=largest + 1, triggerMemoryMb=memory, leadMs=lead)
            for key in ("sundial:triggerBatchSize", "sundial:triggerMemoryMb", "sundial:leadMs"):
                assert key in message, message


def test_the_default_batch_fits_the_shortest_lead_at_the_smallest_memory() -> None:
    """No deployment valid before the batch size was a setting is refused now."""
    shortest = _settings(leadMs=1_500, triggerMemoryMb=128)
    assert shortest.trigger_batch_size * claim_ms(128) <= 1_500


def test_the_simulations_settings_are_accepted() -> None:
    """docs/scale.md, section 4: batches of 50 at 1,024 MB (steady), 100 and 200 at 1,769 MB with
    provisioned pollers and concurrency and a pre-warmed table (hot second)."""
    _accepted(bucketShards=64, triggerBatchSize=50, triggerMemoryMb=1_024)
    _accepted(triggerBatchSize=100, triggerMemoryMb=1_769, triggerMinPollers=100, triggerMaxPollers=200)
    paced = _accepted(
        bucketShards=1_024,
        delayQueues=10,
        triggerMemoryMb=1_769,
        leadMs=3_000,
        triggerBatchSize=200,
        triggerMinPollers=100,
        triggerMaxPollers=200,
        triggerProvisionedConcurrency=5_500,
        tableWarmWrites=400_000,
    )
    assert paced.provisioned_pollers == (100, 200)


def test_the_settings_searchs_cheapest_settings_are_accepted() -> None:
    """docs/scale.md, section 5: the cheapest settings `make simulate`'s search found per scenario
    (their claims run past the lead, under a second past it)."""
    found = [
        _accepted(bucketShards=64, triggerBatchSize=100, triggerMemoryMb=384, leadMs=3_000),
        _accepted(
            bucketShards=1_024,
            delayQueues=11,
            triggerBatchSize=200,
            triggerMemoryMb=768,
            leadMs=4_000,
            triggerMinPollers=50,
            triggerMaxPollers=50,
            triggerProvisionedConcurrency=5_250,
            tableWarmWrites=290_000,
        ),
        _accepted(triggerBatchSize=50, triggerMemoryMb=256, triggerMinPollers=11, triggerMaxPollers=11),
    ]
    for settings in found:
        assert 0 < _claims_past_the_lead_ms(settings) <= CLAIMS_PAST_LEAD_MS, settings
        assert settings.scaling_problems() == []
    assert [s.provisioned_pollers for s in found] == [None, (50, 50), (11, 11)]


def test_a_batch_beyond_the_threads_a_lambda_environment_allows_is_refused() -> None:
    message = _refused(triggerBatchSize=MAX_TRIGGER_BATCH_SIZE + 1, triggerMemoryMb=10_240, leadMs=10_000)
    assert message.startswith(f"sundial:triggerBatchSize must be at most {MAX_TRIGGER_BATCH_SIZE}"), message
    assert "thread" in message
    assert "sundial:triggerBatchSize must be at least 1" in _refused(triggerBatchSize=0)


def test_command_line_strings_are_read() -> None:
    settings = _settings(
        triggerBatchSize="50",
        triggerMemoryMb="1024",
        triggerMinPollers="2",
        triggerMaxPollers="20",
        triggerProvisionedConcurrency="10",
        tableWarmReads="20000",
        tableWarmWrites="8000",
    )
    assert settings.trigger_batch_size == 50
    assert settings.provisioned_pollers == (2, 20)
    assert (settings.trigger_provisioned_concurrency, settings.table_warm_reads, settings.table_warm_writes) == (
        10,
        20_000,
        8_000,
    )


# --- provisioned pollers -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("context", "pollers"),
    [
        ({}, None),
        ({"triggerMinPollers": 2}, (2, None)),  # the maximum is Lambda's default
        ({"triggerMinPollers": 200, "triggerMaxPollers": 2_000}, (200, 2_000)),
        ({"triggerMinPollers": 5, "triggerMaxPollers": 5}, (5, 5)),
    ],
)
def test_provisioned_mode_is_on_when_the_minimum_is_set(context: dict[str, int], pollers: Any) -> None:
    assert _settings(**context).provisioned_pollers == pollers


@pytest.mark.parametrize(
    ("context", "named", "says"),
    [
        ({"triggerMinPollers": 1}, "sundial:triggerMinPollers", "at least 2"),
        ({"triggerMinPollers": 201}, "sundial:triggerMinPollers", "at most 200"),
        ({"triggerMinPollers": 2, "triggerMaxPollers": 1}, "sundial:triggerMaxPollers", "at least 2"),
        ({"triggerMinPollers": 2, "triggerMaxPollers": 2_001}, "sundial:triggerMaxPollers", "at most 2000"),
        ({"triggerMaxPollers": 50}, "sundial:triggerMinPollers", "needs"),
        ({"triggerMinPollers": 50, "triggerMaxPollers": 20}, "sundial:triggerMaxPollers", "at least"),
        ({"triggerMinPollers": -1}, "sundial:triggerMinPollers", "at least 0"),
    ],
)
def test_pollers_out_of_lambdas_ranges_are_refused_naming_the_key(
    context: dict[str, int], named: str, says: str
) -> None:
    message = _refused(**context)
    assert named in message, message
    assert says in message, message


# --- provisioned concurrency and warm throughput -------------------------------------------------


def test_provisioned_concurrency_is_a_count() -> None:
    assert _settings(triggerProvisionedConcurrency=1).trigger_provisioned_concurrency == 1
    assert "sundial:triggerProvisionedConcurrency must be at least 0" in _refused(triggerProvisionedConcurrency=-1)
    assert "sundial:triggerProvisionedConcurrency" in _refused(triggerProvisionedConcurrency="many")


@pytest.mark.parametrize(
    ("key", "field", "least"),
    [
        ("tableWarmReads", "table_warm_reads", NEW_TABLE_WARM_READS),
        ("tableWarmWrites", "table_warm_writes", NEW_TABLE_WARM_WRITES),
    ],
)
def test_warm_throughput_below_a_new_tables_is_refused(key: str, field: str, least: int) -> None:
    assert getattr(_settings(**{key: least}), field) == least
    message = _refused(**{key: least - 1})
    assert f"sundial:{key} must be 0 (not set) or at least {least}" in message, message
    assert f"sundial:{key} must be at least 0" in _refused(**{key: -1})


def test_every_problem_is_told_at_once() -> None:
    message = _refused(triggerBatchSize=50, triggerMinPollers=1, tableWarmWrites=10)
    for key in ("sundial:triggerBatchSize", "sundial:triggerMinPollers", "sundial:tableWarmWrites"):
        assert key in message, message


# --- the consumers -------------------------------------------------------------------------------


def test_the_trigger_consumes_every_delay_queue_at_the_batch_size() -> None:
    consumers = topology.consumers(3, trigger_batch_size=200)
    triggers = [c for c in consumers if c.function == "trigger"]
    assert [c.queue for c in triggers] == ["delay-0", "delay-1", "delay-2"]
    assert {(c.batch_size, c.batching_window_s) for c in triggers} == {(200, topology.TRIGGER_BATCHING_WINDOW_S)}
    assert [c for c in consumers if c.function == "scanner"] == []  # the tick invokes it
    assert topology.consumers(1) == topology.consumers(1, topology.TRIGGER_BATCH_SIZE)


@pytest.mark.parametrize(
    ("batch_size", "window_s"),
    [(0, 1), (topology.MAX_BATCH_SIZE + 1, 1), (11, 0), (10, topology.MAX_BATCHING_WINDOW_S + 1), (10, -1)],
)
def test_a_consumer_lambda_would_refuse_is_refused(batch_size: int, window_s: int) -> None:
    """Lambda hands more than 10 messages at once only with a batching window of at least 1 s."""
    with pytest.raises(ValueError, match="trigger"):
        topology.ConsumerSpec("trigger", "delay-0", batch_size=batch_size, batching_window_s=window_s)


def test_the_consumers_lambda_accepts_are_built() -> None:
    assert topology.ConsumerSpec("trigger", "delay-0", batch_size=10, batching_window_s=0).batch_size == 10
    assert topology.ConsumerSpec("trigger", "delay-0", batch_size=10_000, batching_window_s=1).batch_size == 10_000
