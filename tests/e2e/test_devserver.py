"""`make run` as a development server (docs/devserver.md): its state kept in its data folder
across a clean stop (SIGINT, as a Ctrl-C, or SIGTERM), every answered write across a ``kill
-9``, and forgotten with ``fresh``; what fell due while it was down follows each task's
``misfire``."""

from __future__ import annotations

import re
import signal
import stat
import time
from datetime import datetime
from pathlib import Path

import pytest

from local.moto_host.persist import SNAPSHOT
from local.settings import LocalSettings
from shared.settings.environment import env_name
from sundial_cli.settings import CONFIG_ENV, KEY_ENV, OUTPUT_ENV, PROFILE_ENV, URL_ENV
from tests.support.cli import Sundial as Cli
from tests.support.cli import new_tenant
from tests.support.eventually import until
from tests.support.runtime import STOP_TIMEOUT_S, Client, running_runtime

pytestmark = pytest.mark.e2e

MISFIRE_TOLERANCE_MS = 1000
"""The runtime's misfire tolerance here (60 s unless set): a restart's downtime is well past it."""
TOLERANT = {env_name("misfire_tolerance_ms"): str(MISFIRE_TOLERANCE_MS)}
ADMIN_LINE = re.compile(r"admin +key (sk_admin_\S+)")


