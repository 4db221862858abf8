"""The AWS CLI (v1, from PyPI: ``aws scheduler ... --endpoint-url``) against the local runtime's
EventBridge Scheduler API (docs/eventbridge.md): create, get, list and delete a schedule, as a
team's scripts would, signed with an access key the admin API issued, and the CLI's own report
of an error. The CLI is installed apart from the virtualenv's packages (``.venv/awscli``, by
make's install step: it carries its own botocore); skipped, saying why, where it is absent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from tests.support.access_keys import AccessKey, issued_access_key
from tests.support.runtime import Client
from tests.support.suites import TESTS_ROOT

pytestmark = pytest.mark.e2e

AWSCLI = TESTS_ROOT.parent / ".venv" / "awscli"


def cli_env(key_id: str, secret: str) -> dict[str, str]:
    """The CLI's environment: this one's without its AWS settings and Python path, the CLI's own
    packages on the path, a key, us-east-1, and no config or credentials file of the machine's."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("AWS_") and key not in ("PYTHONPATH", "PYTHONSAFEPATH")
    }
    env.update(
        PYTHONPATH=str(AWSCLI),
        AWS_ACCESS_KEY_ID=key_id,
        AWS_SECRET_ACCESS_KEY=secret,
        AWS_DEFAULT_REGION="us-east-1",
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
    )
    return env


_KEYS: dict[str, AccessKey] = {}
"""An access key of each runtime's default tenant, issued by its admin API the first time."""


def aws(sundial: Client, *args: str) -> subprocess.CompletedProcess[str]:
    key = _KEYS.get(sundial.base) or _KEYS.setdefault(sundial.base, issued_access_key(sundial))
    env = cli_env(key.access_key_id, key.secret_access_key)
    command = [sys.executable, "-m", "awscli", "scheduler", *args, "--endpoint-url", f"{sundial.base}/scheduler"]
    return subprocess.run(
        [*command, "--output", "json"], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def _json(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


def test_the_aws_cli_creates_gets_lists_and_deletes_a_schedule(sundial: Client) -> None:
    if not (AWSCLI / "awscli" / "__main__.py").is_file():
        pytest.skip(f"the AWS CLI is not installed in {AWSCLI} (make's install step puts it there)")
    target = {
        "Arn": "arn:aws:lambda:us-east-1:123456789012:function:report",
        "RoleArn": "arn:aws:iam::123456789012:role/scheduler",
        "Input": '{"report": "weekly"}',
    }
    created = _json(
        aws(
            sundial,
            "create-schedule",
            "--name",
            "cli-weekly",
            "--schedule-expression",
            "cron(30 8 ? * MON *)",
            "--schedule-expression-timezone",
            "Asia/Shanghai",
            "--flexible-time-window",
            "Mode=OFF",
            "--target",
            json.dumps(target),
        )
    )
    assert created["ScheduleArn"] == "arn:aws:scheduler:us-east-1:123456789012:schedule/default/cli-weekly"

    got = _json(aws(sundial, "get-schedule", "--name", "cli-weekly"))
    assert got["ScheduleExpression"] == "cron(30 8 ? * MON *)"
    assert got["Target"]["Input"] == '{"report": "weekly"}'
    assert got["State"] == "ENABLED"

    listed = _json(aws(sundial, "list-schedules", "--name-prefix", "cli-"))
    assert [s["Name"] for s in listed["Schedules"]] == ["cli-weekly"]

    _json(aws(sundial, "delete-schedule", "--name", "cli-weekly"))
    missing = aws(sundial, "get-schedule", "--name", "cli-weekly")
    assert missing.returncode == 255, missing.stdout + missing.stderr  # AWS CLI v1: a service error is 255
    assert "ResourceNotFoundException" in missing.stderr

    refused = aws(
        sundial,
        "create-schedule",
        "--name",
        "cli-bad",
        "--schedule-expression",
        "cron(30 8 * * MON *)",
        "--flexible-time-window",
        "Mode=OFF",
        "--target",
        json.dumps(target),
    )
    assert refused.returncode == 255
    assert "ValidationException" in refused.stderr
    assert "must be ?" in refused.stderr
