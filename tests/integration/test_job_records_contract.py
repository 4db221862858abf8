"""The job records as the API starts, lists and counts them, on DynamoDB (shared/store/jobs.py) and
in memory (tests/support/fakes.py) held to the same contract: running and failed jobs come from
the status index (docs/status-index.md), full pages whatever the tenant's other jobs, counted
exactly; a job leaves its list in the write that ends or cancels it."""

from __future__ import annotations

from typing import Any

import pytest

from shared.domain.jobs import JobStatus, NewJobRecord
from shared.domain.sharding import Sharding
from tests.support.eventually import eventually
from tests.support.fakes import InMemoryJobStore

pytestmark = pytest.mark.integration


@pytest.fixture(params=["memory", "dynamo"])
def records(request: pytest.FixtureRequest) -> Any:
    if request.param == "memory":
        return InMemoryJobStore()
    request.getfixturevalue("aws")
    from shared.settings.environment import from_env
    from shared.store.jobs import DynamoJobStore
    from shared.store.table import bind_table

    bind_table(from_env().table_name)  # as the functions do: every model on the table's one connection
    return DynamoJobStore()


def _start(records: Any, job_id: str, created_ms: int, tenant: str = "default") -> str:
    job = NewJobRecord(job_id, tenant, None, {"http": {"url": "http://x"}}, Sharding(), None, created_ms)
    assert records.create(job)
    return job_id


def _listed(records: Any, status: JobStatus, limit: int = 10) -> list[str]:
    return [view.id for view in records.views("default", limit, None, status).items]


def test_running_and_failed_jobs_list_full_pages_and_count_exactly(records: Any) -> None:
    """An old failed job and an old running one are on the first page of their status with
    more newer jobs than a filtered read of the listing index reaches (200); a job cancelled or
    ended leaves its list and its count in the same write."""
    failed = _start(records, "job-failed", 1)
    assert records.failed(failed, "the pre step failed")
    running = _start(records, "job-running", 2)
    cancelled = _start(records, "job-cancelled", 3)
    assert records.cancel("default", cancelled, 4) is not None
    newer = [_start(records, f"job-{i:04d}", 10 + i) for i in range(210)]
    for job_id in newer:
        assert records.succeeded(job_id, 1)
    _start(records, "job-other", 5, tenant="other")
    assert records.failed("job-other", "the processor answered HTTP 500")

    def settled() -> None:  # the index's lag (local/moto_patches/index_lag.py)
        assert _listed(records, JobStatus.FAILED) == [failed]
        assert _listed(records, JobStatus.RUNNING) == [running]
        assert [records.count("default", s) for s in (JobStatus.RUNNING, JobStatus.FAILED)] == [1, 1]
        assert records.count("other", JobStatus.FAILED) == 1

    eventually(settled)
    with pytest.raises(ValueError, match="not counted"):
        records.count("default", JobStatus.SUCCEEDED)

    assert records.failed(running, "the post step failed")

    def moved() -> None:
        assert _listed(records, JobStatus.RUNNING) == []
        assert _listed(records, JobStatus.FAILED) == [running, failed]
        assert [records.count("default", s) for s in (JobStatus.RUNNING, JobStatus.FAILED)] == [0, 2]

    eventually(moved)


def test_a_status_page_of_jobs_goes_on_from_its_cursor_exactly_once(records: Any) -> None:
    made = [_start(records, f"job-{i}", 100 + i) for i in range(7)]
    for job_id in made:
        assert records.failed(job_id, "failed")
    _start(records, "job-still-running", 200)

    def paged() -> None:
        seen, sizes, cursor = [], [], None
        while True:
            page = records.views("default", 3, cursor, JobStatus.FAILED)
            seen += [view.id for view in page.items]
            sizes.append(len(page.items))
            cursor = page.next_cursor
            if cursor is None:
                break
        assert seen == made[::-1]
        assert sizes == [3, 3, 1]

    eventually(paged)
