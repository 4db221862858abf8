"""``sundial overview``: is anything wrong? The tenant's exact counts of what needs looking at
(``GET /v1/overview``, the status index counted), as the console's home shows them, each with
the command that lists them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import click

from shared.api.responses import OverviewOut
from sundial_cli import output
from sundial_cli.commands.common import Command, State, pass_state
from sundial_cli.output import field


@dataclass(frozen=True)
class Count:
    what: str
    count: Callable[[OverviewOut], int]
    listed_by: str
    check: bool
    """One of the home's checks: not 0 needs attention."""


COUNTS = (
    Count("failed tasks", lambda o: o.tasks.failed, "sundial tasks list --status failed", True),
    Count(
        "paused after failures",
        lambda o: o.tasks.paused_after_failures,
        "sundial tasks list --status paused_after_failures",
        True,
    ),
    Count(
        "dead letters waiting",
        lambda o: o.dead_letters.waiting,
        "sundial dead-letters list --status dead_lettered",
        True,
    ),
    Count("failed jobs", lambda o: o.jobs.failed, "sundial jobs list --status failed", True),
    Count("failed workflow runs", lambda o: o.workflow_runs.failed, "sundial workflow-runs list --status failed", True),
    Count("paused tasks", lambda o: o.tasks.paused, "sundial tasks list --status paused", False),
    Count("running jobs", lambda o: o.jobs.running, "sundial jobs list --status running", False),
)
COLUMNS = (field("what", "count of"), field("count"), field("listed_by", "listed by"))


@click.command("overview", cls=Command)
@pass_state
def overview(state: State) -> None:
    """Is anything wrong? Exact counts of failed tasks, tasks paused after failures, dead letters
    waiting, failed jobs and failed workflow runs (the console's home), then paused tasks and
    running jobs, each with the command that lists them; on stderr, how many of the five checks
    need attention. With -o json, the API's answer.

    \b
    sundial -o json overview | jq .tasks.failed
    """
    answer = state.client().overview()

    def render() -> None:
        model = answer.model
        rows = [{"what": c.what, "count": c.count(model), "listed_by": c.listed_by} for c in COUNTS]
        output.table(rows, COLUMNS)
        checks = [c for c in COUNTS if c.check]
        bad = sum(1 for c in checks if c.count(model))
        if bad:
            output.note(f"{bad} of {len(checks)} checks need attention")
        else:
            output.note(
                "nothing is wrong: no failed task, no task paused after failures, no dead letter waiting, "
                "no failed job, no failed workflow run"
            )

    state.show(answer, render)
