"""One synthesis per test session: the real app (cdk.json context, cdk-nag plugin) into a temp dir.

The first session on a fresh checkout builds the Lambda dependency layer under .build/ (pip
downloads the wheels once); later sessions reuse it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, CfnResource, Stack
from aws_cdk.assertions import Template

from infra import names
from infra.app import build_app
from infra.stack import SundialStack


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


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    outdir = tmp_path_factory.mktemp("cdk.out")
    app = build_app(outdir=str(outdir))
    assembly = app.synth()
    stack = app.node.find_child(names.STACK_NAME)
    assert isinstance(stack, SundialStack)
    artifact = assembly.get_stack_artifact(stack.artifact_id)
    return Synthesized(app=app, stack=stack, template=Template.from_json(artifact.template), outdir=outdir)


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


@pytest.fixture(scope="session")
def alternate() -> Built:
    """What the defaults leave out: several delay queues, a larger trigger, an alarm topic, a throw-away stack
    (removal policy "destroy") in an account that already has API Gateway's CloudWatch role."""
    app = build_app(
        nag=False,
        overrides={
            names.CTX_DELAY_QUEUES: ALTERNATE_DELAY_QUEUES,
            names.CTX_TRIGGER_MEMORY_MB: 512,
            names.CTX_ALARM_TOPIC_ARN: ALTERNATE_ALARM_TOPIC,
            names.CTX_REMOVAL_POLICY: "destroy",
            names.CTX_API_GATEWAY_CLOUDWATCH_ROLE: False,
        },
    )
    stack = app.node.find_child(names.STACK_NAME)
    assert isinstance(stack, SundialStack)
    return Built(stack=stack, template=Template.from_stack(stack))
