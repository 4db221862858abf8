"""One synthesis per test session: the real app (cdk.json context, cdk-nag plugin) into a temp dir.

The first session on a fresh checkout builds the Lambda dependency layer under .build/ (pip
downloads the wheels once); later sessions reuse it.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, CfnResource, Stack
from aws_cdk.assertions import Template

from infra import names
from infra.app import build_app
from infra.stack import SundialStack
from shared.settings.context import context_key
from shared.settings.environment import env_name
from shared.settings.tuning import Tuning

_SCRATCH = Path(tempfile.mkdtemp(prefix="sundial-cdk-"))
atexit.register(shutil.rmtree, _SCRATCH, ignore_errors=True)


def scratch_outdir() -> str:
    """A fresh output folder for an app under this process's own, removed at its exit. An ``App``
    made without ``outdir`` makes a ``cdk.out*`` folder of its own in the temp directory, and
    nothing removes it: a run of this suite left about 120 there (126 MB, with the synthesized
    ones' assets)."""
    return tempfile.mkdtemp(prefix="cdk.out", dir=_SCRATCH)


@dataclass(frozen=True)
class Synthesized:
    app: App
    stack: SundialStack
    template: Template
    outdir: Path

    def resources(self, type_name: str) -> dict[str, Any]:
        return dict(self.template.find_resources(type_name))

    def validation_report(self) -> dict[str, Any]:
        return json.loads((self.outdir / "validation-report.json").read_text())


def _synthesized(outdir: Path, overrides: dict[str, Any] | None = None) -> Synthesized:
    app = build_app(outdir=str(outdir), overrides=overrides)
    assembly = app.synth()
    stack = app.node.find_child(names.STACK_NAME)
    assert isinstance(stack, SundialStack)
    artifact = assembly.get_stack_artifact(stack.artifact_id)
    return Synthesized(app=app, stack=stack, template=Template.from_json(artifact.template), outdir=outdir)


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """The app as cdk.json states it: every optional part off but the scheduler's function URL."""
    return _synthesized(tmp_path_factory.mktemp("cdk.out"))


EVERYTHING = {
    context_key("canary"): True,
    context_key("alarms"): True,
    context_key("dashboard"): True,
    context_key("scheduler_function_url"): True,
    context_key("ecs_task_roles"): "report-task,jobs/etl-*",
}
"""Every optional part on (the canary, the alarms, the dashboard, the scheduler's function URL),
with the default removal policy (retain) and signing key mode (parameter): the ``alternate``
fixture has the KMS key."""


@pytest.fixture(scope="session")
def everything(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """Every optional part on (:data:`EVERYTHING`), the removal policy the default (retain),
    synthesized as ``make synth`` does (cdk-nag's plugin, the assembly on disk): with
    :func:`synthesized`, each optional part both on and off."""
    return _synthesized(tmp_path_factory.mktemp("cdk.out-everything"), EVERYTHING)


@pytest.fixture(scope="session")
def template(synthesized: Synthesized) -> Template:
    return synthesized.template


def logical_id(stack: Stack, resource: Any) -> str:
    assert isinstance(resource, CfnResource)
    return stack.resolve(resource.logical_id)


ALTERNATE_DELAY_QUEUES = 3
ALTERNATE_ALARM_TOPIC = "arn:aws:sns:eu-west-1:123456789012:sundial-alarms"


@dataclass(frozen=True)
class Built:
    """A stack built from settings other than the defaults (no cdk-nag, no assembly on disk)."""

    stack: SundialStack
    template: Template

    def resources(self, type_name: str) -> dict[str, Any]:
        return dict(self.template.find_resources(type_name))


def _built(overrides: dict[str, Any]) -> Built:
    app = build_app(outdir=scratch_outdir(), nag=False, overrides=overrides)
    stack = app.node.find_child(names.STACK_NAME)
    assert isinstance(stack, SundialStack)
    return Built(stack=stack, template=Template.from_stack(stack))


@pytest.fixture(scope="session")
def alternate() -> Built:
    """What the defaults leave out: several delay queues, other shards and clock, a larger trigger,
    an alarm topic (so the alarms), the dashboard, the canary and active tracing, the KMS key of the
    signing secrets, a throw-away stack (removal policy "destroy") in an account that already has
    API Gateway's CloudWatch role."""
    return _built(
        {
            context_key("delay_queues"): ALTERNATE_DELAY_QUEUES,
            context_key("bucket_shards"): 32,
            context_key("look_ahead_ms"): 90_000,
            context_key("lead_ms"): 2_500,
            context_key("lease_ms"): 140_000,
            context_key("trigger_memory_mb"): 512,
            context_key("high_priority_concurrency"): 25,
            context_key("alarm_topic_arn"): ALTERNATE_ALARM_TOPIC,
            context_key("dashboard"): True,
            context_key("canary"): True,
            context_key("tracing"): "active",
            context_key("signing_key"): "kms",
            context_key("removal_policy"): "destroy",
            context_key("api_gateway_cloudwatch_role"): False,
        }
    )


@pytest.fixture(scope="session")
def alarmed() -> Built:
    """The alarms asked for without a topic (``sundial:alarms``), and the canary with its alarms;
    no dashboard."""
    return _built({context_key("alarms"): True, context_key("canary"): True})


@pytest.fixture(scope="session")
def unalarmed() -> Built:
    """The dashboard and the canary without alarms (neither ``sundial:alarms`` nor a topic), and
    without the scheduler's function URL (``sundial:schedulerFunctionUrl`` false)."""
    return _built(
        {context_key("dashboard"): True, context_key("canary"): True, context_key("scheduler_function_url"): False}
    )


def settings_environment(settings: Tuning) -> dict[str, str]:
    """What every function's environment says of the deployment's settings: each of
    ``shared.settings.tuning.Tuning``'s fields, and no loopback or private HTTP targets."""
    return {
        **{env_name(field): str(getattr(settings, field)) for field in Tuning.model_fields},
        env_name("allow_loopback_targets"): "false",
        env_name("allow_private_targets"): "false",
    }
