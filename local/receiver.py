"""A real HTTP receiver on loopback that records every call and answers from a script (the
tests and the benchmark use it)."""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from local.http_adapter import LoopbackServer


@dataclass
class Call:
    path: str
    method: str
    headers: dict[str, str]
    body: Any
    at: float
    """time.time() when the request arrived."""
    raw: bytes = b""
    """The body's exact bytes (what a signature covers)."""
    answered: float | None = None
    """time.time() when the answer was sent (None: not yet)."""


@dataclass
class Receiver:
    url: str
    calls: list[Call] = field(default_factory=list)
    scripts: dict[str, list[int | tuple[int, dict[str, str]]]] = field(default_factory=dict)
    """Path -> the answers in turn (the last one repeats): a status, or a status and headers;
    200 when not scripted."""
    _served: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    lock: threading.Lock = field(default_factory=threading.Lock)
    slow: dict[str, float] = field(default_factory=dict)
    """Path -> seconds each call to it takes before it is answered."""
    bodies: dict[str, bytes] = field(default_factory=dict)
    """Path -> the body of its answers (JSON ``{"ok": true}`` when not set)."""
    arrived: threading.Condition = field(default_factory=threading.Condition)
    """Notified as each call arrives: what :meth:`wait_for` waits on."""

    def script(self, path: str, *answers: int | tuple[int, dict[str, str]]) -> str:
        self.scripts[path] = list(answers)
        return self.url + path

    def calls_to(self, path: str) -> list[Call]:
        with self.lock:
            return [c for c in self.calls if c.path == path]

    def wait_for(self, path: str, count: int, timeout: float) -> list[Call]:
        """The calls to ``path`` once there are ``count`` (woken by each arrival, not polling),
        or those there are after ``timeout`` seconds."""
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.calls_to(path)) >= count, timeout)
        return self.calls_to(path)

    def most_outstanding(self, path: str) -> int:
        """The most calls to ``path`` that were outstanding (arrived, not yet answered) at once."""
        events = sorted(
            [(c.at, 1) for c in self.calls_to(path)]
            + [(c.answered if c.answered is not None else float("inf"), -1) for c in self.calls_to(path)],
            key=lambda e: (e[0], e[1]),  # an answer at the same instant as an arrival comes first
        )
        most = current = 0
        for _, step in events:
            current += step
            most = max(most, current)
        return most

    def most_starts_per_second(self, path: str) -> int:
        """The most calls to ``path`` that arrived within any one second (a sliding window)."""
        return most_within([c.at for c in self.calls_to(path)], 1.0)

    def _answer(self, path: str) -> tuple[int, dict[str, str]]:
        with self.lock:
            script = self.scripts.get(path, [200])
            index = min(self._served[path], len(script) - 1)
            self._served[path] += 1
            answer = script[index]
        return answer if isinstance(answer, tuple) else (answer, {})


def most_within(times: list[float], window: float) -> int:
    """The most of ``times`` that fall within any span shorter than ``window``."""
    ordered = sorted(times)
    most, first = 0, 0
    for last, at in enumerate(ordered):
        while at - ordered[first] >= window:
            first += 1
        most = max(most, last - first + 1)
    return most


@contextmanager
def running_receiver() -> Iterator[Receiver]:
    receiver = Receiver(url="")

    class Handle(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as any production web server
        # headers and body are two writes: with Nagle's algorithm the body waited for the
        # caller's delayed ACK, 40 ms a call on a kept-alive connection
        disable_nagle_algorithm = True

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode(errors="replace")
            call = Call(self.path, self.command, dict(self.headers.items()), body, time.time(), raw)
            with receiver.lock:
                receiver.calls.append(call)
            with receiver.arrived:
                receiver.arrived.notify_all()
            status, headers = receiver._answer(self.path)
            if (pause := receiver.slow.get(self.path)) is not None:
                time.sleep(pause)
            payload = receiver.bodies.get(self.path, b'{"ok": true}')
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
            call.answered = time.time()

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = LoopbackServer(("127.0.0.1", 0), Handle)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
