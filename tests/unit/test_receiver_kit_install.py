"""`pip install ./receiver-kit` into a clean venv, offline: the kit needs neither Sundial's
dependencies nor any build dependency (its build backend is the standard library), and verifies
a signed callback and serves a signed job step there."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

KIT = Path(__file__).resolve().parents[2] / "receiver-kit"

CHECK = """
import importlib.util, json, time
from sundial_receiver import Receiver, sign
import sundial_receiver.adapters.asgi, sundial_receiver.adapters.aws, sundial_receiver.adapters.wsgi
secret = "whsec_" + "a" * 44
body = json.dumps({"task_id": "t", "run_id": "r", "scheduled_for": "2026-03-01T08:00:00Z",
                   "fired_at": "2026-03-01T08:00:00Z", "attempt": 1, "payload": None}).encode()
at = int(time.time())
headers = {"webhook-id": "r", "webhook-timestamp": str(at), "webhook-signature": sign(secret, "r", at, body)}
seen = []
answer = Receiver(secret).handle(body, headers, seen.append)
tampered = Receiver(secret).handle(body + b" ", headers, seen.append)
absent = [name for name in ("boto3", "pydantic", "shared", "flask") if importlib.util.find_spec(name) is None]
from sundial_receiver import JobProcessorReceiver, ShardingProcessor
class Count(ShardingProcessor):
    def sharding_process(self, ctx):
        return len(ctx.items)
step = json.dumps({"job_id": "j", "phase": "shard", "level": 0, "shard": 0, "shard_count": 1, "items": [1, 2]}).encode()
key = "j:shard:0:0"
signed = {"webhook-id": key, "webhook-timestamp": str(at), "webhook-signature": sign(secret, key, at, step)}
job = JobProcessorReceiver(secret, Count()).handle(step, signed)
print(json.dumps([answer.status, tampered.status, len(seen), absent, job.status, job.content().decode()]))
"""


def test_the_kit_installs_into_a_clean_venv_offline_and_verifies_there(tmp_path):
    """The venv is made without pip (ensurepip's wheel install took most of this test's 10 s):
    this environment's pip installs into it (``pip --python``, which runs itself on the venv's
    interpreter), so what lands in the venv is the kit alone, as in a receiver's own venv."""
    target = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(target)
    python = target / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON", "VIRTUAL_ENV"))}
    env["PIP_CONFIG_FILE"] = os.devnull  # no index from this machine's pip configuration: offline
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    installed = subprocess.run(
        [*pip, "install", "--no-index", "--disable-pip-version-check", "-q", str(KIT)],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    checked = subprocess.run(
        [python, "-c", CHECK], check=False, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
    )
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip() == '[200, 401, 1, ["boto3", "pydantic", "shared", "flask"], 200, "{\\"result\\":2}"]'
