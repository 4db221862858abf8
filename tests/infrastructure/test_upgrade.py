"""No upgrade loses tasks unannounced: a deploy of HEAD over the previous release (its commit in
release/releases.json) replaces no table, queue or state machine but those the version being made
announces (release/replacements.py says what a deploy replaces; docs/construct.md, section 3).

The previous release's stack is its own: its tree, ``git archive``d into a temporary directory,
runs its own ``app.py`` (its cdk.json's settings) with this checkout's ``.venv`` Python; its
``.build`` is this checkout's, so the dependency layer is not built again. Its template is kept in
``.build/upgrade/``, keyed by the commit and the pinned toolchain, so a later run reads it back.
HEAD's is the suite's own synthesis (``synthesized``: cdk.json's settings too). Without the
previous release's commit (a shallow clone) the check skips, and says so.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from infra import bundling, names
from release import record
from release.replacements import Replacement, create_only_properties, replacements
from tests.infrastructure.conftest import Synthesized

pytestmark = pytest.mark.infrastructure

ROOT = Path(__file__).resolve().parents[2]


def _git(*arguments: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *arguments], cwd=ROOT, capture_output=True, check=False, timeout=120)


def _release_tree(commit: str, into: Path) -> Path:
    archive = _git("archive", "--format=tar", commit)
    assert archive.returncode == 0, archive.stderr.decode()
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


def _synthesized_release(tree: Path) -> dict[str, Any]:
    """The release's own app, synthesized in its tree (PYTHONPATH: the tree, as its Makefile sets it)."""
    build = bundling.default_build_dir()
    build.mkdir(exist_ok=True)
    (tree / ".build").symlink_to(build, target_is_directory=True)
    outdir = tree / "cdk.out"
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", str(tree)),
        "PYTHONPATH": f"{tree}{os.pathsep}{tree / 'receiver-kit'}",
        # The venv's bytecode is read from where this run keeps it; none is written (the release's
        # modules' would land there under a temporary path).
        **({"PYTHONPYCACHEPREFIX": os.environ["PYTHONPYCACHEPREFIX"]} if "PYTHONPYCACHEPREFIX" in os.environ else {}),
        "PYTHONDONTWRITEBYTECODE": "1",
        "CDK_OUTDIR": str(outdir),
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": os.environ.get(
            "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20"
        ),
        "CDK_DISABLE_VERSION_CHECK": "1",
    }
    synth = subprocess.run(
        [sys.executable, "app.py"], cwd=tree, env=environment, capture_output=True, text=True, check=False, timeout=900
    )
    assert synth.returncode == 0, synth.stdout + synth.stderr
    return json.loads((outdir / f"{names.STACK_NAME}.template.json").read_text())


def _cache_key(commit: str) -> str:
    """What the release's template depends on besides its tree: the toolchain the venv pins."""
    digest = hashlib.sha256(commit.encode() + b"\0" + sys.version.encode() + b"\0")
    digest.update((ROOT / "requirements-dev.txt").read_bytes())
    return digest.hexdigest()[:20]


@pytest.fixture(scope="module")
def previous_release() -> record.Release:
    release = record.previous()
    if release is None:
        pytest.skip(f"release/releases.json records no release before {record.current_version()}")
    present = _git("cat-file", "-e", f"{release.commit}^{{commit}}")
    if present.returncode != 0:
        pytest.skip(
            f"the previous release {release.version}'s commit {release.commit[:12]} is not in this clone's "
            "history (a shallow clone?): `git fetch --unshallow` lets the upgrade check run"
        )
    return release


