"""Sundial from outside the repository: ``make dist``'s three wheels, installed into a fresh venv,
in a team's own CDK app.

The wheels are built as ``make dist`` builds them (release/dist.py) and installed with ``uv`` into
a venv made for the test, with their dependencies from the index (uv's cache), pinned to the
repository's versions as constraints. The app, written into a temporary directory, has a package
``infra`` of its own (as a team's app often has) holding an order queue and a worker role, and
puts ``Sundial(stack, "Scheduler", bucket_shards=8)`` beside them, with an SNS topic of its own for
the alarms and ``grant_register`` for its worker. It runs with that venv's Python, in its own
directory, with no ``PYTHONPATH``: the repository is not importable. Its context is its cdk.json's,
passed as the CDK CLI passes it (``CDK_CONTEXT_JSON``): the feature flags ``cdk init`` writes (this
repository's). Its layer and code are built in the repository's ``.build/`` (the construct's
``build_dir``): the same recipe and files, so the checkout's cached layer serves.

Then: the three wheels carry one version; the app imported its own ``infra`` and the wheels'
modules; its stack holds the core resources beside its own; cdk-nag left no finding
unacknowledged and cfn-lint is clean (``make synth``'s gate, infra/synth_check.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from infra import bundling, names, synth_check
from infra.app import cdk_json_context
from release import dist
from shared.settings.context import CONTEXT_PREFIX
from shared.settings.environment import env_name
from tests.infrastructure.conftest import Synthesized

pytestmark = pytest.mark.infrastructure

ROOT = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).with_name("uv")
PAGER = "arn:aws:sns:eu-west-1:123456789012:shop-pager"

APP = f'''\
"""A team's CDK app: its own resources, and Sundial beside them."""

import json
import os

import infra
import shared
import sundial_cdk
from aws_cdk import App, CfnOutput, Stack, Validations
from aws_cdk import aws_sns as sns
from cdk_nag import AwsSolutionsChecks
from constructs import Construct
from infra.orders import Orders
from sundial_cdk import Sundial


class ShopStack(Stack):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.orders = Orders(self, "Orders")
        pager = sns.Topic.from_topic_arn(self, "Pager", "{PAGER}")
        self.scheduler = Sundial(
            self, "Scheduler", bucket_shards=8, alarm_topic=pager, build_dir=os.environ.get("SHOP_BUILD_DIR")
        )
        self.scheduler.grant_register(self.orders.worker)
        CfnOutput(self, "SchedulerApi", value=self.scheduler.api_url)


app = App(outdir="cdk.out")
ShopStack(app, "Shop")
Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
app.synth()
print(json.dumps({{module.__name__: module.__file__ for module in (infra, shared, sundial_cdk)}}))
'''

ORDERS = '''\
"""The shop's own resources."""

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs
from constructs import Construct


class Orders(Construct):
    """An order queue, its dead-letter queue, and the role of the worker that registers tasks."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        dead_letters = sqs.Queue(self, "DeadLetters", enforce_ssl=True, retention_period=Duration.days(14))
        self.queue = sqs.Queue(
            self,
            "Queue",
            enforce_ssl=True,
            dead_letter_queue=sqs.DeadLetterQueue(max_receive_count=3, queue=dead_letters),
        )
        self.worker = iam.Role(self, "Worker", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
'''

CORE = (
    "AWS::DynamoDB::Table",
    "AWS::SQS::Queue",
    "AWS::StepFunctions::StateMachine",
    "AWS::Lambda::Function",
    "AWS::Lambda::LayerVersion",
    "AWS::ApiGateway::RestApi",
    "AWS::Lambda::Url",
)
"""The types whose resources the repository's stack and the team's Sundial must have alike."""


def _constraints(path: Path) -> Path:
    """Every ``name==version`` the repository pins, as a uv constraints file (no extras, no paths)."""
    pins = []
    for requirements in ("requirements.txt", "requirements-cli.txt", "requirements-dev.txt"):
        for line in (ROOT / requirements).read_text().splitlines():
            match = re.fullmatch(r"([A-Za-z0-9_.-]+)(\[[^\]]*\])?==([^\s#;]+)\s*(#.*)?", line.strip())
            if match:
                pins.append(f"{match.group(1)}=={match.group(3)}")
    path.write_text("\n".join(pins) + "\n")
    return path


@dataclass(frozen=True)
class External:
    wheels: list[Path]
    outdir: Path
    template: dict[str, Any]
    modules: dict[str, str]
    """Where the app's ``infra``, ``shared`` and ``sundial_cdk`` came from."""

    def resources(self, kind: str) -> dict[str, Any]:
        return {logical: r for logical, r in self.template["Resources"].items() if r["Type"] == kind}


def _run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    answer = subprocess.run(command, capture_output=True, text=True, check=False, timeout=900, **kwargs)
    assert answer.returncode == 0, f"{' '.join(command)}:\n{answer.stdout}{answer.stderr}"
    return answer


