"""The migration guide's snippets (docs/eventbridge.md, "Migration guide") run as written against
the local runtime: the boto3 script, and the AWS CLI commands through a shell (the Terraform
configuration is applied by tests/e2e/test_eventbridge_terraform.py). A guide whose snippet no
longer runs fails here."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_eventbridge_cli import AWSCLI
from tests.support.runtime import Client
from tests.support.snippets import snippet

pytestmark = pytest.mark.e2e

GUIDE = "docs/eventbridge.md"


def test_the_boto3_snippet_runs_as_written(sundial: Client) -> None:
    code = snippet(GUIDE, "boto3", sundial.base)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, f"{GUIDE}:boto3", "exec"), {"__name__": "guide"})  # the guide's own code
    assert printed.getvalue() == "cron(0 9 ? * MON-FRI *)\n"


def test_the_cli_snippet_runs_as_written(sundial: Client, tmp_path: Path) -> None:
    if not (AWSCLI / "awscli" / "__main__.py").is_file():
        pytest.skip(f"the AWS CLI is not installed in {AWSCLI} (make's install step puts it there)")
    shim = tmp_path / "aws"  # `aws` on the PATH: the CLI from PyPI, installed apart
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m awscli "$@"\n')
    shim.chmod(0o755)
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k not in ("PYTHONPATH", "PYTHONSAFEPATH")
    }
    env.update(
        PATH=f"{tmp_path}:{env.get('PATH', '')}",
        PYTHONPATH=str(AWSCLI),
        AWS_ACCESS_KEY_ID="AKSDEXAMPLEEXAMPLE00",
        AWS_SECRET_ACCESS_KEY="shown-once-when-issued",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
    )
    script = snippet(GUIDE, "cli", sundial.base)
    done = subprocess.run(
        ["bash", "-e", "-c", script], env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"ScheduleExpression": "cron(30 8 ? * MON *)"' in done.stdout  # get-schedule's answer
    assert '"Name": "report-weekly"' in done.stdout  # list-schedules'
