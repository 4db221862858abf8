"""The tenant's counts of what needs looking at, as ``GET /v1/overview`` answers them."""

from __future__ import annotations

from shared.api.responses import (
    DeadLettersOverview,
    JobsOverview,
    OverviewOut,
    TasksOverview,
    WorkflowRunsOverview,
)
from shared.services.overview import Overview


def overview_view(counts: Overview) -> OverviewOut:
    return OverviewOut(
        tasks=TasksOverview(
            failed=counts.failed_tasks,
            paused=counts.paused_tasks,
            paused_after_failures=counts.paused_after_failures,
        ),
        dead_letters=DeadLettersOverview(waiting=counts.waiting_letters),
        jobs=JobsOverview(running=counts.running_jobs, failed=counts.failed_jobs),
        workflow_runs=WorkflowRunsOverview(failed=counts.failed_runs),
    )
