"""`make run` end to end for jobs: POST /v1/jobs, the runtime's state machine on moto's Step
Functions, the job function for every step, and a real HTTP processor run here; over HTTP only."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.processor import SummingProcessor, running_processor

pytestmark = pytest.mark.e2e


@pytest.fixture
def processor() -> Iterator[tuple[str, SummingProcessor]]:
    script = SummingProcessor()
    with running_processor(script) as (url, _):
        yield url, script


def finished(sundial, body: dict[str, Any], timeout: float = 15) -> dict[str, Any]:
    """POST the job, then GET it until it is no longer running."""
    status, job = sundial.call("POST", "/v1/jobs", body)
    assert status == 201, job
    assert job["status"] == "running"
    deadline = time.time() + timeout
    while job["status"] == "running" and time.time() < deadline:
        time.sleep(0.2)
        status, job = sundial.call("GET", f"/v1/jobs/{job['id']}")
        assert status == 200, job
    return job


def test_a_job_runs_through_the_local_state_machine_to_its_result(sundial, processor):
    url, script = processor
    body = {
        "name": "sum",
        "processor": {"http": {"url": url}},
        "data": [[{"expand": 60}]],
        "sharding": {"min_items_per_shard": 10, "max_items_per_shard": 20, "max_shards": 4},
        "notify_every_percent": 50,
    }
    job = finished(sundial, body)
    assert job["status"] == "succeeded", job
    assert job["result"] == {"total": 60 * 61 // 2 + 1000, "shards": 5}  # 4 shards of 15, then 1
    assert job["progress"] == {"done_shards": 5, "total_shards": 5, "percent": 100, "level": 1}
    phases = [c["phase"] for c in script.calls]
    assert phases[0] == "pre"
    assert phases[-1] == "post"
    assert phases.count("pre") == phases.count("post") == 1
    shards = [c for c in script.calls if c["phase"] == "shard"]
    assert len(shards) == 6  # 4 + 1 shards, one of them called twice (503, then retried)
    assert [c["level"] for c in shards] == [0] * 5 + [1]  # the second level only after the whole first
    assert sorted({c["shard"] for c in shards if c["level"] == 0}) == [0, 1, 2, 3]
    notified = [c["progress"]["percent"] for c in script.calls if c["phase"] == "notify"]
    assert [p - p % 50 for p in notified] == [50, 100]


def test_a_processor_refusing_pre_fails_the_job_through_the_fail_step(sundial, processor):
    url, script = processor
    job = finished(sundial, {"processor": {"http": {"url": url}}, "data": [["refuse"]]})
    assert job["status"] == "failed", job
    assert job["error"].startswith("ProcessorFailed"), job  # Lambda's errorType, caught by name
    assert [c["phase"] for c in script.calls] == ["pre"]  # a 4xx is not retried, and no post