@pytest.fixture(scope="module")
def previous_template(previous_release: record.Release, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    cache = bundling.default_build_dir() / "upgrade"
    kept = cache / f"{previous_release.version}-{_cache_key(previous_release.commit)}.template.json"
    if kept.is_file():
        return json.loads(kept.read_text())
    tree = _release_tree(previous_release.commit, tmp_path_factory.mktemp(f"release-{previous_release.version}"))
    template = _synthesized_release(tree)
    cache.mkdir(parents=True, exist_ok=True)
    staging = kept.with_suffix(f".{os.getpid()}.tmp")
    staging.write_text(json.dumps(template))
    staging.replace(kept)
    return template


def test_a_deploy_of_head_over_the_previous_release_replaces_nothing_that_holds_tasks(
    previous_template: dict[str, Any], synthesized: Synthesized, previous_release: record.Release
) -> None:
    kinds = [resource["Type"] for resource in previous_template["Resources"].values()]
    assert {"AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::StepFunctions::StateMachine"} <= set(kinds)
    found = replacements(previous_template, synthesized.template.to_json())
    announced = record.announced()
    unannounced = [str(replacement) for replacement in found if replacement.logical_id not in announced]
    assert unannounced == [], (
        f"a deploy of {record.current_version()} over {previous_release.version} replaces these: each "
        "loses what it holds. Keep their logical IDs and create-only properties, or announce them "
        "(release/releases.json, unreleased) and say so in the upgrade note"
    )
    note = record.upgrade_note(record.current_version()).read_text()
    assert [logical for logical in announced if logical not in note] == [], (
        "an announced replacement unnamed in the note"
    )


# --- the diff itself, on doctored templates -----------------------------------------------------


def _first(template: dict[str, Any], kind: str) -> str:
    return next(logical for logical, resource in template["Resources"].items() if resource["Type"] == kind)


def test_the_diff_names_each_kind_of_replacement(synthesized: Synthesized) -> None:
    before = synthesized.template.to_json()
    assert replacements(before, before) == []
    table = _first(before, "AWS::DynamoDB::Table")
    queue = _first(before, "AWS::SQS::Queue")
    machine = _first(before, "AWS::StepFunctions::StateMachine")

    after = copy.deepcopy(before)
    after["Resources"][table]["Properties"]["KeySchema"][0]["AttributeName"] = "other"
    after["Resources"][f"{queue}Renamed"] = after["Resources"].pop(queue)
    after["Resources"][machine]["Properties"]["StateMachineType"] = "EXPRESS"
    assert set(replacements(before, after)) == {
        Replacement(machine, "AWS::StepFunctions::StateMachine", "/properties/StateMachineType changed: replaced"),
        Replacement(queue, "AWS::SQS::Queue", "gone from the new template: deleted"),
        Replacement(table, "AWS::DynamoDB::Table", "/properties/KeySchema changed: replaced"),
    }

    renamed = copy.deepcopy(before)
    renamed["Resources"][queue]["Properties"]["QueueName"] = "another-name"
    renamed["Resources"][table]["Type"] = "AWS::DynamoDB::GlobalTable"
    assert sorted(r.reason for r in replacements(before, renamed)) == [
        "/properties/QueueName changed: replaced",
        "now a AWS::DynamoDB::GlobalTable: deleted and another made",
    ]


def test_what_cloudformation_updates_in_place_is_no_replacement(synthesized: Synthesized) -> None:
    before = synthesized.template.to_json()
    after = copy.deepcopy(before)
    queue = _first(before, "AWS::SQS::Queue")
    table = _first(before, "AWS::DynamoDB::Table")
    after["Resources"][queue]["Properties"]["VisibilityTimeout"] = 999
    after["Resources"][table]["Properties"]["DeletionProtectionEnabled"] = False
    after["Resources"]["Added"] = {"Type": "AWS::SQS::Queue", "Properties": {}}
    del after["Resources"][_first(before, "AWS::Lambda::Function")]  # not a resource that holds tasks
    assert replacements(before, after) == []


def test_the_oracle_is_the_registry_schemas_create_only_properties() -> None:
    assert "/properties/QueueName" in create_only_properties("AWS::SQS::Queue")
    assert "/properties/TableName" in create_only_properties("AWS::DynamoDB::Table")
    assert "/properties/KeySchema" in create_only_properties("AWS::DynamoDB::Table")  # documented, beside the schema
    assert "/properties/StateMachineName" in create_only_properties("AWS::StepFunctions::StateMachine")
