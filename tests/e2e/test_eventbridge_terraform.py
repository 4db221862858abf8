"""Terraform's ``aws_scheduler_schedule_group`` and ``aws_scheduler_schedule`` against the local
runtime's EventBridge Scheduler API (docs/eventbridge.md): apply, a plan that finds no changes,
destroy, with the hashicorp/aws provider pointed at ``/scheduler`` by ``endpoints { scheduler }``:
the migration guide's configuration (docs/eventbridge.md), as written.
The provider is the real client: it creates, reads back after every change and compares what it
reads with what it wrote, waits on the group's state, and deletes.

Offline: the provider comes from a filesystem mirror (nothing is fetched; Terraform's version
check is off). Skipped, saying why, where Terraform or a mirror holding hashicorp/aws is absent."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import boto3
import pytest

from tests.support.eventually import until
from tests.support.runtime import Client
from tests.support.snippets import snippet

pytestmark = pytest.mark.e2e

MIRRORS = (Path("/opt/tf-plugins"), Path.home() / ".terraform.d" / "plugins")
PROVIDER = Path("registry.terraform.io") / "hashicorp" / "aws"


def _mirror() -> tuple[Path, str] | None:
    """A filesystem mirror holding hashicorp/aws, and its version there."""
    for mirror in MIRRORS:
        versions = sorted(p.name for p in (mirror / PROVIDER).glob("*") if p.is_dir())
        if versions:
            return mirror, versions[-1]
    return None


def _config(base: str) -> str:
    """The migration guide's configuration (docs/eventbridge.md), as written."""
    return snippet("docs/eventbridge.md", "terraform", base)


def test_terraform_applies_plans_nothing_and_destroys(sundial: Client, tmp_path: Path) -> None:
    terraform, mirror = shutil.which("terraform"), _mirror()
    if terraform is None or mirror is None:
        pytest.skip("Terraform and a filesystem mirror of hashicorp/aws are not installed on this machine")
    folder, _ = mirror
    cli_config = tmp_path / "cli.tfrc"
    cli_config.write_text(
        "provider_installation {\n"
        f'  filesystem_mirror {{\n    path = "{folder}"\n    include = ["registry.terraform.io/hashicorp/aws"]\n  }}\n'
        '  direct {\n    exclude = ["registry.terraform.io/hashicorp/aws"]\n  }\n}\n'
    )
    work = tmp_path / "stack"
    work.mkdir()
    (work / "main.tf").write_text(_config(sundial.base))
    env = {**os.environ, "TF_CLI_CONFIG_FILE": str(cli_config), "TF_IN_AUTOMATION": "1", "CHECKPOINT_DISABLE": "1"}

    def terraform_run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [terraform, *args, "-input=false", "-no-color"],
            cwd=work,
            env=env,
            capture_output=True,
            check=False,  # each step's exit code is asserted with its output
            text=True,
            timeout=300,
        )

    init = terraform_run("init")
    assert init.returncode == 0, init.stdout + init.stderr
    applied = terraform_run("apply", "-auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "Resources: 2 added" in applied.stdout

    scheduler: Any = boto3.client(
        "scheduler",
        endpoint_url=sundial.base + "/scheduler",
        region_name="us-east-1",
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="x",
    )
    got = scheduler.get_schedule(Name="tf-nightly", GroupName="tf-billing")
    assert got["ScheduleExpressionTimezone"] == "Europe/Paris"
    assert got["Target"]["Input"] == '{"run":"nightly"}'
    group_arn = scheduler.get_schedule_group(Name="tf-billing")["Arn"]
    assert scheduler.list_tags_for_resource(ResourceArn=group_arn)["Tags"] == [{"Key": "team", "Value": "pay"}]
    # the schedule is a Sundial task
    listed = until(
        lambda: [
            t
            for t in sundial.call("GET", "/v1/tasks?limit=100")[1]["items"]
            if t.get("name") == "eventbridge:tf-billing/tf-nightly"
        ]
    )
    assert listed, "the native API does not list the schedule"

    planned = terraform_run("plan", "-detailed-exitcode")  # 0: no changes, 2: changes, 1: an error
    assert planned.returncode == 0, planned.stdout + planned.stderr

    destroyed = terraform_run("destroy", "-auto-approve")
    assert destroyed.returncode == 0, destroyed.stdout + destroyed.stderr
    with pytest.raises(scheduler.exceptions.ResourceNotFoundException):
        scheduler.get_schedule_group(Name="tf-billing")
    status, task = sundial.call("GET", f"/v1/tasks/{listed[0]['id']}")
    assert (status, task["status"]) == (200, "cancelled")
