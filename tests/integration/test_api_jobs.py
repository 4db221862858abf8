"""POST/GET /v1/jobs through the API handler (the execution itself: test_job_state_machine.py)."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from shared.adapters.executions import SfnStarter
from tests.integration.conftest import use_settings
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration

BUCKET = "sundial-jobs-api"
PROCESSOR = {"http": {"url": "https://example.com/import"}}


@pytest.fixture
def started(api: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    use_settings(monkeypatch, jobs_bucket=BUCKET)
    executions: list[str] = []
    monkeypatch.setattr(SfnStarter, "start", lambda self, job_id: executions.append(job_id))
    return executions


def test_a_job_is_recorded_its_data_kept_and_its_execution_started(api: Any, started: list[str]) -> None:
    body = {
        "name": "import-users",
        "processor": PROCESSOR,
        "data": [["user-1", "user-2", {"id": 3}], ["ref-1", "ref-2"]],
        "sharding": {"min_items_per_shard": 1, "max_items_per_shard": 100, "max_shards": 20},
        "notify_every_percent": 25,
    }
    answer = api("POST", "/v1/jobs", body)
    assert answer.status == 201, answer.body
    job = answer.body
    assert started == [job["id"]]
    assert (job["name"], job["status"], job["result"], job["error"], job["finished_at"]) == (
        "import-users",
        "running",
        None,
        None,
        None,
    )
    assert job["progress"] == {"done_shards": 0, "total_shards": None, "percent": 0, "level": None}
    stored = boto3.client("s3").get_object(Bucket=BUCKET, Key=f"jobs/{job['id']}/levels.json")["Body"].read()
    assert stored == b'[["user-1","user-2",{"id":3}],["ref-1","ref-2"]]'
    assert api("GET", f"/v1/jobs/{job['id']}").body == job

    def listed() -> None:
        assert [j["id"] for j in api("GET", "/v1/jobs").body["items"]] == [job["id"]]

    eventually(listed)


def test_jobs_list_newest_first_in_pages(api: Any, started: list[str]) -> None:
    ids = [api("POST", "/v1/jobs", {"processor": PROCESSOR, "data": [[i]]}).body["id"] for i in range(3)]

    def paged() -> None:
        first = api("GET", "/v1/jobs?limit=2").body
        second = api("GET", f"/v1/jobs?limit=2&cursor={first['next_cursor']}").body
        assert [j["id"] for j in first["items"] + second["items"]] == ids[::-1]
        assert second["next_cursor"] is None

    eventually(paged)


def test_a_jobs_page_stops_at_page_bytes_and_goes_on_from_there(api: Any, started: list[str], monkeypatch) -> None:
    """A job's result (post's answer) is kept on its item, up to 400 KB: a page of 100 can pass
    Lambda's 6 MB answer, so a page is bounded by bytes too (page_bytes lowered here)."""
    from shared.store.jobs import DynamoJobStore

    use_settings(monkeypatch, page_bytes=100_000)
    ids = [api("POST", "/v1/jobs", {"processor": PROCESSOR, "data": [[i]]}).body["id"] for i in range(5)]
    for job_id in ids:
        assert DynamoJobStore().succeeded(job_id, {"rows": "x" * 40_000})

    def paged_by_bytes() -> None:
        pages, cursor = [], None
        while True:
            page = api("GET", "/v1/jobs?limit=100" + (f"&cursor={cursor}" if cursor else "")).body
            pages.append([job["id"] for job in page["items"]])
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert pages == [ids[4:2:-1], ids[2:0:-1], ids[:1]]

    eventually(paged_by_bytes)