@pytest.fixture(scope="module")
def external(tmp_path_factory: pytest.TempPathFactory) -> External:
    if not UV.is_file():
        pytest.skip(f"no uv beside {sys.executable} (make installs it): the wheels cannot be installed")
    scratch = tmp_path_factory.mktemp("external")
    wheels = dist.build(scratch / "dist")
    clean = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "VIRTUAL_ENV"))}
    venv = scratch / "venv"
    _run([str(UV), "venv", "--quiet", "--python", sys.executable, str(venv)], env=clean)
    python = venv / "bin" / "python"
    install = [str(UV), "pip", "install", "--quiet", "--python", str(python)]
    _run([*install, *map(str, wheels), "cdk-nag", "--constraint", str(_constraints(scratch / "pins.txt"))], env=clean)
    _run([str(UV), "pip", "check", "--quiet", "--python", str(python)], env=clean)

    project = scratch / "shop"
    (project / "infra").mkdir(parents=True)
    (project / "infra" / "__init__.py").write_text('"""The shop\'s own constructs."""\n')
    (project / "infra" / "orders.py").write_text(ORDERS)
    (project / "app.py").write_text(APP)
    context = {key: value for key, value in cdk_json_context().items() if not key.startswith(CONTEXT_PREFIX)}
    (project / "cdk.json").write_text(json.dumps({"app": f"{python} app.py", "context": context}, indent=1))
    environment = {
        **clean,
        "CDK_CONTEXT_JSON": json.dumps(context),  # as the CDK CLI hands an app its cdk.json's context
        "SHOP_BUILD_DIR": str(bundling.default_build_dir()),
    }
    synth = _run([str(python), "app.py"], cwd=project, env=environment)
    outdir = project / "cdk.out"
    template = json.loads((outdir / "Shop.template.json").read_text())
    return External(wheels, outdir, template, json.loads(synth.stdout.strip().splitlines()[-1]))


def test_the_three_wheels_carry_one_version(external: External) -> None:
    version = dist.version()
    found = {}
    for wheel in external.wheels:
        with zipfile.ZipFile(wheel) as archive:
            (metadata,) = [name for name in archive.namelist() if name.endswith(".dist-info/METADATA")]
            headers = archive.read(metadata).decode().split("\n\n", 1)[0].splitlines()
        fields = [line.split(": ", 1) for line in headers if ": " in line]
        found[dict(fields)["Name"]] = dict(fields)["Version"]
        if dict(fields)["Name"] == dist.CDK:
            assert f"Requires-Dist: {dist.CLI}=={version}" in headers
    assert found == {dist.CLI: version, dist.CDK: version, dist.RECEIVER: version}


def test_the_app_runs_its_own_infra_and_the_wheels_not_the_repository(external: External) -> None:
    assert Path(external.modules["infra"]).parent.parent.name == "shop"
    for module in ("shared", "sundial_cdk"):
        assert "site-packages" in Path(external.modules[module]).parts
        assert not Path(external.modules[module]).is_relative_to(ROOT)


def test_the_team_s_stack_has_sundial_s_core_resources_beside_its_own(
    external: External, synthesized: Synthesized
) -> None:
    ours = Counter(resource["Type"] for resource in synthesized.template.to_json()["Resources"].values())
    theirs = Counter(resource["Type"] for resource in external.template["Resources"].values())
    own = Counter({"AWS::SQS::Queue": 2})  # the shop's order queue and its dead-letter queue
    assert {kind: theirs[kind] - own[kind] for kind in CORE} == {kind: ours[kind] for kind in CORE}
    assert any(logical.startswith("OrdersQueue") for logical in external.resources("AWS::SQS::Queue"))
    environments = [
        f["Properties"]["Environment"]["Variables"] for f in external.resources("AWS::Lambda::Function").values()
    ]
    assert {variables[env_name("bucket_shards")] for variables in environments} == {"8"}
    outputs = external.template["Outputs"]
    assert any(key.startswith(f"Scheduler{names.OUTPUT_API_URL}") for key in outputs)


def test_grant_register_and_the_team_s_alarm_topic_reach_the_template(external: External) -> None:
    (policy,) = [
        p for logical, p in external.resources("AWS::IAM::Policy").items() if logical.startswith("OrdersWorker")
    ]
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == "execute-api:Invoke"
    assert [arn["Fn::Join"][1][-1] for arn in statement["Resource"]] == [
        "/prod/POST/iam/v1/tasks",
        "/prod/POST/iam/v1/tasks:batch",
    ]
    (worker,) = [logical for logical in external.resources("AWS::IAM::Role") if logical.startswith("OrdersWorker")]
    mapped = [
        variables[env_name("iam_roles")]
        for f in external.resources("AWS::Lambda::Function").values()
        if env_name("iam_roles") in (variables := f["Properties"]["Environment"]["Variables"])
    ]
    assert mapped == [{"Fn::Join": ["", ["default=", {"Fn::GetAtt": [worker, "Arn"]}]]}]
    alarms = external.resources("AWS::CloudWatch::Alarm").values()
    assert alarms
    assert all(alarm["Properties"]["AlarmActions"] == [PAGER] for alarm in alarms)


def test_cdk_nag_and_cfn_lint_pass_the_team_s_stack(external: External) -> None:
    assert (external.outdir / synth_check.VALIDATION_REPORT).is_file(), "the app's validation plugin (cdk-nag) ran"
    assert synth_check.unacknowledged_findings(external.outdir) == []
    templates = synth_check.stack_templates(external.outdir)
    assert [path.name for path in templates] == ["Shop.template.json"]
    assert synth_check.cfn_lint(templates)


def test_the_team_s_app_ships_the_checkout_s_assets(external: External, synthesized: Synthesized) -> None:
    """The wheel's package data is the checkout's code and requirements: the same asset hashes."""

    def lambda_assets(manifest: Path) -> set[str]:
        files = json.loads(manifest.read_text())["files"]
        return {digest for digest, entry in files.items() if entry["source"]["path"].startswith("asset.")}

    ours = lambda_assets(synthesized.outdir / f"{synthesized.stack.artifact_id}.assets.json")
    assert len(ours) == 2, "the layer and the code"
    assert lambda_assets(external.outdir / "Shop.assets.json") == ours
