"""A job from POST /v1/jobs to its result, with nothing faked but AWS: the API handler, the job
item and objects on moto, the synthesized state machine run by moto's interpreter, the real job
function for every Lambda task, and a real HTTP processor."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from shared.domain.sharding import split
from tests.integration.conftest import jobs_on
from tests.support.events import FakeLambdaContext, api_event, gateway
from tests.support.eventually import until
from tests.support.processor import SummingProcessor, running_processor
from tests.support.stepfunctions import state_machine, sundial_definition

pytestmark = pytest.mark.integration
BUCKET = "sundial-jobs-e2e"


@pytest.fixture(scope="module")
def definition() -> str:
    """The state machine of the Sundial stack itself, as `cdk deploy` would create it."""
    return sundial_definition()


@pytest.fixture
def processor() -> Iterator[tuple[str, SummingProcessor]]:
    script = SummingProcessor()
    with running_processor(script) as (url, _):
        yield url, script


def _job_step(event: dict[str, Any]) -> Any:
    from functions.jobs.handler import handler

    return handler(event, FakeLambdaContext())


def _api() -> Callable[..., tuple[int, Any]]:
    api = gateway()

    def call(method: str, path: str, body: Any = None) -> tuple[int, Any]:
        raw = api(api_event(method, path, body), FakeLambdaContext())
        return raw["statusCode"], json.loads(raw["body"]) if raw.get("body") else None

    return call


def _run_job(
    definition: str,
    body: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    timeout: float,
    then: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """POST the job, follow it with GET until it finishes; everything on one mocked account
    (``then(job)`` runs on it too, before it goes)."""
    with state_machine(definition, _job_step) as runner, jobs_on(monkeypatch, runner.arn, BUCKET):
        api = _api()
        status, job = api("POST", "/v1/jobs", body)
        assert status == 201, job
        job_id = job["id"]

        def ended() -> dict[str, Any] | None:
            now = api("GET", f"/v1/jobs/{job_id}")[1]
            return now if now["status"] != "running" else None

        job = until(ended, timeout, poll=0.2) or api("GET", f"/v1/jobs/{job_id}")[1]
        history = runner.client.get_execution_history(
            executionArn=runner.client.list_executions(stateMachineArn=runner.arn)["executions"][0]["executionArn"],
            maxResults=1000,
        )["events"]
        job["_largest_state_payload"] = max(
            len(json.dumps(detail).encode())
            for event in history
            for key, detail in event.items()
            if key.endswith("EventDetails")
        )
        if then is not None:
            then(job)
    return job


def test_a_job_runs_from_the_api_through_the_state_machine_to_its_result(
    definition: str, processor: tuple[str, SummingProcessor], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, script = processor
    body = {
        "name": "sum",
        "processor": {"http": {"url": url}},
        "data": [[{"expand": 250}]],
        "sharding": {"min_items_per_shard": 10, "max_items_per_shard": 50, "max_shards": 20},
        "notify_every_percent": 25,
    }
    job = _run_job(definition, body, monkeypatch, timeout=30)
    assert job["status"] == "succeeded", job
    assert job["result"] == {"total": 250 * 251 // 2 + 1000, "shards": 21}
    assert job["progress"] == {
        "done_shards": 21, "total_shards": 21, "percent": 100, "level": 1, "done_items": 251, "total_items": 251,
    }  # fmt: skip
    phases = [c["phase"] for c in script.calls]
    assert phases[0] == "pre"
    assert phases[-1] == "post"
    shards = [c for c in script.calls if c["phase"] == "shard"]
    assert len(shards) == 22  # 20 + 1 shards, one of them called twice (503, then retried)
    level_of = [c["level"] for c in shards]
    assert level_of.index(1) == len(level_of) - 1  # the second level only after the whole first
    notified = [c["progress"]["percent"] for c in script.calls if c["phase"] == "notify"]
    # each threshold once, with the actual percent; shards end side by side, so two thresholds
    # crossed at once may be told in either order (each notify names its own threshold)
    assert sorted(p - p % 25 for p in notified) == [25, 50, 75, 100]
    # each step's times: pre, then each level once the one before it ended, then post
    pre, (first, second), post = job["pre"], job["levels"], job["post"]
    assert pre["started_at"] <= pre["finished_at"] == first["started_at"]
    assert (first["level"], first["total_shards"], first["done_shards"]) == (0, 20, 20)
    assert (second["level"], second["total_shards"], second["done_shards"]) == (1, 1, 1)
    assert first["started_at"] <= first["finished_at"] == second["started_at"] <= second["finished_at"]
    assert second["finished_at"] <= post["started_at"] <= post["finished_at"] == job["finished_at"]
    assert (job["failure"], job["error"]) == (None, None)
    assert job["processor"] == {"http": {"url": url, "method": "POST", "headers": {}, "timeout_seconds": 10.0}}
    assert job["sharding"] == body["sharding"]
    assert job["notify_every_percent"] == 25
    # post gets every shard's result in level and shard order, whatever order the shards ran in
    expected = [sum(shard) for shard in split(list(range(1, 251)), 20)] + [1000]
    assert script.calls[-1]["results"] == expected


def test_a_failed_job_says_which_step_failed_on_which_attempt_with_what_answer(
    definition: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shard 1 of level 0 answers 500 on each of its 3 attempts: the job says so, in words and
    member by member, with each level's shards and the processor's secret header redacted."""

    def process(body: dict[str, Any]) -> tuple[int, Any]:
        if body["phase"] == "shard" and (body["level"], body["shard"]) == (0, 1):
            return 500, b"the index is locked\n(try later)"
        return 200, {"result": 1} if body["phase"] == "shard" else {}

    with running_processor(process) as (url, seen):
        headers = {"Authorization": "Bearer s3cret", "X-Trace": "abc"}
        body = {
            "processor": {"http": {"url": url, "headers": headers}},
            "data": [[1, 2, 3], [4]],
            "sharding": {"min_items_per_shard": 1, "max_items_per_shard": 1, "max_shards": 10},
        }
        job = _run_job(definition, body, monkeypatch, timeout=30)
    assert job["status"] == "failed", job
    said = (
        "shard 1 of level 0 failed on attempt 3 of 3: the processor answered HTTP 500: the index is locked (try later)"
    )
    assert job["error"] == said
    assert job["failure"] == {
        "step": "shard", "level": 0, "shard": 1, "attempt": 3, "status": 500,
        "answer": "the index is locked (try later)", "reason": "the processor answered HTTP 500",
    }  # fmt: skip
    assert [b["shard"] for _, b in seen if b["phase"] == "shard" and b["level"] == 0].count(1) == 3
    assert job["processor"]["http"]["headers"] == {"Authorization": "[redacted]", "X-Trace": "abc"}
    (first, second) = job["levels"]
    assert (first["total_shards"], first["done_shards"], first["finished_at"]) == (3, 2, None)
    assert first["started_at"] == job["pre"]["finished_at"]
    assert (second["total_shards"], second["done_shards"], second["started_at"], second["finished_at"]) == (
        1,
        0,
        None,
        None,
    )
    assert job["post"] is None
    assert job["progress"] == {
        "done_shards": 2, "total_shards": 4, "percent": 50, "level": 0, "done_items": 2, "total_items": 4,
    }  # fmt: skip


