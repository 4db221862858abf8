"""The README's curl tour, pasted word for word into bash against ``make run``: every command
answers as its comment says. Each runs after the tour's ``export`` line, which sets the API's
address from the port variable ``make run`` reads; the test sets that variable to the test
runtime's port, as a reader whose ``make run`` listens elsewhere would. Nothing in the commands is
replaced but ``<id>``, by the id the tour's idempotent registration answered."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from local.settings import LocalSettings
from sundial_cli.settings import URL_ENV

pytestmark = pytest.mark.e2e

README = Path(__file__).resolve().parents[2] / "README.md"
GUIDE = README.parent / "docs" / "guide.md"
"""Where the tour goes on: the command line's tour, tenants and keys."""


def block() -> str:
    """The tour: the block after "In a third terminal:"."""
    text = README.read_text()
    return text.split("In a third terminal:", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]


def exports() -> list[str]:
    """The tour's ``export`` lines (the API's address), run before each command."""
    return [line for line in block().splitlines() if line.startswith("export ")]


def tour() -> list[str]:
    """The commands of the tour, one string each (a command runs on over the lines that do not
    start another command or a comment)."""
    commands: list[str] = []
    for line in block().splitlines():
        if line.startswith("curl "):
            commands.append(line)
        elif commands and not line.startswith("#"):
            commands[-1] += "\n" + line
    return commands


def run(command: str, base: str) -> tuple[int, object]:
    """The command as bash runs it after the tour's exports, with ``-w`` for the status, in an
    environment whose port variable is the test runtime's; (status, the JSON answer)."""
    env = {**os.environ, LocalSettings.setting_name("port"): str(urlsplit(base).port)}
    script = "\n".join([*exports(), command.replace("curl -s ", "curl -s -w '\\n%{http_code}' ", 1)])
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30, check=False, env=env)
    assert done.returncode == 0, (command, done.stderr)
    body, _, status = done.stdout.rpartition("\n")
    return int(status), json.loads(body) if body.strip() else None


def test_the_curl_tour_runs_as_printed(sundial):
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed here")
    commands = tour()
    assert len(commands) >= 15, commands
    assert [line.split("=", 1)[0] for line in exports()] == [f"export {URL_ENV}"], (
        "the tour sets the API's address once"
    )
    assert all(URL_ENV in command and "8080" not in command for command in commands), "every command reads it"
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
