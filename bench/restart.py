"""`python -m bench.restart --tasks 10000`: how long `make run` takes to stop and start again with
its state kept (docs/devserver.md), against a start with an empty data folder.

Starts the runtime (``python -m local``) on a temporary data folder, registers ``--tasks``
one-shot tasks due in a day through ``POST /v1/tasks:batch``, stops it as a Ctrl-C does (SIGINT:
moto writes its last snapshot), starts it again and times it until the API answers, then checks
the tasks are all there (listed) and the admin key is the same."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from local.moto_host.persist import SNAPSHOT
from local.moto_server import free_port
from local.settings import LocalSettings

ADMIN = re.compile(r"admin +key (sk_admin_\S+)")


class Running:
    """``python -m local`` on ``port`` with the data folder ``data``."""

    def __init__(self, data: Path, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"
        environ = {k: v for k, v in os.environ.items() if k not in LocalSettings.env_names()}
        environ.update({LocalSettings.setting_name("port"): str(port), LocalSettings.setting_name("data"): str(data)})
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            [sys.executable, "-W", "ignore", "-m", "local"],
            env={**environ, "PYTHONUNBUFFERED": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        while not self._answers():
            if self.process.poll() is not None:
                raise RuntimeError("make run exited: " + "".join(self.lines[-30:]))
            time.sleep(0.05)
        self.start_s = time.perf_counter() - self.started
        deadline = time.monotonic() + 30  # the banner is printed once the API serves: a moment after
        while not (found := ADMIN.search("".join(self.lines))) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert found, self.lines
        self.admin_key = found.group(1)

    def _read(self) -> None:
        for line in self.process.stdout or ():
            self.lines.append(line)

    def _answers(self) -> bool:
        try:
            return self.call("GET", "/v1/openapi.json")[0] == 200
        except OSError:
            return False

    def call(self, method: str, path: str, body: Any = None, key: str | None = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method)  # noqa: S310 - loopback
        request.add_header("Content-Type", "application/json")
        if key:
            request.add_header("Authorization", f"Bearer {key}")
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310 - loopback
                return answer.status, json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def stop(self) -> float:
        """Stopped as a Ctrl-C does; the seconds it took."""
        started = time.perf_counter()
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=600)
        took = time.perf_counter() - started
        self._reader.join(10)  # its last lines
        return took


def register(runtime: Running, count: int, clients: int = 8) -> float:
    def batch(size: int) -> None:
        spec = {"schedule": {"after_seconds": 86_400}, "target": {"http": {"url": "http://127.0.0.1:9/never"}}}
        status, answer = runtime.call("POST", "/v1/tasks:batch", {"tasks": [spec] * size})
        if status != 200 or any("error" in item for item in answer["items"]):
            raise RuntimeError(f"the batch was refused: {status} {str(answer)[:300]}")

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        list(pool.map(batch, [min(100, count - i) for i in range(0, count, 100)]))
    return time.perf_counter() - started


def listed(runtime: Running) -> int:
    """The tasks ``GET /v1/tasks`` lists, page by page."""
    count, cursor = 0, ""
    while True:
        status, page = runtime.call("GET", "/v1/tasks?limit=100" + (f"&cursor={cursor}" if cursor else ""))
        assert status == 200, page
        count += len(page["items"])
        cursor = page.get("next_cursor") or ""
        if not cursor:
            return count


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.restart", description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=10_000, help="one-shot tasks registered (default 10000)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sundial-restart-") as folder:
        data = Path(folder)
        first = Running(data, free_port())
        print(f"start, empty data folder: {first.start_s:.1f} s", flush=True)
        try:
            took = register(first, args.tasks)
            print(f"registered {args.tasks} tasks in {took:.1f} s", flush=True)
        finally:
            stop_s = first.stop()
        size = (data / SNAPSHOT).stat().st_size
        saved = "; ".join(line.strip() for line in first.lines if line.startswith("moto: state saved"))
        print(f"stop (Ctrl-C): {stop_s:.1f} s ({saved}); snapshot {size / 1e6:.1f} MB", flush=True)
        second = Running(data, free_port())
        try:
            restored = "; ".join(line.strip() for line in second.lines if line.startswith("moto:"))
            print(f"restart with {args.tasks} tasks: {second.start_s:.1f} s until the API answers ({restored})")
            kept = listed(second)
            print(f"after the restart: {kept} tasks listed; admin key kept: {second.admin_key == first.admin_key}")
        finally:
            second.stop()
        if kept != args.tasks or second.admin_key != first.admin_key:
            raise SystemExit("the restart did not keep every task and the admin key")


if __name__ == "__main__":
    main()
