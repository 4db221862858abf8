"""The README's curl tour, pasted word for word into bash against ``make run``: every command
answers as its comment says (the port is the test runtime's, nothing else is changed; ``<id>``
is the id the tour's idempotent registration answered)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

README = Path(__file__).resolve().parents[2] / "README.md"
GUIDE = README.parent / "docs" / "guide.md"
"""Where the tour goes on: the command line's tour, tenants and keys."""


def tour() -> list[str]:
    """The commands of the block after "In a third terminal:", one string each (a command runs
    on over the lines that do not start another command or a comment)."""
    text = README.read_text()
    block = text.split("In a third terminal:", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    commands: list[str] = []
    for line in block.splitlines():
        if line.startswith("curl "):
            commands.append(line)
        elif commands and not line.startswith("#"):
            commands[-1] += "\n" + line
    return commands


def run(command: str, base: str) -> tuple[int, object]:
    """The command as bash runs it, with ``-w`` for the status; (status, the JSON answer)."""
    pasted = command.replace("localhost:8080", base.removeprefix("http://"))
    done = subprocess.run(
        ["bash", "-c", pasted.replace("curl -s ", "curl -s -w '\\n%{http_code}' ", 1)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, (command, done.stderr)
    body, _, status = done.stdout.rpartition("\n")
    return int(status), json.loads(body) if body.strip() else None


def test_the_curl_tour_runs_as_printed(sundial):
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed here")
    commands = tour()
    assert len(commands) >= 15, commands
    task_id = None
    for command in commands:
        if "<id>" in command and task_id is None:
            pytest.fail(f"the tour uses <id> before it registered a task: {command}")
        status, answer = run(command.replace("<id>", task_id or ""), sundial.base)
        comment = command.rsplit("# ", 1)[-1] if "# " in command else ""
        assert status < 500, (command, status, answer)
        if comment.startswith("400"):
            assert status == 400, (command, status, answer)
            assert answer["error"]["details"], answer
            continue
        assert 200 <= status < 300, (command, status, answer)
        if "Idempotency-Key" in command:
            again_status, again = run(command, sundial.base)
            assert (again_status, again["id"]) == (201, answer["id"]), "twice: one task"
            task_id = answer["id"]
        if re.search(r'"at": "', command):
            assert answer["notices"][0]["field"] == "schedule.at", answer
        if "tasks:batch" in command:
            assert [("task" in item, "error" in item) for item in answer["items"]] == [(True, False), (False, True)]
            assert answer["items"][1]["error"]["details"][0]["field"] == "schedule.cron"


def test_the_cli_tour_and_the_curl_tour_do_not_share_an_idempotency_key_or_a_tenant():
    """Run one after the other on one `make run`, a shared key (with another body) or tenant id
    would be refused by the second (the curl tour in the README and the guide, the command line's
    in the guide)."""
    text = README.read_text() + GUIDE.read_text()
    curl_keys = set(re.findall(r"Idempotency-Key: ([\w-]+)", text))
    cli_keys = set(re.findall(r"--idempotency-key ([\w-]+)", text))
    curl_tenants = set(re.findall(r'/v1/tenants -H "Authorization: Bearer \$ADMIN" --json \'\{"id": "([\w-]+)"', text))
    cli_tenants = set(re.findall(r"tenants create ([\w-]+)", text))
    assert all((curl_keys, cli_keys, curl_tenants, cli_tenants))
    assert not curl_keys & cli_keys
    assert not curl_tenants & cli_tenants
