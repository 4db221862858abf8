"""Fuzz the API of the local runtime from inside a loopback-only network namespace.

A fuzzer registers tasks with whatever URLs it makes up, and the runtime then calls them. So this
script is meant to be started as ``unshare -n python tests/support/fuzz_run.py ...``: a fresh
network namespace has a single interface, ``lo``, down. The script brings ``lo`` up, refuses to go
on if the namespace has any other interface (nothing but this machine's own sockets in the
namespace may be reachable), starts ``python -m local`` on a free loopback port, waits for the
OpenAPI document, registers a task, a job and a dead letter for the operations that read one (their
ids reach ``schemathesis.toml`` as ``FUZZ_*_ID``), runs ``schemathesis run`` against the
document with the options given to this script (the rest of the configuration is
``schemathesis.toml`` at the repository root), stops the runtime and exits with schemathesis's
status.

Exit statuses of its own: 3 when the namespace is not loopback-only, 4 when the runtime did not
start.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # run as a script: the project's packages are beside tests/

from local.settings import LocalSettings  # noqa: E402
from shared.settings import ENV_PREFIX  # noqa: E402

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


def call(base: str, method: str, path: str, body: object = None) -> dict[str, object]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    try:
        with OPENER.open(request, timeout=10) as response:
            answer: dict[str, object] = json.loads(response.read())
            return answer
    except urllib.error.HTTPError as error:
        raise RuntimeError(f"seeding: {method} {path} answered {error.code}: {error.read()[:500]!r}") from None


def seed(base: str, closed_port: int) -> dict[str, str]:
    """A task, a job and a dead letter to read, as ``FUZZ_*_ID`` variables."""
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
    )
    job = call(base, "POST", "/v1/jobs", {"name": "fuzz-seed", "processor": {"http": {"url": nowhere}}, "data": [[1]]})
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
    )
    ids = {"FUZZ_TASK_ID": str(task["id"]), "FUZZ_JOB_ID": str(job["id"])}
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        letters = call(base, "GET", "/v1/dead-letters?limit=1")["items"]
        if isinstance(letters, list) and letters:
            ids["FUZZ_LETTER_ID"] = str(letters[0]["id"])
            return ids
        time.sleep(0.2)
    raise RuntimeError("the seeded task did not become a dead letter within 20 s")


def start_runtime(port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {**no_proxy_env(), LocalSettings.setting_name("port"): str(port), "PYTHONUNBUFFERED": "1"}
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


def main(argv: list[str]) -> int:
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
    runtime = start_runtime(port, log)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_S
        while not answers(f"{base}/v1/openapi.json"):
            if runtime.poll() is not None or time.monotonic() > deadline:
                print(f"fuzz_run: the local runtime did not start:\n{log.read_text()[-4000:]}", file=sys.stderr)
                return NO_RUNTIME
            time.sleep(0.3)
        ids = seed(base, closed_port)
        command = [sys.executable, "-m", "schemathesis.cli", "run", f"{base}/v1/openapi.json", *argv]
        print(f"fuzz_run: namespace interfaces {interfaces()}; runtime at {base}; seeded {ids}", flush=True)
        return subprocess.call(command, cwd=ROOT, env={**no_proxy_env(), **ids, "FUZZ_BASE_URL": base})
    finally:
        stop(runtime)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