def test_jobs_are_listed_by_status_through_the_index(api: Any, started: list[str], monkeypatch) -> None:
    """``GET /v1/jobs?status=failed`` (what the console's home page asks): the failed jobs only,
    newest first, full pages through the status index (docs/status-index.md) whatever the read
    budget of the listing index, which the other statuses still read (a page may come back short);
    an unknown status is a 400."""
    from shared.domain.jobs import JobStep, StepFailure
    from shared.store import jobs as job_store

    ids = [api("POST", "/v1/jobs", {"processor": PROCESSOR, "data": [[i]]}).body["id"] for i in range(7)]
    store = job_store.DynamoJobStore()
    failed = [ids[1], ids[3], ids[6]]
    for job_id in failed:
        assert store.failed(job_id, "the pre step failed", StepFailure(JobStep.PRE, "the processor answered HTTP 500"))
    assert store.succeeded(ids[2], 1)
    # a window of 3 (limit + 1) and one window a request on the listing index
    monkeypatch.setattr(job_store, "FILTERED_WINDOW", 2)
    monkeypatch.setattr(job_store, "LIST_READ_BUDGET", 3)

    def by_status() -> None:
        pages, cursor = [], None
        while True:
            page = api("GET", "/v1/jobs?status=failed&limit=2" + (f"&cursor={cursor}" if cursor else "")).body
            pages.append([job["id"] for job in page["items"]])
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert pages == [failed[:0:-1], failed[:1]]
        running = api("GET", "/v1/jobs?status=running&limit=50").body["items"]
        assert [job["id"] for job in running] == [ids[5], ids[4], ids[0]]
        succeeded = api("GET", "/v1/jobs?status=succeeded&limit=2").body
        assert (succeeded["items"], succeeded["next_cursor"] is not None) == ([], True)  # ids 6-4: none succeeded
        rest = api("GET", f"/v1/jobs?status=succeeded&limit=2&cursor={succeeded['next_cursor']}").body
        assert [job["id"] for job in rest["items"]] == [ids[2]]

    eventually(by_status)
    answer = api("GET", f"/v1/jobs/{ids[6]}").body
    assert (answer["status"], answer["error"], answer["failure"]["step"]) == ("failed", "the pre step failed", "pre")
    refused = api("GET", "/v1/jobs?status=broken")
    assert refused.status == 400
    assert [d["field"] for d in refused.body["error"]["details"]] == ["status"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"processor": {"sqs": {"queue_url": "https://sqs.us-east-1.amazonaws.com/123456789012/q"}}}, "processor"),
        ({"processor": PROCESSOR, "sharding": {"min_items_per_shard": 5, "max_items_per_shard": 4}},
         "sharding.min_items_per_shard"),
        ({"processor": PROCESSOR, "sharding": {"max_shards": 0}}, "sharding.max_shards"),
        ({"processor": PROCESSOR, "data": [list(range(50))], "sharding": {"max_items_per_shard": 2, "max_shards": 3}},
         "sharding.max_shards"),
        ({"processor": PROCESSOR, "notify_every_percent": 0}, "notify_every_percent"),
        ({"processor": PROCESSOR, "data": ["not a level"]}, "data[0]"),
        ({"processor": PROCESSOR, "retry": {"max_attempts": 2}}, "retry"),
        ({"data": [[1]]}, "processor"),
        # bodies the OpenAPI fuzzer made against the document's JobIn (a string or a boolean where it says
        # integer): pydantic's lax mode read "7" as 7 and true as 1, and the job started (201)
        (
            {
                "processor": {"lambda": {"function_arn": "arn:awsaaa:lambda:0:000000100060:function:3"}},
                "sharding": {"min_items_per_shard": "7"},
                "data": [],
                "name": "0",
                "notify_every_percent": 1,
            },
            "sharding.min_items_per_shard",
        ),
        ({"notify_every_percent": True, "processor": {"http": {"method": "GET", "url": "http://0"}}, "name": "0"},
         "notify_every_percent"),
        ({"processor": PROCESSOR, "sharding": {"max_shards": True}}, "sharding.max_shards"),
        ({"processor": {"http": {"url": "https://example.com/import\n"}}}, "processor.http.url"),
    ],
)  # fmt: skip
def test_bad_jobs_are_refused_naming_the_field(api: Any, started: list[str], body: dict[str, Any], field: str) -> None:
    answer = api("POST", "/v1/jobs", body)
    assert answer.status == 400, answer.body
    assert answer.body["error"]["code"] == "validation_error"
    assert field in [d["field"] for d in answer.body["error"]["details"]], answer.body
    assert started == []


def test_an_unknown_job_is_404(api: Any, started: list[str]) -> None:
    answer = api("GET", "/v1/jobs/01JNOSUCHJOB0000000000000")
    assert answer.status == 404
    assert answer.body["error"]["code"] == "job_not_found"


def test_a_failure_that_says_what_the_processor_raised_is_answered_with_it(api: Any, started: list[str]) -> None:
    """The error a processor reported (the receiver kit's ``{"error": {"type", "message"}}``) is in
    the job's ``error`` and its ``failure``; a job item holding something else there (written by
    hand, or by an older Sundial) is answered all the same, never a 500, the error bounded or
    left out."""
    from shared.domain.jobs import JobStep, ReportedError, StepFailure
    from shared.store import jobs as job_store

    store = job_store.DynamoJobStore()
    reported, odd, none = (
        api("POST", "/v1/jobs", {"processor": PROCESSOR, "data": [[i]]}).body["id"] for i in range(3)
    )
    failure = StepFailure(
        JobStep.SHARD, "the processor answered HTTP 500", level=0, shard=1, attempt=3, status=500,
        answer='{"error":{"type":"KeyError","message":"\'user_id\'"}}', retryable=True,
        error=ReportedError("KeyError", "'user_id'"),
    )  # fmt: skip
    assert store.failed(reported, failure.sentence(), failure)
    answer = api("GET", f"/v1/jobs/{reported}")
    assert answer.status == 200, answer.body
    assert answer.body["error"] == (
        "shard 1 of level 0 failed on attempt 3 of 3: KeyError: 'user_id' (the processor answered HTTP 500)"
    )
    assert answer.body["failure"]["error"] == {"type": "KeyError", "message": "'user_id'"}
    assert answer.body["failure"]["reason"] == "the processor answered HTTP 500"

    for job_id, error in ((odd, {"type": "E" * 5000, "message": "m\n" * 5000}), (none, {"type": 3, "message": {}})):
        assert store.failed(job_id, "the pre step failed", StepFailure(JobStep.PRE, "the processor answered HTTP 500"))
        item = store.item(job_id)
        assert item is not None
        item.update(actions=[job_store.JobItem.failure.set(json.dumps({"step": "pre", "reason": "r", "error": error}))])
    answer = api("GET", f"/v1/jobs/{odd}")
    assert answer.status == 200, answer.body
    assert (len(answer.body["failure"]["error"]["type"]), len(answer.body["failure"]["error"]["message"])) == (100, 500)
    answer = api("GET", f"/v1/jobs/{none}")
    assert answer.status == 200, answer.body
    assert "error" not in answer.body["failure"]
