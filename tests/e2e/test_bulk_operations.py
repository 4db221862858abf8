"""Tags and bulk operations against ``make run`` with a real receiver (docs/bulk.md): tasks tagged
from the CLI fire; a dry run counts the ones a pause by tag would change and changes nothing; the
pause stops exactly those (their receiver is called no more while the others' still is); a bulk
resume by status brings them back; a bulk cancel by name prefix stops them all. A tenant of its
own, so the selections hold its tasks only."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import ADMIN_KEY
from tests.support.cli import Sundial, new_tenant, until
from tests.support.eventually import eventually

pytestmark = pytest.mark.e2e


@pytest.fixture
def cli(sundial) -> Sundial:
    _, key = new_tenant(Sundial(sundial.base, ADMIN_KEY), "bulk")
    return Sundial(sundial.base, key)


def test_tagged_tasks_are_paused_resumed_and_cancelled_by_selector_as_their_receiver_sees(cli, receiver):
    teams = {"orders-a": "orders", "orders-b": "orders", "billing-a": "billing", "billing-b": "billing"}
    ids = {}
    for name, team in teams.items():
        url = receiver.script(f"/bulk/{name}", 200)
        task = cli.json(
            "tasks", "create", "--name", f"bulk-{name}", "--every", "1", "--url", url, "--tag", f"team:{team}"
        )
        assert task["tags"] == {"team": team}
        ids[name] = task["id"]
    for name in teams:
        assert receiver.wait_for(f"/bulk/{name}", 1, timeout=15), f"{name} never fired"

    listed = until(lambda: {t["name"] for t in cli.json("tasks", "list", "--tag", "team:orders")["items"]} or None)
    assert listed == {"bulk-orders-a", "bulk-orders-b"}

    dry = cli.json("tasks", "bulk", "pause", "--tag", "team:orders", "--dry-run")
    assert (dry["changed"], dry["dry_run"]) == (2, True)
    assert sorted(dry["changed_ids"]) == sorted([ids["orders-a"], ids["orders-b"]])
    assert {cli.json("tasks", "get", ids[n])["status"] for n in teams} == {"scheduled"}

    paused = cli.json("tasks", "bulk", "pause", "--tag", "team:orders")
    assert (paused["changed"], paused["unchanged"], paused["errors"]) == (2, 0, [])
    status = {name: cli.json("tasks", "get", task_id)["status"] for name, task_id in ids.items()}
    assert status == {"orders-a": "paused", "orders-b": "paused", "billing-a": "scheduled", "billing-b": "scheduled"}
    stopped = {name: len(receiver.calls_to(f"/bulk/{name}")) for name in ("orders-a", "orders-b")}
    billing = len(receiver.calls_to("/bulk/billing-a"))
    # three more seconds of the billing tasks' fires: the paused ones fired at most their one in flight
    assert len(receiver.wait_for("/bulk/billing-a", billing + 3, timeout=15)) >= billing + 3
    for name, count in stopped.items():
        assert len(receiver.calls_to(f"/bulk/{name}")) <= count + 1, name

    again = cli.json("tasks", "bulk", "pause", "--tag", "team:orders")  # a retried operation acts on nothing
    assert (again["changed"], again["unchanged"]) == (0, 2)

    def resume_the_paused() -> None:  # the status index shows the pauses a moment after their writes
        cli.json("tasks", "bulk", "resume", "--status", "paused")
        assert [cli.json("tasks", "get", ids[n])["status"] for n in ("orders-a", "orders-b")] == ["scheduled"] * 2

    eventually(resume_the_paused, timeout=10)
    for name, count in stopped.items():
        assert len(receiver.wait_for(f"/bulk/{name}", count + 2, timeout=15)) >= count + 2, f"{name} did not resume"

    cancelled = cli.json("tasks", "bulk", "cancel", "--name-prefix", "bulk-")
    assert cancelled["changed"] == 4
    assert {cli.json("tasks", "get", task_id)["status"] for task_id in ids.values()} == {"cancelled"}
    ended = {name: len(receiver.calls_to(f"/bulk/{name}")) for name in teams}
    check = cli.json("tasks", "create", "--name", "check", "--after", "2", "--url", receiver.script("/bulk/check", 200))
    assert receiver.wait_for("/bulk/check", 1, timeout=15), check
    for name, count in ended.items():
        assert len(receiver.calls_to(f"/bulk/{name}")) <= count + 1, name  # at most the one in flight


def test_a_bulk_command_with_no_selector_or_a_bad_one_is_refused(cli):
    refused = cli.fails(2, "tasks", "bulk", "pause")
    assert "give one of --name-prefix, --tag, --status" in refused.stderr
    refused = cli.fails(2, "tasks", "bulk", "cancel", "--tag", "no-colon")
    assert "KEY:VALUE" in refused.stderr
    refused = cli.fails(1, "tasks", "bulk", "cancel", "--tag", "a#b:c")
    assert "selector.tag" in refused.stderr
