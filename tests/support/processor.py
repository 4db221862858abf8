"""A job's processor as a user would run one: a real HTTP server answering each phase
(docs/jobs.md). Used by the job tests of every suite."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = tuple[int, Any]
"""(HTTP status, JSON body, or raw bytes sent as they are)."""


class SummingProcessor:
    """pre expands ``{"expand": n}`` into the items 1..n plus a second level ``[1000]`` (and
    answers 400 to the data ``[["refuse"]]``), a shard answers the sum of its items, post the
    total and the number of results. The first shard call answers 503 once (a retry)."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.failed_once = False

    def __call__(self, body: dict[str, Any]) -> Answer:
        with self.lock:
            self.calls.append(body)
            if body["phase"] == "shard" and not self.failed_once:
                self.failed_once = True
                return 503, {"error": "busy"}
        if body["phase"] == "pre" and body["data"] == [["refuse"]]:
            return 400, {"error": "no such reference"}
        if body["phase"] == "pre":
            count = body["data"][0][0]["expand"]
            return 200, {"data": [list(range(1, count + 1)), [1000]]}
        if body["phase"] == "shard":
            return 200, {"result": sum(body["items"])}
        if body["phase"] == "post":
            return 200, {"result": {"total": sum(body["results"]), "shards": len(body["results"])}}
        return 200, {}


@contextmanager
def running_processor(
    answer: Callable[[dict[str, Any]], Answer],
) -> Iterator[tuple[str, list[tuple[dict[str, str], Any]]]]:
    """A processor at the yielded URL answering with ``answer(body)``; also yields every request
    (headers, body) it received."""
    seen: list[tuple[dict[str, str], Any]] = []

    class Handle(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append((dict(self.headers.items()), body))
            status, content = answer(body)
            payload = content if isinstance(content, bytes) else json.dumps(content).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            return

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handle)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/process", seen
    finally:
        httpd.shutdown()
        httpd.server_close()
