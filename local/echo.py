"""`python -m local.echo [PORT]`: a receiver for the tour. Prints every callback it gets and
answers 200, or the status a path asks for: `/status/500` answers 500."""

from __future__ import annotations

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Echo(BaseHTTPRequestHandler):
    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        parts = self.path.strip("/").split("/")
        status = int(parts[1]) if len(parts) >= 2 and parts[0] == "status" and parts[1].isdigit() else 200
        sundial = {k: v for k, v in self.headers.items() if k.lower().startswith(("sundial-", "idempotency-"))}
        stamp = time.strftime("%H:%M:%S", time.gmtime()) + f".{int(time.time() * 1000) % 1000:03d}Z"
        print(f"{stamp} {self.command} {self.path} -> {status}  {sundial}\n    {json.dumps(body)}", flush=True)
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        return


def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 9000
    server = ThreadingHTTPServer(("127.0.0.1", port), Echo)
    print(f"echo receiver on http://127.0.0.1:{port} (Ctrl-C stops it)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        server.server_close()


if __name__ == "__main__":
    main()
