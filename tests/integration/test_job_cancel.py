"""Cancelling a job (docs/jobs.md, "Cancelling") with nothing faked but AWS: the API handler, the
job item and objects on moto, the Sundial stack's state machine run by moto's interpreter, the
real job function for every Lambda task, and a real (slowed) HTTP processor."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from shared.domain.jobs import NewJobRecord
from shared.domain.sharding import Sharding
from tests.integration.conftest import jobs_on
from tests.support.events import FakeLambdaContext, api_event, gateway
from tests.support.eventually import until
from tests.support.processor import running_processor
from tests.support.stepfunctions import StateMachineRunner, state_machine, sundial_definition

pytestmark = pytest.mark.integration
BUCKET = "sundial-jobs-cancel"
SHARD_S = 0.2
"""How long the processor takes a shard: the job is still running when the test cancels it."""


@pytest.fixture(scope="module")
def definition() -> str:
    return sundial_definition()


@dataclass
class SlowProcessor:
    """pre keeps the data, a shard takes ``SHARD_S`` and answers its item count, post the sum;
    every call is recorded with the time it arrived."""

    calls: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, body: dict[str, Any]) -> tuple[int, Any]:
        with self.lock:
            self.calls.append((time.monotonic(), body))
        if body["phase"] == "shard":
            time.sleep(SHARD_S)  # kept: a slow processor is what these tests are about
            return 200, {"result": len(body["items"])}
        if body["phase"] == "post":
            return 200, {"result": sum(body["results"])}
        return 200, {}

    def phases(self) -> list[str]:
        with self.lock:
            return [body["phase"] for _, body in self.calls]

    def shard_starts(self) -> list[float]:
        with self.lock:
            return [at for at, body in self.calls if body["phase"] == "shard"]


@dataclass
class Steps:
    """The job function as Step Functions invokes it, each shard step's start and end recorded."""

    spans: list[tuple[str, list[float]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, event: dict[str, Any]) -> Any:
        from functions.jobs.handler import handler

        span = [time.monotonic(), float("inf")]
        with self.lock:
            self.spans.append((event["step"], span))
        try:
            return handler(event, FakeLambdaContext())
        finally:
            span[1] = time.monotonic()

    def in_flight_at(self, moment: float, step: str | None = "shard") -> int:
        """How many steps (shard steps, or any with ``step=None``) were under way at ``moment``."""
        with self.lock:
            return sum(1 for kind, (start, end) in self.spans if step in (None, kind) and start <= moment < end)

    def idle(self) -> bool:
        return self.in_flight_at(time.monotonic(), None) == 0


Api = Callable[..., tuple[int, Any]]


@dataclass
class World:
    api: Api
    runner: StateMachineRunner
    steps: Steps
    processor: SlowProcessor
    url: str


@pytest.fixture
def world(definition: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    processor, steps = SlowProcessor(), Steps()
    with (
        running_processor(processor) as (url, _),
        state_machine(definition, steps) as runner,
        jobs_on(monkeypatch, runner.arn, BUCKET),
    ):
        api = gateway()

        def call(method: str, path: str, body: Any = None) -> tuple[int, Any]:
            raw = api(api_event(method, path, body), FakeLambdaContext())
            return raw["statusCode"], json.loads(raw["body"]) if raw.get("body") else None

        try:
            yield World(call, runner, steps, processor, url)
        finally:
            _until(steps.idle, 30, "the steps under way finished")  # before the mock account goes


def _start(world: World, items: int, per_shard: int) -> dict[str, Any]:
    body = {
        "processor": {"http": {"url": world.url}},
        "data": [list(range(items))],
        "sharding": {"min_items_per_shard": per_shard, "max_items_per_shard": per_shard, "max_shards": 100},
        "notify_every_percent": 10,
    }
    status, job = world.api("POST", "/v1/jobs", body)
    assert status == 201, job
    return job


def _until(what: Callable[[], Any], timeout: float, message: str) -> Any:
    value = until(what, timeout, poll=0.1)
    if not value:
        raise AssertionError(f"{message} within {timeout} s")
    return value


def _read(world: World, job_id: str) -> dict[str, Any]:
    """The job as the API answers it (a failed read says its status and body: once, under load,
    a read during the run answered something that was not a job)."""
    status, job = world.api("GET", f"/v1/jobs/{job_id}")
    assert status == 200, (status, job)
    return dict(job)


def _execution(world: World, job_id: str) -> dict[str, Any]:
    return world.runner.client.describe_execution(
        executionArn=world.runner.arn.replace(":stateMachine:", ":execution:") + f":{job_id}"
    )


def test_a_job_cancelled_mid_way_stops_no_shard_starts_after_and_post_is_not_called(world: World) -> None:
    job = _start(world, 1000, 10)  # 100 shards
    job_id = job["id"]
    _until(lambda: _read(world, job_id)["progress"]["done_shards"] >= 3, 60, "3 shards done")

    status, cancelled = world.api("POST", f"/v1/jobs/{job_id}/cancel")
    answered = time.monotonic()
    assert status == 202, cancelled
    assert cancelled["status"] == "cancelled"
    assert cancelled["finished_at"] is not None
    in_flight = world.steps.in_flight_at(answered)

    # moto's interpreter honours StopExecution: the execution ends, no further state starts. It
    # reports an execution stopped inside an inline Map as FAILED (States.Runtime, a quirk of its
    # Map abort) where AWS says ABORTED; the job's status is the job item's either way.
    execution = _until(
        lambda: (e := _execution(world, job_id))["status"] != "RUNNING" and e, 30, "the execution stopped"
    )
    assert execution["status"] in ("ABORTED", "FAILED")
    _until(world.steps.idle, 30, "the steps under way finished")

    status, job = world.api("GET", f"/v1/jobs/{job_id}")
    assert status == 200
    assert job["status"] == "cancelled"  # no step that finished after the cancel overwrote it
    assert job["progress"]["total_shards"] == 100
    assert 3 <= job["progress"]["done_shards"] < 100
    assert "post" not in world.processor.phases()
    late = [at for at in world.processor.shard_starts() if at > answered]
    assert len(late) <= in_flight, (late, in_flight)  # only shard steps already under way


def test_a_shard_post_or_fail_step_after_the_cancel_calls_nothing_and_keeps_cancelled(world: World) -> None:
    from functions.jobs.handler import handler

    job = _start(world, 1000, 10)
    job_id = job["id"]
    _until(lambda: "shard" in world.processor.phases(), 60, "a shard call")
    assert world.api("POST", f"/v1/jobs/{job_id}/cancel")[0] == 202
    _until(lambda: _execution(world, job_id)["status"] != "RUNNING", 30, "the execution stopped")
    _until(world.steps.idle, 30, "the steps under way finished")
    calls = len(world.processor.phases())

    # what a step invoked after the cancel does (on AWS: one whose invocation was already queued)
    shard = handler(
        {"step": "shard", "job_id": job_id, "level": 0, "shard": 99, "shard_count": 100}, FakeLambdaContext()
    )
    assert shard["skipped"] is True
    assert handler({"step": "post", "job_id": job_id}, FakeLambdaContext())["status"] == "cancelled"
    handler({"step": "fail", "job_id": job_id, "error": "States.TaskFailed"}, FakeLambdaContext())

    assert len(world.processor.phases()) == calls  # the processor heard nothing more
    status, job = world.api("GET", f"/v1/jobs/{job_id}")
    assert (status, job["status"], job["error"], job["result"]) == (200, "cancelled", None, None)


def test_cancelling_answers_404_for_no_such_job_and_another_tenants_and_409_once_it_ended(world: World) -> None:
    from shared.store.jobs import DynamoJobStore

    status, body = world.api("POST", "/v1/jobs/no-such-job/cancel")
    assert (status, body["error"]["code"]) == (404, "job_not_found")

    store = DynamoJobStore()
    store.create(NewJobRecord("theirs", "another-tenant", None, {"http": {"url": world.url}}, Sharding(), None, 1))
    status, body = world.api("POST", "/v1/jobs/theirs/cancel")
    assert (status, body["error"]["code"]) == (404, "job_not_found")
    item = store.item("theirs")
    assert item is not None
    assert item.status == "running"  # untouched

    job = _start(world, 4, 2)  # 2 quick shards
    done = _until(
        lambda: (j := world.api("GET", f"/v1/jobs/{job['id']}")[1])["status"] != "running" and j, 30, "the job ended"
    )
    assert done["status"] == "succeeded"
    status, body = world.api("POST", f"/v1/jobs/{job['id']}/cancel")
    assert (status, body["error"]["code"]) == (409, "job_finished")
    assert world.api("GET", f"/v1/jobs/{job['id']}")[1]["status"] == "succeeded"


def test_cancelling_a_cancelled_job_again_is_harmless(world: World) -> None:
    job = _start(world, 1000, 10)
    first = world.api("POST", f"/v1/jobs/{job['id']}/cancel")
    second = world.api("POST", f"/v1/jobs/{job['id']}/cancel")
    assert first[0] == second[0] == 202
    assert first[1] == second[1]  # the same job: cancelled once, at the first cancel's time
    _until(lambda: _execution(world, job["id"])["status"] != "RUNNING", 30, "the execution stopped")
    _until(world.steps.idle, 30, "the steps under way finished")


def test_a_job_whose_post_has_begun_cannot_be_cancelled(world: World) -> None:
    from shared.store.jobs import DynamoJobStore

    store = DynamoJobStore()
    store.create(NewJobRecord("posting", "default", None, {"http": {"url": world.url}}, Sharding(), None, 1))
    assert store.claim_post("posting")  # the post step has begun
    status, body = world.api("POST", "/v1/jobs/posting/cancel")  # the default tenant's job
    assert (status, body["error"]["code"]) == (409, "job_finished"), body
    assert "post" in body["error"]["message"]
    item = store.item("posting")
    assert item is not None
    assert item.status == "running"
