"""Fuzz the API of the local runtime from inside a loopback-only network namespace.

A fuzzer registers tasks with whatever URLs it makes up, and the runtime then calls them. So this
script is meant to be started as ``unshare -n python tests/support/fuzz_run.py --reports DIR ...``:
a fresh network namespace has a single interface, ``lo``, down. The script brings ``lo`` up,
refuses to go on if the namespace has any other interface (nothing but this machine's own sockets
in the namespace may be reachable), starts ``python -m local`` on a free loopback port with an
admin key of its own, waits for the OpenAPI document and seeds it: the admin creates a tenant
for the fuzzer and another for the admin's routes to read; the fuzzer's tenant and the local
default tenant (no key) each register a task, a job, a dead letter and a workflow for the
operations that read one (their ids reach ``schemathesis.toml`` as ``FUZZ_*_ID``). Then it runs ``schemathesis
run`` against the document three times (:func:`seed` says which): with no key and with the
tenant's key over the tenant routes, with the admin key over ``/v1/tenants`` (the admin key on a
tenant route, or a tenant key on an admin one, is a 403 by contract). Each run gets the options
given to this script after ``--reports DIR`` (the rest of the configuration is
``schemathesis.toml`` at the repository root) and writes its JSON report ``DIR/<run>.json``. It
stops the runtime and exits with the first failing run's status (0 when none failed).

``FUZZ_ONLY=admin,tenant`` runs only the runs it names (while working on one of them).

Exit statuses of its own: 2 without ``--reports DIR``, 3 when the namespace is not loopback-only,
4 when the runtime did not start.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import signal
import socket
import struct
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # run as a script: the project's packages are beside tests/

from local.settings import IN_MEMORY, LocalSettings  # noqa: E402
from shared.domain.tenants import MAX_BURST, MAX_REQUESTS_PER_SECOND  # noqa: E402
from shared.settings.environment import ENV_PREFIX, env_name  # noqa: E402
from tests.support.eventually import until  # noqa: E402
from tests.support.fuzz_hooks import SEEDED_LIMIT  # noqa: E402

NOT_ISOLATED = 3
NO_RUNTIME = 4
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
STARTUP_S = 60


def bring_loopback_up() -> None:
    """``ip link set lo up``, by the ioctl it makes (so ``ip`` need not be installed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock.fileno(), SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))


def interfaces() -> list[str]:
    return sorted(name for _, name in socket.if_nameindex())


def no_proxy_env() -> dict[str, str]:
    """This environment without proxies (a proxy would be unreachable here anyway) and without
    the AWS and Sundial settings of whoever started us: the runtime sets its own."""
    return {
        key: value
        for key, value in os.environ.items()
        if (key.startswith("FUZZ_") or not key.startswith(("AWS_", ENV_PREFIX))) and "proxy" not in key.lower()
    }


OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def answers(url: str) -> bool:
    try:
        with OPENER.open(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def call(base: str, method: str, path: str, body: object = None, headers: dict[str, str] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with OPENER.open(request, timeout=10) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        raise RuntimeError(f"seeding: {method} {path} answered {error.code}: {error.read()[:500]!r}") from None


def plant(base: str, closed_port: int, headers: dict[str, str]) -> dict[str, str]:
    """A task and a job of the caller's (``headers``), a task that dead-letters at once, a limit
    per destination (with no origin: it holds no call of the seeded tasks), and a workflow of one
    node with a run."""
    nowhere = f"http://127.0.0.1:{closed_port}/fuzz"  # nothing listens: every call fails at once
    task = call(
        base,
        "POST",
        "/v1/tasks",
        {
            "name": "fuzz-seed",
            "schedule": {"every_seconds": 3600},
            "target": {"http": {"url": nowhere}},
            "payload": {"seeded": True},
        },
        headers,
    )
    job = call(
        base, "POST", "/v1/jobs", {"name": "fuzz-seed", "processor": {"http": {"url": nowhere}}, "data": [[1]]}, headers
    )
    call(
        base,
        "POST",
        "/v1/tasks",
        {
            "name": "fuzz-seed-dead",
            "schedule": {"after_seconds": 0.1},
            "target": {"http": {"url": nowhere}},
            "retry": {"max_attempts": 1},
        },
        headers,
    )
    call(base, "PUT", f"/v1/limits/{SEEDED_LIMIT}", {"per_second": 1000, "burst": 100}, headers)
    workflow = call(
        base,
        "POST",
        "/v1/workflows",
        {"name": "fuzz-seed", "nodes": [{"id": "seed", "target": {"http": {"url": nowhere}}}], "edges": []},
        headers,
    )
    call(base, "POST", f"/v1/workflows/{workflow['id']}/run", None, headers)  # its runs list has one
    return {"FUZZ_TASK_ID": str(task["id"]), "FUZZ_JOB_ID": str(job["id"]), "FUZZ_WORKFLOW_ID": str(workflow["id"])}


def dead_letter(base: str, headers: dict[str, str]) -> str:
    """The id of the caller's dead letter (the planted task's), once there is one."""
    letters = until(lambda: call(base, "GET", "/v1/dead-letters?limit=1", headers=headers)["items"], 20, poll=0.2)
    if not isinstance(letters, list) or not letters:
        raise RuntimeError("the seeded task did not become a dead letter within 20 s")
    return str(letters[0]["id"])


@dataclass(frozen=True)
class Run:
    """One schemathesis run: who calls (its ``Authorization`` header, none for the local default
    tenant), over which operations, with which options, and the ids it reads (``FUZZ_*_ID``)."""

    name: str
    authorization: str | None
    options: tuple[str, ...]
    ids: dict[str, str]


TENANT_ROUTES = ("--exclude-path-regex", "^/v1/tenants")
ADMIN_ROUTES = ("--include-path-regex", "^/v1/tenants")
ANONYMOUS_OPTIONS = ("--phases", "fuzzing,stateful", "--max-examples", "6")
"""Past the authorizer the handlers are the same whoever calls; the coverage phase's thousands of
boundary cases (the API's validation) run once, in the tenant's run; the default tenant gets the
fuzzing and stateful phases, fewer examples each, with a fresh seed (:func:`fresh_seed`)."""

SEED_ENV = "FUZZ_SEED"


def fresh_seed() -> int:
    """The anonymous run's seed: ``FUZZ_SEED`` when set (to replay a run that failed: the test
    prints every run's seed), else a new one each time. The tenant's and the admin's runs keep
    ``schemathesis.toml``'s: a fixed seed only finds again what it found once."""
    given = os.environ.get(SEED_ENV)
    return int(given) if given else secrets.randbelow(2**31)


def seed(base: str, closed_port: int, admin_key: str) -> list[Run]:
    """The runs, each with its ids: with no key (the local default tenant) and with a tenant's key
    over the tenant routes, with the admin key over /v1/tenants."""
    admin = {"Authorization": f"Bearer {admin_key}"}
    limits = {"requests_per_second": MAX_REQUESTS_PER_SECOND, "burst": MAX_BURST}
    fuzzer = call(base, "POST", "/v1/tenants", {"id": "fuzz", "limits": limits}, admin)
    target = call(base, "POST", "/v1/tenants", {"id": "fuzz-target"}, admin)
    key = call(base, "POST", f"/v1/tenants/{target['id']}/keys", None, admin)
    callers: dict[str, str | None] = {"anonymous": None, "tenant": f"Bearer {fuzzer['key']['secret']}"}
    planted = {
        name: plant(base, closed_port, {} if auth is None else {"Authorization": auth})
        for name, auth in callers.items()
    }
    for name, auth in callers.items():
        planted[name]["FUZZ_LETTER_ID"] = dead_letter(base, {} if auth is None else {"Authorization": auth})
    admin_ids = {"FUZZ_TENANT_ID": str(target["id"]), "FUZZ_KEY_ID": str(key["id"])}
    # Every run's configuration names every placeholder: the tenant's ids stand in where a run
    # does not read them.
    return [
        Run(
            "anonymous",
            None,
            (*TENANT_ROUTES, *ANONYMOUS_OPTIONS, "--seed", str(fresh_seed())),
            {**planted["anonymous"], **admin_ids},
        ),
        Run("tenant", callers["tenant"], TENANT_ROUTES, {**planted["tenant"], **admin_ids}),
        Run("admin", admin["Authorization"], ADMIN_ROUTES, {**planted["tenant"], **admin_ids}),
    ]


def start_runtime(port: int, log: Path, admin_key: str) -> subprocess.Popen[bytes]:
    env = {
        **no_proxy_env(),
        LocalSettings.setting_name("port"): str(port),
        LocalSettings.setting_name("data"): IN_MEMORY,  # never the checkout's .sundial/ (a developer's state)
        env_name("admin_key"): admin_key,
        "PYTHONUNBUFFERED": "1",
    }
    env["PYTHONPATH"] = str(ROOT)
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-W", "ignore", "-m", "local"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def fuzz(base: str, run: Run, reports: Path, argv: list[str]) -> int:
    """One schemathesis run: its report ``<reports>/<name>.json``, the refusals of schema-valid
    data it dropped or kept ``<reports>/<name>.refusals.jsonl`` (tests/support/fuzz_hooks.py),
    and what it printed ``<reports>/<name>.log`` (the JSON report counts an error by its title
    only; its message and traceback are in the log's ERRORS section)."""
    options = ["--report", "json", "--report-json-path", str(reports / f"{run.name}.json"), *run.options, *argv]
    if run.authorization is not None:
        options += ["--header", f"Authorization: {run.authorization}"]
    refusals = reports / f"{run.name}.refusals.jsonl"
    refusals.unlink(missing_ok=True)  # the hooks append to it
    env = {**no_proxy_env(), **run.ids, "FUZZ_BASE_URL": base, "FUZZ_REJECTIONS": str(refusals)}
    if run.authorization is not None:
        env["FUZZ_AUTHORIZATION"] = run.authorization
    print(f"fuzz_run: run {run.name}: seeded {run.ids}", flush=True)
    command = [sys.executable, "-m", "schemathesis.cli", "run", f"{base}/v1/openapi.json", *options]
    done = subprocess.run(command, cwd=ROOT, env=env, check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    (reports / f"{run.name}.log").write_bytes(done.stdout)
    sys.stdout.buffer.write(done.stdout)
    sys.stdout.flush()
    return done.returncode


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] != "--reports":
        print("usage: fuzz_run.py --reports DIR [schemathesis run options...]", file=sys.stderr)
        return 2
    reports, argv = Path(argv[1]), argv[2:]
    try:
        bring_loopback_up()
    except OSError as error:
        print(f"fuzz_run: cannot bring lo up ({error}); run me under `unshare -n` as root", file=sys.stderr)
        return NOT_ISOLATED
    if interfaces() != ["lo"]:
        print(
            f"fuzz_run: refusing to fuzz: this network namespace has interfaces {interfaces()}, not only lo "
            "(run me under `unshare -n`)",
            file=sys.stderr,
        )
        return NOT_ISOLATED

    port, closed_port = free_port(), free_port()
    log = Path(os.environ.get("FUZZ_RUNTIME_LOG", "/tmp/sundial-fuzz-runtime.log"))
    admin_key = f"sk_admin_{secrets.token_urlsafe(24)}"
    runtime = start_runtime(port, log, admin_key)
    base = f"http://127.0.0.1:{port}"
    try:
        up = until(lambda: runtime.poll() is not None or answers(f"{base}/v1/openapi.json"), STARTUP_S, poll=0.1)
        if not up or runtime.poll() is not None:
            print(f"fuzz_run: the local runtime did not start:\n{log.read_text()[-4000:]}", file=sys.stderr)
            return NO_RUNTIME
        runs = seed(base, closed_port, admin_key)
        print(f"fuzz_run: namespace interfaces {interfaces()}; runtime at {base}", flush=True)
        reports.mkdir(parents=True, exist_ok=True)
        only = set(filter(None, os.environ.get("FUZZ_ONLY", "").split(",")))
        statuses = [fuzz(base, run, reports, argv) for run in runs if not only or run.name in only]
        return next((status for status in statuses if status != 0), 0)
    finally:
        stop(runtime)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
