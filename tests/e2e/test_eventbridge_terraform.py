"""Terraform's ``aws_scheduler_schedule_group`` and ``aws_scheduler_schedule`` against the local
runtime's EventBridge Scheduler API: the migration guide's blocks (docs/eventbridge.md) as
written, with only the address replaced: its configuration (the team's ``aws`` provider left as
it is, the schedules on the ``aws.sundial`` provider with Sundial's endpoint, the ``sundial``
profile and no call to STS or the instance metadata service), its offline mirror's CLI
configuration, and its ``init`` and ``apply``; then a plan that finds no changes, and destroy. The
profile holds an access key the admin API issued, as the guide's first steps put it there
(tests/e2e/test_eventbridge_guide.py runs them). The provider is the real client: it creates,
reads back after every change and compares what it reads with what it wrote, and deletes.

Offline: the provider comes from the filesystem mirror the guide names (nothing is fetched;
Terraform's version check is off, and HTTP(S) to anything but loopback goes to a proxy that is
not there). Skipped, saying why, where Terraform, that mirror or make's AWS CLI is absent."""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import boto3
import pytest

from tests.e2e.test_eventbridge_guide import GUIDE, set_up
from tests.support.eventually import until
from tests.support.runtime import Client
from tests.support.snippets import snippet

pytestmark = pytest.mark.e2e

PROVIDER = Path("registry.terraform.io") / "hashicorp" / "aws"
NOWHERE = "http://127.0.0.1:9"
"""A proxy that is not there: anything the provider or Terraform would fetch from the network fails."""


def test_terraform_applies_plans_nothing_and_destroys(sundial: Client, tmp_path: Path) -> None:
    terraform = shutil.which("terraform")
    mirror_config = snippet(GUIDE, "terraform-mirror", sundial.base)
    named = re.search(r'path\s*=\s*"([^"]+)"', mirror_config)
    assert named is not None, "the guide's mirror configuration names no path"
    mirror = Path(named[1])
    if terraform is None or not any((mirror / PROVIDER).glob("*/*")):
        pytest.skip(
            f"Terraform, and the guide's filesystem mirror of hashicorp/aws ({mirror}), are not on this machine"
        )
    reader = set_up(sundial, tmp_path / "aws-config")  # the guide's access key, in the `sundial` profile
    work = tmp_path / "stack"
    work.mkdir()
    (work / "main.tf").write_text(snippet(GUIDE, "terraform", sundial.base))
    (work / "offline.tfrc").write_text(mirror_config)
    env = {
        **reader.env,
        "TF_IN_AUTOMATION": "1",
        "TF_CLI_ARGS": "-no-color",
        "CHECKPOINT_DISABLE": "1",  # no version check
        "HTTPS_PROXY": NOWHERE,
        "HTTP_PROXY": NOWHERE,
        # Go's garbage collector at a quarter of its default pace for these short-lived processes:
        # Terraform starts the AWS provider a dozen times here (two provider configurations, each
        # command's walks), each start building its schema of some 1,500 resources, and collecting
        # that garbage was about a fifth of this test's CPU (48.5 to 37.8 CPU-seconds for the
        # test's processes, its runtime's included; 0.45 GB at most held by one, against 0.31;
        # GOGC=off took 2.2 GB and paid in page faults what it saved in collection).
        # https://pkg.go.dev/runtime#hdr-Environment_Variables
        "GOGC": "400",
    }

    applied = subprocess.run(
        ["bash", "-e", "-c", snippet(GUIDE, "terraform-apply", sundial.base)],
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,  # the exit code is asserted with the output
    )
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "Resources: 2 added" in applied.stdout

    profiles = configparser.ConfigParser()
    profiles.read(reader.env["AWS_SHARED_CREDENTIALS_FILE"])
    scheduler: Any = boto3.client(  # signed with the profile's key, as Terraform signed
        "scheduler",
        endpoint_url=sundial.base + "/scheduler",
        region_name="us-east-1",
        aws_access_key_id=profiles["sundial"]["aws_access_key_id"],
        aws_secret_access_key=profiles["sundial"]["aws_secret_access_key"],
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
            for t in sundial.call("GET", "/v1/tasks?limit=100&name_prefix=eventbridge:tf-billing/")[1]["items"]
            if t.get("name") == "eventbridge:tf-billing/tf-nightly"
        ]
    )
    assert listed, "the native API does not list the schedule"

    def terraform_run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [terraform, *args, "-input=false"],
            cwd=work,
            env={**env, "TF_CLI_CONFIG_FILE": str(work / "offline.tfrc")},  # as the guide's export set it
            capture_output=True,
            check=False,  # each step's exit code is asserted with its output
            text=True,
            timeout=300,
        )

    planned = terraform_run("plan", "-detailed-exitcode")  # 0: no changes, 2: changes, 1: an error
    assert planned.returncode == 0, planned.stdout + planned.stderr

    destroyed = terraform_run("destroy", "-auto-approve")
    assert destroyed.returncode == 0, destroyed.stdout + destroyed.stderr
    with pytest.raises(scheduler.exceptions.ResourceNotFoundException):
        scheduler.get_schedule_group(Name="tf-billing")
    status, task = sundial.call("GET", f"/v1/tasks/{listed[0]['id']}")
    assert (status, task["status"]) == (200, "cancelled")
