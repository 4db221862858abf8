"""A monthly task tested across 13 months in seconds, with ``sundial_receiver.testing``::

    SUNDIAL_HOME=/path/to/sundial pytest examples/test_monthly_task.py

Sundial's local runtime runs on a virtual clock; the receiver is this test's own HTTP server,
which checks each callback's signature as a production receiver would.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from sundial_receiver import Verifier
from sundial_receiver.testing import Sundial, sundial  # noqa: F401 (the fixture)

SCHEDULE = {"cron": "0 0 9 1 * *", "timezone": "Asia/Shanghai"}  # 09:00 Shanghai on each first of the month


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[dict[str, Any]], list[dict[str, str]]]]:
    bodies: list[dict[str, Any]] = []
    headers: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers["Content-Length"]))
            bodies.append(json.loads(raw))
            headers.append({**dict(self.headers.items()), "raw": raw.decode()})
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/report", bodies, headers
    finally:
        server.shutdown()


def test_a_monthly_task_fires_at_its_previews_times_for_13_months(sundial: Sundial, receiver) -> None:  # noqa: F811
    url, bodies, headers = receiver
    auth, signing_secret = sundial.tenant("reports")
    body = {"schedule": SCHEDULE, "count": 13, "after": sundial.now().isoformat()}
    status, preview = sundial.call("POST", "/v1/schedules:preview", body, auth)
    assert status == 200, preview
    status, task = sundial.call("POST", "/v1/tasks", {"schedule": SCHEDULE, "target": {"http": {"url": url}}}, auth)
    assert status == 201, task

    fired = sundial.advance(to=datetime.fromisoformat(preview["times"][-1].replace("Z", "+00:00")))

    assert fired == 13
    assert [body["scheduled_for"] for body in bodies] == preview["times"]
    # the runs are kept for the deployment's retention (30 days by default): the last is listed
    status, runs = sundial.call("GET", f"/v1/tasks/{task['id']}/runs?limit=100", None, auth)
    assert [(run["scheduled_for"], run["status"]) for run in runs["items"]] == [(preview["times"][-1], "succeeded")]
    verifier = Verifier(signing_secret)
    for seen in headers:
        verifier.verify(seen.pop("raw"), seen)  # raises on a signature that does not verify
