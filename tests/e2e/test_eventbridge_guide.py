"""The migration guide's snippets (docs/eventbridge.md, "Migration guide") run as written against
the local runtime: the boto3 script, and the AWS CLI commands through a shell (the Terraform
configuration is applied by tests/e2e/test_eventbridge_terraform.py). A guide whose snippet no
longer runs fails here."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_eventbridge_cli import AWSCLI, cli_env
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
    env = cli_env("AKSDEXAMPLEEXAMPLE00", "shown-once-when-issued")
    env["PATH"] = f"{tmp_path}:{env.get('PATH', '')}"
    script = snippet(GUIDE, "cli", sundial.base)
    done = subprocess.run(
        ["bash", "-e", "-c", script], env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"ScheduleExpression": "cron(30 8 ? * MON *)"' in done.stdout  # get-schedule's answer
    assert '"Name": "report-weekly"' in done.stdout  # list-schedules'