def test_a_job_of_100000_items_completes_and_every_state_payload_stays_small(
    definition: str, processor: tuple[str, SummingProcessor], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, script = processor
    body = {
        "processor": {"http": {"url": url}},
        "data": [[{"expand": 100_000}]],
        # 100 shards of 1,000 items: the 1,000-shard scale is test_job_state_machine.py's (the
        # real job function takes ~85 ms a shard on in-process moto: 1,000 of them, 85 s)
        "sharding": {"min_items_per_shard": 1000, "max_items_per_shard": 1000, "max_shards": 100},
    }
    started = time.perf_counter()
    job = _run_job(definition, body, monkeypatch, timeout=240)
    print(f"100,000 items in 101 shards: {time.perf_counter() - started:.1f} s")
    assert job["status"] == "succeeded", job
    assert job["result"] == {"total": 100_000 * 100_001 // 2 + 1000, "shards": 101}
    assert job["progress"]["done_shards"] == job["progress"]["total_shards"] == 101
    assert len([c for c in script.calls if c["phase"] == "shard"]) == 102  # one retried after a 503
    assert job["_largest_state_payload"] < 16 * 1024  # Step Functions allows 256 KiB


def test_a_post_result_too_large_for_the_jobs_item_is_kept_in_the_bucket_and_linked(
    definition: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A DynamoDB item holds 400 KB: a 600 KB result used to break the job's item after post had
    run. Past 64 KiB the result goes to the jobs bucket and the job answers a link to it."""
    import requests  # moto answers the presigned link as S3 would (its mock covers requests)

    big = {"rows": ["x" * 1000] * 600}

    def answer(body: dict[str, Any]) -> tuple[int, Any]:
        if body["phase"] == "post":
            return 200, {"result": big}
        return 200, {"result": 1} if body["phase"] == "shard" else {}

    fetched: list[Any] = []

    def follow(job: dict[str, Any]) -> None:
        if job.get("result_url"):
            fetched.append(requests.get(job["result_url"], timeout=10).json())

    with running_processor(answer) as (url, _):
        body = {"processor": {"http": {"url": url}}, "data": [[1, 2]]}
        job = _run_job(definition, body, monkeypatch, timeout=30, then=follow)
    assert job["status"] == "succeeded", job
    assert job["result"] is None
    assert job["result_bytes"] == len(json.dumps(big, separators=(",", ":")).encode()) > 400_000
    assert job["result_url"].startswith("https://")
    assert fetched == [big]  # the link reads the result, as it was answered
