""" "Is anything wrong?": how many of a tenant's items are in a status somebody must look at,
exactly, each a count of the status index (docs/status-index.md): failed tasks, paused tasks (and
those Sundial paused after failures in a row), dead letters waiting for a redrive, running and
failed jobs, failed workflow runs. What the console's home shows and ``GET /v1/overview`` answers."""

from __future__ import annotations

from dataclasses import dataclass

from shared.domain.jobs import JobStatus
from shared.domain.states import TaskFilter
from shared.domain.workflows import NodeStatus
from shared.services.ports.jobs import JobCounts
from shared.services.ports.tasks import TaskCounts
from shared.services.ports.workflows import RunCounts


@dataclass(frozen=True)
class Overview:
    failed_tasks: int
    paused_tasks: int
    """Every paused task, those paused after failures included."""
    paused_after_failures: int
    waiting_letters: int
    running_jobs: int
    failed_jobs: int
    failed_runs: int


@dataclass(frozen=True)
class OverviewService:
    tasks: TaskCounts
    jobs: JobCounts
    workflows: RunCounts

    def read(self, tenant: str) -> Overview:
        """The tenant's counts: a Query with ``Select: COUNT`` of each status's index partitions
        (a moment behind the writes, as any index)."""
        return Overview(
            failed_tasks=self.tasks.count(tenant, TaskFilter.FAILED),
            paused_tasks=self.tasks.count(tenant, TaskFilter.PAUSED),
            paused_after_failures=self.tasks.count(tenant, TaskFilter.PAUSED_AFTER_FAILURES),
            waiting_letters=self.tasks.count_dead_letters(tenant),
            running_jobs=self.jobs.count(tenant, JobStatus.RUNNING),
            failed_jobs=self.jobs.count(tenant, JobStatus.FAILED),
            failed_runs=self.workflows.count_runs(tenant, NodeStatus.FAILED),
        )