def parse(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def admin_key(client: Client) -> str:
    """The admin key the runtime printed at its start (its own: none was given)."""
    found = ADMIN_LINE.search("".join(client.opening))
    assert found, client.opening
    return found.group(1)


def stop(client: Client, how: signal.Signals) -> float:
    """Stop the runtime with ``how`` and wait for it to exit; when it had exited."""
    assert client.process is not None
    client.process.send_signal(how)
    client.process.wait(timeout=STOP_TIMEOUT_S)
    return time.time()


def register(client: Client, key: str, url: str, **fields) -> dict:
    status, task = client.call(
        "POST",
        "/v1/tasks",
        {"schedule": {"after_seconds": 3600}, "target": {"http": {"url": url}}, **fields},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert status == 201, task
    return task


def runs(client: Client, key: str, task_id: str) -> list[str]:
    answer = client.call("GET", f"/v1/tasks/{task_id}/runs", headers={"Authorization": f"Bearer {key}"})[1]
    return sorted(run["status"] for run in answer["items"])


def profile_works(tmp_path: Path, client: Client, key: str) -> bool:
    """``sundial tenants list`` with a saved profile (the CLI's config file) holding ``key``."""
    from click.testing import CliRunner

    from sundial_cli.main import cli

    config = tmp_path / "config.toml"
    config.write_text(f'[profiles.dev]\nurl = "{client.base}"\napi_key = "{key}"\n')
    env = {CONFIG_ENV: str(config), PROFILE_ENV: "dev", URL_ENV: "", KEY_ENV: "", OUTPUT_ENV: "json"}
    result = CliRunner().invoke(cli, ["tenants", "list"], env=env)
    return result.exit_code == 0


def test_a_clean_stop_keeps_tasks_tenants_and_the_admin_key_and_what_fell_due_follows_misfire(tmp_path, receiver):
    data = tmp_path / "data"
    with running_runtime(data, admin_key=None, env=TOLERANT) as first:
        admin = admin_key(first)
        banner = "".join(first.opening)
        assert f"State is kept in {data} " in banner, banner
        assert f"{LocalSettings.setting_name('fresh')}=1 starts empty" in banner
        assert profile_works(tmp_path, first, admin)
        tenant, key = new_tenant(Cli(first.base, admin), "devserver")
        kept = register(first, key, receiver.script("/kept", 200))
        fired = register(first, key, receiver.script("/fired", 200), schedule={"after_seconds": 1})
        receiver.wait_for("/fired", 1, timeout=30)
        assert until(lambda: runs(first, key, fired["id"]) == ["succeeded"], 15)
        # due while the runtime is down: one fires at the restart, the other is skipped
        fire_now = register(first, key, receiver.script("/fire-now", 200), schedule={"after_seconds": 10})
        skip = register(first, key, receiver.script("/skip", 200), schedule={"after_seconds": 10}, misfire="skip")
        stopped = stop(first, signal.SIGINT)  # a Ctrl-C
    due = max(parse(t["next_fire_at"]) for t in (fire_now, skip))
    assert stopped < due, "the runtime stopped after the tasks fell due: no downtime to test"
    assert not receiver.calls_to("/fire-now")
    # the snapshot holds secrets in clear (the admin key, the signing root): its owner's only
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert stat.S_IMODE((data / SNAPSHOT).stat().st_mode) == 0o600
    # down until both are late past the misfire tolerance
    assert until(lambda: time.time() > due + MISFIRE_TOLERANCE_MS / 1000 + 1, 30)
    with running_runtime(data, admin_key=None, env=TOLERANT) as second:
        assert admin_key(second) == admin  # the same admin key: a saved CLI profile still works
        assert profile_works(tmp_path, second, admin)
        assert second.call("GET", f"/v1/tenants/{tenant}", headers={"Authorization": f"Bearer {admin}"})[0] == 200
        status, task = second.call("GET", f"/v1/tasks/{kept['id']}", headers={"Authorization": f"Bearer {key}"})
        assert (status, task["status"], task["next_fire_at"]) == (200, "scheduled", kept["next_fire_at"])
        assert runs(second, key, fired["id"]) == ["succeeded"]  # its run kept (and not fired again: below)
        receiver.wait_for("/fire-now", 1, timeout=30)
        assert until(lambda: runs(second, key, fire_now["id"]) == ["succeeded"], 30), runs(second, key, fire_now["id"])
        assert until(lambda: runs(second, key, skip["id"]) == ["skipped"], 30), runs(second, key, skip["id"])
        assert not receiver.calls_to("/skip")
        assert len(receiver.calls_to("/fired")) == 1
        # a task registered now fires as usual
        soon = register(second, key, receiver.script("/soon", 200), schedule={"after_seconds": 2})
        receiver.wait_for("/soon", 1, timeout=30)
        assert until(lambda: runs(second, key, soon["id"]) == ["succeeded"], 15)
        stop(second, signal.SIGTERM)
    with running_runtime(data, admin_key=None, env={LocalSettings.setting_name("fresh"): "1"}) as fresh:
        assert admin_key(fresh) != admin
        assert not profile_works(tmp_path, fresh, admin)  # unauthorized: nothing was kept
        status, answer = fresh.call("GET", f"/v1/tasks/{kept['id']}", headers={"Authorization": f"Bearer {key}"})
        assert status in (401, 403), answer


def test_a_kill_9_right_after_its_answers_loses_nothing_it_answered(tmp_path, receiver):
    """Five registrations answered 201, then ``kill -9`` at once (no snapshot since: the journal,
    local/moto_host/journal.py, holds them), then a start on the same folder: all there."""
    data = tmp_path / "data"
    with running_runtime(data, admin_key=None) as first:
        admin = admin_key(first)
        tenant, key = new_tenant(Cli(first.base, admin), "devserver-kill")
        answered = [register(first, key, receiver.script(f"/kept-{n}", 200)) for n in range(5)]
        stop(first, signal.SIGKILL)
    with running_runtime(data, admin_key=None) as second:
        assert admin_key(second) == admin
        for task in answered:
            status, kept = second.call("GET", f"/v1/tasks/{task['id']}", headers={"Authorization": f"Bearer {key}"})
            assert (status, kept["status"]) == (200, "scheduled")
        assert second.call("GET", f"/v1/tenants/{tenant}", headers={"Authorization": f"Bearer {admin}"})[0] == 200


def test_a_kept_virtual_clock_starts_again_where_its_last_advance_ended(tmp_path):
    """Its tasks' marks and messages are on the virtual time: a restart at the wall's now would
    set the clock back a day here, and every occurrence of that day would be due again."""
    data, virtual = tmp_path / "data", {LocalSettings.setting_name("clock"): "virtual"}
    with running_runtime(data, env=virtual) as first:
        status, moved = first.call("POST", "/v1/test/clock:advance", {"seconds": 86_400})
        assert status == 200, moved
        stop(first, signal.SIGINT)
    with running_runtime(data, env=virtual) as second:
        assert second.call("GET", "/v1/test/clock")[1]["now"] == moved["now"]
        stop(second, signal.SIGTERM)
    refused_start = pytest.raises(RuntimeError, match=r"was advanced by a virtual clock to .* ahead of the wall")
    with refused_start as refused, running_runtime(data):  # the wall's clock: its tasks would wait a day
        pass
    assert f"{LocalSettings.setting_name('clock')}=virtual" in str(refused.value)
    fresh = {**virtual, LocalSettings.setting_name("fresh"): "1"}
    with running_runtime(data, env=fresh) as third:  # nothing kept: the wall's now again
        assert parse(third.call("GET", "/v1/test/clock")[1]["now"]) < parse(moved["now"]) - 3600
