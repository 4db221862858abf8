"""The migration guide (docs/eventbridge.md, "Migration guide") run as a reader runs it, against
the local runtime: its shell blocks in bash at the checkout's root, in order, each with what the
blocks before it left (the CLI's function, the profile in the AWS configuration files), the
boto3 script in Python, with only the address replaced (tests/support/snippets.py). Its set-up is
run too: the AWS CLI as ``make`` installs it, a real access key issued with the admin key into the
``sundial`` profile, the queues made in the runtime's moto; the schedule's message is read back
from the queue. What the guide asks the reader to set, the test sets: the admin key's variable
(the runtime's admin key), the API's address (the runtime's) and ``MOTO_URL`` (its banner's
``moto`` line); the AWS configuration
files are the test's own (``AWS_CONFIG_FILE``, ``AWS_SHARED_CREDENTIALS_FILE``), never the
machine's. The Terraform blocks are tests/e2e/test_eventbridge_terraform.py's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from shared.settings.environment import env_name
from sundial_cli.settings import URL_ENV
from tests.support.eventually import until
from tests.support.runtime import ADMIN_KEY, Client
from tests.support.snippets import snippet
from tests.support.suites import TESTS_ROOT

pytestmark = pytest.mark.e2e

GUIDE = "docs/eventbridge.md"
CHECKOUT = TESTS_ROOT.parent
AWSCLI = CHECKOUT / ".venv" / "awscli"


def moto_of(sundial: Client) -> str:
    """The runtime's moto, as its start-up banner names it (the guide sends the reader there)."""
    line = next(line for line in sundial.opening if line.strip().startswith("moto "))
    return line.split()[1]


@dataclass(frozen=True)
class Reader:
    """A reader's shell: the guide's environment, and the blocks it has run so far."""

    sundial: Client
    env: dict[str, str]
    ran: tuple[str, ...]

    def shell(self, *names: str, cwd: Path = CHECKOUT) -> subprocess.CompletedProcess[str]:
        """The guide's shell blocks ``names``, run after those run before (their effects on the
        shell: the CLI's function), in one bash."""
        script = "\n".join(snippet(GUIDE, name, self.sundial.base) for name in (*self.ran, *names))
        return subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", script],
            cwd=cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,  # the exit code is asserted with the output
        )

    def python(self, name: str) -> subprocess.CompletedProcess[str]:
        """The guide's Python block ``name``, run by this virtualenv's Python."""
        code = snippet(GUIDE, name, self.sundial.base)
        return subprocess.run(
            [sys.executable, "-c", code], env=self.env, capture_output=True, text=True, timeout=120, check=False
        )


def reader_env(sundial: Client, folder: Path) -> dict[str, str]:
    """A reader's environment: this one's without its AWS settings and Python path, the AWS
    configuration files in ``folder``, and the three variables the guide asks for."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("AWS_") and key not in ("PYTHONPATH", "PYTHONSAFEPATH")
    }
    env.update(
        {
            "AWS_CONFIG_FILE": str(folder / "config"),
            "AWS_SHARED_CREDENTIALS_FILE": str(folder / "credentials"),
            env_name("admin_key"): ADMIN_KEY,  # the variable make run reads it from, as the guide's blocks do
            "MOTO_URL": moto_of(sundial),
            URL_ENV: sundial.base,  # the API's address, as the README's tour exports it
        }
    )
    return env


def set_up(sundial: Client, folder: Path) -> Reader:
    """The guide's first two steps: the AWS CLI as make installs it, and a new access key in the
    ``sundial`` profile (skipped, saying why, where make's AWS CLI is absent)."""
    if not (AWSCLI / "bin" / "aws").is_file():
        pytest.skip(f"the AWS CLI is not installed in {AWSCLI} (make's install step puts it there)")
    reader = Reader(sundial, reader_env(sundial, folder), ())
    done = reader.shell("cli-setup", "access-key")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "aws_access_key_id = AKSD" in (folder / "credentials").read_text()  # a key the admin API issued
    return Reader(sundial, reader.env, ("cli-setup",))


@pytest.fixture(scope="module")
def reader(sundial: Client, tmp_path_factory: pytest.TempPathFactory) -> Reader:
    return set_up(sundial, tmp_path_factory.mktemp("aws-config"))


def _documents(text: str) -> list[Any]:
    """The JSON documents the CLI printed one after another."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while (at := len(text) - len(text[at:].lstrip())) < len(text):
        document, at = decoder.raw_decode(text, at)
        found.append(document)
    return found


def test_the_boto3_schedule_fires_into_the_queue_the_guide_made(reader: Reader) -> None:
    made = reader.shell("queues")
    assert made.returncode == 0, made.stdout + made.stderr
    printed = reader.python("boto3")
    assert printed.returncode == 0, printed.stdout + printed.stderr
    assert printed.stdout == "rate(5 minutes)\n"

    read = reader.shell("read")
    assert read.returncode == 0, read.stdout + read.stderr
    (received,) = _documents(read.stdout)  # delete-schedule prints nothing
    (message,) = received["Messages"]
    sent = json.loads(message["Body"])  # the Input, its context attributes replaced
    assert set(sent) == {"run", "at"}
    assert sent["at"].endswith("Z")
    assert "<aws.scheduler" not in message["Body"]

    # the run is the occurrence's, in the native API's history, and the schedule is deleted
    def cancelled() -> dict[str, Any] | None:  # the task list is an index: eventually consistent
        page = reader.sundial.call("GET", "/v1/tasks?limit=10&name_prefix=eventbridge:default/invoice-run")[1]
        return next((t for t in page["items"] if t["status"] == "cancelled"), None)

    task = until(cancelled)
    assert task is not None, "the schedule's task was not cancelled"
    runs = reader.sundial.call("GET", f"/v1/tasks/{task['id']}/runs")[1]["items"]
    assert sent["run"] in [run["run_id"] for run in runs]


def test_the_cli_block_runs_as_written(reader: Reader) -> None:
    done = reader.shell("cli")
    assert done.returncode == 0, done.stdout + done.stderr
    created, got, listed = _documents(done.stdout)  # delete-schedule prints nothing
    assert created["ScheduleArn"].endswith(":schedule/default/report-weekly")
    assert got["ScheduleExpression"] == "cron(30 8 ? * MON *)"
    assert got["Target"]["RetryPolicy"] == {"MaximumEventAgeInSeconds": 86400, "MaximumRetryAttempts": 185}
    assert [s["Name"] for s in listed["Schedules"]] == ["report-weekly"]


def test_every_block_of_the_guide_is_run_by_a_test() -> None:
    from tests.support.snippets import snippets

    text = (CHECKOUT / GUIDE).read_text()
    guide = text[text.index("## Migration guide") : text.index("**4. What differs")]
    assert guide.count("```") == 2 * len(snippets(GUIDE)), "a block of the guide is not marked <!-- tested: NAME -->"
    run_here = {"cli-setup", "access-key", "queues", "boto3", "read", "cli"}
    run_by_terraform_test = {"terraform", "terraform-mirror", "terraform-apply"}
    assert set(snippets(GUIDE)) == run_here | run_by_terraform_test
