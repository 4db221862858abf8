"""``make run`` with its admin key's hash in its table (written at start, as ``sundial admin-key
create`` writes a deployed stack's), and ``sundial admin-key rotate`` run as a process against
the runtime's moto: the new key is the admin from the next request, the old one is refused once
the gateway's kept answer for it expires (as API Gateway's authorizer cache does). A
runtime of its own: the rotation must not take the suite's runtime's admin key away."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from local.moto_server import FAKE_ENV
from tests.support.eventually import until
from tests.support.runtime import ADMIN_KEY, running_runtime

pytestmark = pytest.mark.e2e


def test_the_cli_rotates_the_runtimes_admin_key():
    with running_runtime() as client:
        (endpoint,) = re.findall(r"^\s+moto\s+(\S+)", "".join(client.opening), flags=re.MULTILINE)
        tables = re.findall(r"--table-name (\S+)", "".join(client.opening))
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        assert client.call("GET", "/v1/tenants", headers=admin)[0] == 200

        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(FAKE_ENV, AWS_ENDPOINT_URL=endpoint)

        def admin_key(*args: str) -> subprocess.CompletedProcess[str]:
            command = [sys.executable, "-W", "ignore", "-m", "sundial_cli", "admin-key", *args, "--table", tables[0]]
            return subprocess.run(command, check=False, env=env, capture_output=True, text=True)

        refused = admin_key("create")
        assert (refused.returncode, refused.stdout) == (1, ""), refused.stderr
        rotated = admin_key("rotate")
        assert rotated.returncode == 0, rotated.stderr
        new = rotated.stdout.strip()

        assert client.call("GET", "/v1/tenants", headers={"Authorization": f"Bearer {new}"})[0] == 200
        # the old key's answer is kept by the gateway for a while (tests.support.runtime.AUTHORIZER_CACHE_S)
        assert until(lambda: client.call("GET", "/v1/tenants", headers=admin)[0] == 401, 30)
