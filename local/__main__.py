"""`make run`: Sundial on one machine.

moto runs as its own process on loopback; the table is created from the same PynamoDB models
the CDK stack is built from; the API Lambda handler answers on http://127.0.0.1:$SUNDIAL_PORT.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType

from local.http_adapter import make_server
from local.moto_server import MotoServer, quiet_metrics


def main() -> int:
    port = int(os.environ.get("SUNDIAL_PORT", "8080"))
    moto = MotoServer(int(os.environ["SUNDIAL_MOTO_PORT"]) if os.environ.get("SUNDIAL_MOTO_PORT") else None)
    moto.start()
    moto.use()
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "1")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")

    # Imported only now: every client must be created after AWS_ENDPOINT_URL points at moto.
    from functions.api.handler import handler
    from shared.settings import from_env
    from shared.store.dynamo import ensure_table

    quiet_metrics()

    settings = from_env()
    ensure_table(settings.table_name)
    server = make_server("127.0.0.1", port, handler)
    stopping = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        if not stopping.is_set():
            stopping.set()
            threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    base = f"http://127.0.0.1:{port}"
    print(
        f"Sundial is running\n  API      {base}/v1/tasks\n  docs     {base}/v1/docs"
        f"\n  OpenAPI  {base}/v1/openapi.json\n  moto     {moto.endpoint}"
        f"  (aws --endpoint-url {moto.endpoint} dynamodb scan --table-name {settings.table_name})"
        "\nCtrl-C stops it.",
        flush=True,
    )
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        moto.stop()
        print("Sundial stopped.", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
