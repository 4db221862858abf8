"""`make run`: Sundial on one machine (see local/runtime.py)."""

from __future__ import annotations

import errno
import signal
import sys
import threading
from types import FrameType
from typing import Any

from local.moto_server import EarlyMoto, scan_command

PORT_IN_USE = "something else listens on"
"""What ``make run`` says, then exits, when its API's port is taken."""


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
    # moto's process first: it imports its modules (0.5 s) while this one imports the runtime's
    early = EarlyMoto()
    from local.runtime import Runtime
    from local.settings import LocalSettings
    from shared.settings.environment import env_name
    from shared.settings.model import SettingsError

    try:
        settings = LocalSettings.from_env(make_run=True)
    except SettingsError as exc:
        early.close()
        raise SystemExit(f"make run: {exc}") from None
    runtime = Runtime(settings, on_fire=print_fire, early=early)
    try:
        runtime.start()
    except RuntimeError as exc:  # moto did not start (its line above says why), the data folder is in use
        runtime.stop()
        early.close()
        raise SystemExit(f"make run: {exc}") from None
    except OSError as exc:  # the API's port is taken: moto, started already, must not outlive this process
        runtime.stop()
        early.close()
        if exc.errno == errno.EADDRINUSE:
            raise SystemExit(
                f"make run: {PORT_IN_USE} 127.0.0.1:{settings.port} ({LocalSettings.setting_name('port')} sets another)"
            ) from None
        raise
    stopped = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        stopped.set()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    base = f"http://127.0.0.1:{runtime.port}"
    functions = runtime.function_settings
    admin = f"({env_name('admin_key')})" if settings.functions.admin_key else functions.admin_key
    knob = LocalSettings.setting_name("signing_key")
    signing = (
        f"kms: the key {functions.signing_key_arn} ({knob})"
        if functions.signing_key_arn
        else f"parameter: secrets derived from the root key {functions.signing_root_parameter} ({knob})"
    )
    kept = (
        f"State is kept in {settings.data} (tasks, runs, tenants, keys, the admin key): a restart continues "
        f"where this run stopped; {LocalSettings.setting_name('fresh')}=1 starts empty."
        if settings.data
        else "Everything is kept in memory: stopping Sundial forgets every task, run, tenant and key."
    )
    if settings.scheduler_auth == "sigv4":
        scheduler = "signatures verified against the tenants' access keys, as the stack does"
    else:
        scheduler = (
            f"any request acts as tenant {functions.default_tenant!r}, whatever key signed it "
            f"({LocalSettings.setting_name('scheduler_auth')}=sigv4 verifies signatures)"
        )
    if runtime.clock is not None:
        kept += (
            f"\nThe clock is virtual ({LocalSettings.setting_name('clock')}): it stands still until "
            f"POST {base}/v1/test/clock:advance moves it."
        )
    print(
        f"Sundial is running\n  API      {base}/v1/tasks\n  console  {base}/console/  (sign in with a key, "
        f"or none for tenant {functions.default_tenant!r})\n  jobs     {base}/v1/jobs"
        f"  (state machine {functions.job_state_machine_arn})\n  docs     {base}/v1/docs"
        f"\n  OpenAPI  {base}/v1/openapi.json\n  EventBridge Scheduler API  {base}/scheduler  ({scheduler})"
        f"\n  admin    key {admin}  (for /v1/tenants; no key acts as tenant "
        f"{functions.default_tenant!r})\n  signing  {signing}\n  moto     {runtime.moto.endpoint}\n  items    "
        f"{scan_command(runtime.moto.endpoint, functions.table_name)}"
        f"\n{kept}\nCtrl-C stops it. One line per fire follows.",
        flush=True,
    )
    stopped.wait()
    runtime.stop()
    print("Sundial stopped.", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
