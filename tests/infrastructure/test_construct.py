"""The Sundial construct (infra/sundial.py): its keyword arguments are the settings of cdk.json,
each with the model's type and default, refused as the context refuses them but named as
arguments; the repository's stack holds it without a logical ID changing; it exposes what a team's
app needs. None of these tests builds a stack of its own: they use the suite's synthesized ones,
or stop before a construct is made (tests/infrastructure/test_external_app.py synthesizes one in a
team's app, from the wheels)."""

from __future__ import annotations

import inspect
import re
import typing
from pathlib import Path

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_sns as sns

from infra import bundling, names
from infra.app import cdk_json_context
from infra.keywords import SundialSettings
from infra.settings import DeploymentSettings, KeywordSettings, SettingsError
from infra.sundial import REGISTER_ROUTES, Sundial
from release import keywords
from shared.settings.context import CONTEXT_PREFIX, context_key
from tests.infrastructure.conftest import ALTERNATE_ALARM_TOPIC, Built, Synthesized, scratch_outdir

pytestmark = pytest.mark.infrastructure

ROOT = Path(__file__).resolve().parents[2]


def test_the_keyword_arguments_are_written_from_the_settings_model() -> None:
    assert keywords.TARGET.read_text() == keywords.source(), "run .venv/bin/python -m release.keywords"


def test_every_context_setting_has_a_keyword_argument_and_every_keyword_argument_a_setting() -> None:
    arguments = {context_key(name) for name in typing.get_type_hints(SundialSettings)}
    assert arguments == set(DeploymentSettings.context_keys())
    in_cdk_json = {key for key in cdk_json_context() if key.startswith(CONTEXT_PREFIX)}
    assert arguments == in_cdk_json


def test_each_keyword_argument_has_the_model_s_default_and_a_type_the_model_accepts() -> None:
    signature = inspect.signature(Sundial)
    hints = typing.get_type_hints(SundialSettings)
    for name, field in DeploymentSettings.model_fields.items():
        parameter = signature.parameters[name]
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY
        assert parameter.default == field.default, name
        assert parameter.annotation == hints[name]
        expected = field.annotation if typing.get_origin(field.annotation) is not typing.Literal else None
        if expected is not None:
            assert hints[name] is expected, name
    assert KeywordSettings().model_dump() == DeploymentSettings().model_dump()


def test_the_settings_model_refuses_a_bad_argument_naming_it() -> None:
    stack = Stack(App(outdir=scratch_outdir()), "Probe")
    with pytest.raises(SettingsError, match=r"^bucket_shards must be at least 1, got 0$"):
        Sundial(stack, "Scheduler", bucket_shards=0)
    with pytest.raises(SettingsError) as refused:
        Sundial(stack, "Scheduler", lead_ms=1_000, trigger_batch_size=100)  # a rule of the context's
    assert "lead_ms must be at least" in str(refused.value)
    assert "trigger_batch_size" in str(refused.value)
    assert CONTEXT_PREFIX not in str(refused.value)
    with pytest.raises(SettingsError, match=r"^removal_policy must be one of 'retain' or 'destroy'"):
        Sundial(stack, "Scheduler", removal_policy="keep")  # type: ignore[arg-type]
    assert len(stack.node.children) == 0, "nothing is built before the settings are checked"


def test_an_unknown_argument_or_settings_twice_is_a_type_error() -> None:
    stack = Stack(App(outdir=scratch_outdir()), "Probe")
    with pytest.raises(TypeError, match=r"unexpected keyword argument.* bucket_shard "):
        Sundial(stack, "Scheduler", bucket_shard=8)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="not both"):
        Sundial(stack, "Scheduler", settings=DeploymentSettings(), bucket_shards=8)
    topic = sns.Topic.from_topic_arn(stack, "Topic", ALTERNATE_ALARM_TOPIC)
    with pytest.raises(SettingsError, match="alarm_topic and alarm_topic_arn name two topics"):
        Sundial(stack, "Scheduler", alarm_topic=topic, alarm_topic_arn=ALTERNATE_ALARM_TOPIC)


def test_a_second_sundial_in_a_stack_is_refused_before_anything_is_built(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    before = len(stack.node.children)
    with pytest.raises(ValueError, match=r"has a Sundial already \(Sundial/Default\)"):
        Sundial(stack, "Second")
    assert len(stack.node.children) == before


def test_the_repository_s_stack_holds_the_construct_out_of_the_logical_ids(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    assert stack.sundial.node.id == names.CONSTRUCT_ID == "Default"
    assert stack.storage is stack.sundial.storage
    logical_ids = list(synthesized.template.to_json()["Resources"])
    assert [logical for logical in logical_ids if logical.startswith(names.CONSTRUCT_ID)] == []
    assert synthesized.template.to_json()["Outputs"].keys() >= {names.OUTPUT_API_URL, names.OUTPUT_TABLE_NAME}


def test_the_construct_exposes_the_api_the_table_the_function_url_and_the_alarm_topic(
    synthesized: Synthesized, alternate: Built, unalarmed: Built
) -> None:
    sundial, stack = synthesized.stack.sundial, synthesized.stack
    outputs = synthesized.template.to_json()["Outputs"]
    assert stack.resolve(sundial.api_url) == outputs[names.OUTPUT_API_URL]["Value"]
    assert stack.resolve(sundial.scheduler_url) == outputs[names.OUTPUT_SCHEDULER_FUNCTION_URL]["Value"]
    assert stack.resolve(sundial.table.table_name) == outputs[names.OUTPUT_TABLE_NAME]["Value"]
    assert sundial.alarm_topic is None
    assert sundial.alarms == []
    assert unalarmed.stack.sundial.scheduler_url is None
    alarmed = alternate.stack.sundial
    assert alarmed.alarm_topic is not None
    assert alarmed.alarm_topic.topic_arn == ALTERNATE_ALARM_TOPIC
    assert alarmed.alarms


def test_the_routes_grant_register_names_are_the_iam_twins_of_the_api_s_registrations() -> None:
    routes = (ROOT / "functions" / "api" / "routes" / "tasks.py").read_text()
    registered = set(re.findall(r'@router\.post\("([^"]+)"[^\n]*summary="Register', routes))
    twins = set(re.findall(r'@router\.post\(\s*"(/iam[^"]+)"', routes))
    assert {path for method, path in REGISTER_ROUTES if method == "POST"} == twins
    assert {f"/iam{path}" for path in registered} == twins
    assert {method for method, _ in REGISTER_ROUTES} == {"POST"}


def test_the_sources_and_the_cache_are_the_checkout_s_or_the_wheel_s(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    (checkout / "infra").mkdir(parents=True)
    assert bundling.source_root(checkout / "infra") == checkout
    assert bundling.default_build_dir(checkout / "infra") == checkout / ".build"
    installed = tmp_path / "site-packages" / "sundial_cdk"
    (installed / bundling.SHIPPED_SOURCES).mkdir(parents=True)
    assert bundling.source_root(installed) == installed / bundling.SHIPPED_SOURCES
    assert bundling.default_build_dir(installed) == Path.cwd() / ".build" / "sundial"
    assert bundling.SOURCE_ROOT == ROOT, "this checkout's sources"
