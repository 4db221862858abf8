"""`python -m local.echo [PORT]`: a receiver for the tour. Prints every callback it gets and
answers 200, or the status a path asks for: `/status/500` answers 500.

Each printed line comes from one clock reading: the time it shows and how long after the
callback's ``scheduled_for`` it arrived are the same instant (two readings either side of a
second's boundary would print a callback up to a second before it happened).
"""

from __future__ import annotations

import json
import sys
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from typing import Any

from local.http_adapter import LoopbackServer

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MS = timedelta(milliseconds=1)


def describe(now_ns: int, method: str, path: str, status: int, headers: dict[str, str], body: Any) -> str:
    """What the receiver prints for one call received at ``now_ns`` (``time.time_ns()``): every
    time in it is that one reading."""
    now_ms = now_ns // 1_000_000
    stamp = time.strftime("%H:%M:%S", time.gmtime(now_ms // 1000)) + f".{now_ms % 1000:03d}Z"
    after = ""
    scheduled = body.get("scheduled_for") if isinstance(body, dict) else None
    if isinstance(scheduled, str):
        try:
            scheduled_ms = (datetime.fromisoformat(scheduled.replace("Z", "+00:00")) - EPOCH) // MS
        except (TypeError, ValueError):  # not a time, or one without an offset
            pass
        else:
            gap = now_ms - scheduled_ms
            after = f"  ({gap} ms after scheduled_for)" if gap >= 0 else f"  ({-gap} ms BEFORE scheduled_for)"
    return f"{stamp} {method} {path} -> {status}  {headers}{after}\n    {json.dumps(body)}"


class Echo(BaseHTTPRequestHandler):
    def _serve(self) -> None:
        now_ns = time.time_ns()  # the one reading this call's line is printed from
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        parts = self.path.strip("/").split("/")
        status = int(parts[1]) if len(parts) >= 2 and parts[0] == "status" and parts[1].isdigit() else 200
        sundial = {k: v for k, v in self.headers.items() if k.lower().startswith(("sundial-", "idempotency-"))}
        print(describe(now_ns, self.command, self.path, status, sundial, body), flush=True)
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        return


def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 9000
    server = LoopbackServer(("127.0.0.1", port), Echo)
    print(f"echo receiver on http://127.0.0.1:{port} (Ctrl-C stops it)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        server.server_close()


if __name__ == "__main__":
    main()
