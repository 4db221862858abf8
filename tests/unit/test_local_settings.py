"""The local runtime's settings: its knobs, its functions' settings, and the rules that tie them
to the runtime's own surroundings (its tick period, its delay queues' visibility timeout)."""

from __future__ import annotations

import pytest

from local.settings import (
    CHECKOUT_DATA,
    CHECKOUT_VIRTUAL_DATA,
    DELAY_VISIBILITY_S,
    FUNCTIONS,
    JOB_STATE_MACHINE_ARN,
    LocalSettings,
)
from shared.settings.environment import env_name, from_env
from shared.settings.model import SettingsError

pytestmark = pytest.mark.unit


def _knob(field: str) -> str:
    return LocalSettings.setting_name(field)


def test_the_defaults() -> None:
    settings = LocalSettings.from_env({})
    assert (settings.port, settings.tick_period_s, settings.delay_queues, settings.moto_port) == (8080, 1.0, 4, None)
    assert settings.functions == FUNCTIONS
    assert settings.functions.allow_loopback_targets
    assert settings.functions.job_state_machine_arn == JOB_STATE_MACHINE_ARN


def test_knobs_and_function_settings_come_from_the_environment() -> None:
    settings = LocalSettings.from_env(
        {_knob("port"): "9000", _knob("moto_port"): "9001", env_name("bucket_shards"): "4", "UNRELATED": "x"}
    )
    assert (settings.port, settings.moto_port) == (9000, 9001)
    assert settings.functions.bucket_shards == 4
    assert settings.functions.lead_ms == FUNCTIONS.lead_ms


def test_overrides_win() -> None:
    assert LocalSettings.from_env({_knob("port"): "9000"}, port=9100).port == 9100


def test_the_functions_environment_reads_back() -> None:
    settings = LocalSettings.from_env({}).functions.with_resources(delay_queue_urls=("http://q/0", "http://q/1"))
    assert from_env(settings.to_env()) == settings


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"port": "0"}, "port"),
        ({"port": "http"}, "port"),
        ({"delay_queues": "33"}, "delay_queues"),
        ({"tick_period_s": "0"}, "tick_period_s"),
    ],
)
def test_bad_knobs_are_refused_naming_the_variable(environ: dict[str, str], named: str) -> None:
    with pytest.raises(SettingsError, match=_knob(named)):
        LocalSettings.from_env({_knob(field): value for field, value in environ.items()})


def test_a_tick_period_longer_than_the_look_ahead_is_refused() -> None:
    """Tasks due between two ticks would be staged late."""
    assert FUNCTIONS.look_ahead_ms == 3000
    LocalSettings.from_env({_knob("tick_period_s"): "3"})
    with pytest.raises(SettingsError, match=env_name("look_ahead_ms")):
        LocalSettings.from_env({_knob("tick_period_s"): "3.5"})


def test_a_lease_outlasting_the_local_visibility_timeout_is_refused() -> None:
    with pytest.raises(SettingsError, match=env_name("lease_ms")):
        LocalSettings.from_env({env_name("lease_ms"): str(DELAY_VISIBILITY_S * 1000)})


def test_a_function_setting_out_of_bounds_is_refused() -> None:
    with pytest.raises(SettingsError, match=env_name("bucket_shards")):
        LocalSettings.from_env({env_name("bucket_shards"): "2000"})


def test_the_trigger_batch_size_is_a_knob_as_the_stacks_setting() -> None:
    assert LocalSettings.from_env({}).trigger_batch_size == 10
    assert LocalSettings.from_env({_knob("trigger_batch_size"): "50"}).trigger_batch_size == 50
    for bad in ("0", "1001", "ten"):
        with pytest.raises(SettingsError, match=_knob("trigger_batch_size")):
            LocalSettings.from_env({_knob("trigger_batch_size"): bad})


def test_make_run_keeps_its_state_in_the_checkout_unless_told_where_and_others_in_memory() -> None:
    assert (LocalSettings.from_env({}).data, LocalSettings.from_env({}).fresh) == ("", False)
    assert LocalSettings.from_env({}, make_run=True).data == CHECKOUT_DATA
    virtual = LocalSettings.from_env({_knob("clock"): "virtual"}, make_run=True)
    assert virtual.data == CHECKOUT_VIRTUAL_DATA != CHECKOUT_DATA  # an advanced clock's state apart from the wall's
    assert LocalSettings.from_env({_knob("clock"): "virtual", _knob("data"): "/tmp/v"}, make_run=True).data == "/tmp/v"
    assert CHECKOUT_DATA.endswith("/.sundial")
    assert LocalSettings.from_env({_knob("data"): "/tmp/elsewhere"}, make_run=True).data == "/tmp/elsewhere"
    assert LocalSettings.from_env({_knob("data"): "memory"}, make_run=True).data == ""  # no folder at all
    assert LocalSettings.from_env({_knob("fresh"): "1"}, make_run=True).fresh
    assert not LocalSettings.from_env({_knob("fresh"): "0"}, make_run=True).fresh
    with pytest.raises(SettingsError):
        LocalSettings.from_env({_knob("fresh"): "maybe"})
