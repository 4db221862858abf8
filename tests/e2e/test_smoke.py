"""`make smoke` against `make run`'s runtime (the e2e suite's shared one), both ways it can
choose its targets: a loopback receiver of its own (what it does on loopback), and the API's own
routes (what it does against a deployed stack, where the retry check is skipped). Each run is a
subprocess, on a tenant of its own, as a user would run it; they run at the same time."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from sundial_cli.settings import CONFIG_ENV, KEY_ENV, URL_ENV
from tests.e2e.conftest import ADMIN_KEY

pytestmark = pytest.mark.e2e


def _tenant(sundial) -> str:
    """A tenant of its own: its key."""
    return _made(sundial)["key"]["secret"]


def _made(sundial) -> dict[str, Any]:
    status, tenant = sundial.call(
        "POST", "/v1/tenants", {"id": f"smoke-{secrets.token_hex(4)}"}, {"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    assert status == 201, tenant
    return tenant


def _smoke(sundial, tmp_path: Path, key: str, *args: str) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        URL_ENV: sundial.base,
        KEY_ENV: key,
        CONFIG_ENV: str(tmp_path / "no-config.toml"),  # no profile of this machine's user
    }
    # Lateness is make bench's to measure: here "on time" is only "not seconds late" (a loaded CI
    # machine has fired the smoke's recurring task 2.8 s late beside the other suites).
    command = [sys.executable, "-m", "sundial_cli.smoke", "--timeout", "30", "--max-lateness-ms", "10000", *args]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _ended(process: subprocess.Popen[str]) -> tuple[int, dict[str, str], str]:
    """The exit status, each check's outcome by name, and the whole output."""
    output, _ = process.communicate(timeout=60)
    checks = {}
    for line in output.splitlines():
        outcome, _, rest = line.partition(" ")
        if outcome in ("ok", "FAILED", "skipped"):
            checks[rest.strip().split(":", 1)[0]] = outcome
    return process.returncode, checks, output


def test_the_smoke_passes_against_the_local_runtime_with_either_targets(sundial, tmp_path: Path) -> None:
    api_tenant = _made(sundial)
    keys = {"receiver": _tenant(sundial), "api": api_tenant["key"]["secret"]}
    with_receiver = _smoke(sundial, tmp_path, keys["receiver"])
    # with the tenant's access key (the suite's runtime verifies signatures): the signed round trip
    status, access = sundial.call(
        "POST", f"/v1/tenants/{api_tenant['id']}/access-keys", None, {"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    assert status == 201, access
    signed = ("--access-key-id", access["access_key_id"], "--secret-access-key", access["secret_access_key"])
    with_api = _smoke(sundial, tmp_path, keys["api"], "--targets", "api", *signed)
    status, checks, output = _ended(with_receiver)
    assert status == 0, output
    expected = dict.fromkeys(("one-shot", "recurring", "retry", "dead letter", "chain"), "ok")
    assert checks == {**expected, "eventbridge": "skipped"}, output
    assert "targets: a receiver on http://127.0.0.1:" in output

    status, checks, output = _ended(with_api)
    assert status == 0, output
    expected = {"one-shot": "ok", "recurring": "ok", "retry": "skipped", "dead letter": "ok", "chain": "ok"}
    assert checks == {**expected, "eventbridge": "ok"}, output
    assert "targets: the API's own routes" in output

    for key in keys.values():  # what it registered calls loopback only
        status, page = sundial.call("GET", "/v1/tasks?limit=100", None, {"Authorization": f"Bearer {key}"})
        assert status == 200, page
        # the EventBridge check's schedule (an SQS target, never fired: disabled) is the tenant's too
        calls = [task for task in page["items"] if not (task.get("name") or "").startswith("eventbridge:")]
        urls = [task["target"]["http"]["url"] for task in calls]
        assert len(urls) >= 5, urls  # one per check, two for the chain; no retry's with --targets api
        assert {urlsplit(url).hostname for url in urls} == {"127.0.0.1"}, urls
