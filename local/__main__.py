"""`make run`: Sundial on one machine (see local/runtime.py)."""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType
from typing import Any

from local.runtime import Runtime


def print_fire(fired: Any) -> None:
    staged, result = fired.staged, fired.result.value
    if result in ("dropped", "early", "in_flight"):
        return
    lateness = f"{fired.lateness_ms} ms late" if fired.lateness_ms is not None else ""
    reason = f"  ({fired.reason})" if fired.reason and result != "succeeded" else ""
    print(
        f"fired {staged.task_id} run {staged.run_id} attempt {staged.attempt}: {result} {lateness}{reason}", flush=True
    )


def main() -> int:
    runtime = Runtime(
        port=int(os.environ.get("SUNDIAL_PORT", "8080")),
        tick_period_s=float(os.environ.get("SUNDIAL_TICK_PERIOD_S", "1")),
        delay_queues=int(os.environ.get("SUNDIAL_LOCAL_DELAY_QUEUES", "4")),
        moto_port=int(os.environ["SUNDIAL_MOTO_PORT"]) if os.environ.get("SUNDIAL_MOTO_PORT") else None,
        on_fire=print_fire,
    )
    runtime.start()
    stopped = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        stopped.set()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    base = f"http://127.0.0.1:{runtime.port}"
    print(
        f"Sundial is running\n  API      {base}/v1/tasks\n  jobs     {base}/v1/jobs"
        f"  (state machine {os.environ['SUNDIAL_JOB_STATE_MACHINE_ARN']})\n  docs     {base}/v1/docs"
        f"\n  OpenAPI  {base}/v1/openapi.json\n  moto     {runtime.moto.endpoint}"
        f"  (aws --endpoint-url {runtime.moto.endpoint} dynamodb scan --table-name sundial)"
        "\nCtrl-C stops it. One line per fire follows.",
        flush=True,
    )
    stopped.wait()
    runtime.stop()
    print("Sundial stopped.", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
