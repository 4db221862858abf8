"""Progress inside a shard (docs/jobs.md, section 7), through the API's authorizer and handler,
the job item on moto, the stack's state machine run by moto's interpreter and a real HTTP
processor that reports while it works: counts move, never back; a cancel reaches a shard at its
next report; a token opens its own job's progress route only, and none once the job has ended."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.integration.conftest import jobs_on
from tests.integration.test_jobs_end_to_end import BUCKET, _job_step
from tests.support.events import FakeLambdaContext, api_event, gateway
from tests.support.eventually import until
from tests.support.processor import running_processor
from tests.support.stepfunctions import state_machine, sundial_definition

pytestmark = pytest.mark.integration

HOST = "sundial.test"
"""Where the tests' API requests say the API answers (their Host header): the progress URL's."""


@pytest.fixture(scope="module")
def definition() -> str:
    return sundial_definition()


Api = Callable[..., tuple[int, Any]]


@pytest.fixture
def api_factory() -> Callable[[], Api]:
    def build() -> Api:
        handler = gateway()
        lock = threading.Lock()  # the processor's thread and the test's share one handler

        def call(method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> tuple[int, Any]:
            event = api_event(method, path, body, {"Host": HOST, **(headers or {})})
            with lock:
                raw = handler(event, FakeLambdaContext())
            return raw["statusCode"], json.loads(raw["body"]) if raw.get("body") else None

        return call

    return build


def report(api: Api, progress: dict[str, str], done: int, path: str | None = None) -> tuple[int, Any]:
    assert progress["url"].startswith(f"http://{HOST}/v1/jobs/")
    target = path or progress["url"].removeprefix(f"http://{HOST}")
    return api("POST", target, {"done_items": done}, {"Authorization": f"Bearer {progress['token']}"})


@pytest.fixture
def running(definition: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Any]]:
    with state_machine(definition, _job_step) as runner, jobs_on(monkeypatch, runner.arn, BUCKET):
        yield runner
        # every execution ended before the account and the settings go: one still running would
        # build the job function's services after the next test's settings were cleared
        assert until(lambda: not _running_executions(runner), 30), _running_executions(runner)


def _running_executions(runner: Any) -> list[str]:
    executions = runner.client.list_executions(stateMachineArn=runner.arn)["executions"]
    return [e["name"] for e in executions if e["status"] == "RUNNING"]


def test_a_shard_reports_its_progress_and_the_job_counts_items(running: Any, api_factory: Any) -> None:
    api: Api = api_factory()
    answers: list[tuple[int, Any]] = []
    calls: list[dict[str, Any]] = []

    def process(body: dict[str, Any]) -> tuple[int, Any]:
        if body["phase"] != "shard":
            return 200, {}
        calls.append(body)
        if (body["level"], body["shard"]) == (0, 0):
            progress = body["progress"]
            answers.extend(report(api, progress, n) for n in (3, 7, 5))  # the 5 comes late: no step back
            seen = api("GET", f"/v1/jobs/{body['job_id']}")[1]["progress"]
            answers.append((0, (seen["done_items"], seen["total_items"])))
        return 200, {"result": len(body["items"])}

    with running_processor(process) as (url, _):
        status, job = api("POST", "/v1/jobs", {
            "processor": {"http": {"url": url}},
            "data": [list(range(20))],
            "sharding": {"min_items_per_shard": 10, "max_items_per_shard": 10, "max_shards": 2},
        })  # fmt: skip
        assert status == 201, job
        done = until(lambda: (j := api("GET", f"/v1/jobs/{job['id']}")[1])["status"] != "running" and j, 30)
    assert done["status"] == "succeeded", done
    assert answers[:3] == [(202, {"cancelled": False, "commands": []})] * 3
    assert answers[3] in ((0, (7, 20)), (0, (17, 20)))  # shard 0 at its highest report; shard 1: 0 or all 10
    assert done["progress"]["done_items"] == done["progress"]["total_items"] == 20
    tokens = {body["progress"]["token"] for body in calls}
    assert len(tokens) == 2  # one a shard
    # the job has ended: its tokens open nothing
    assert report(api, calls[0]["progress"], 9)[0] == 401


def test_a_token_opens_its_own_jobs_progress_only(running: Any, api_factory: Any) -> None:
    api: Api = api_factory()
    release = threading.Event()
    got: list[dict[str, Any]] = []

    def process(body: dict[str, Any]) -> tuple[int, Any]:
        if body["phase"] == "shard":
            got.append(body)
            if body["job_id"] == first["id"]:
                release.wait(20)  # the first job's shard works on while the test reports
            return 200, {"result": 1}
        return 200, {}

    first: dict[str, Any] = {"id": None}
    with running_processor(process) as (url, _):
        spec = {"processor": {"http": {"url": url}}, "data": [[1]]}
        second = api("POST", "/v1/jobs", spec)[1]
        until(lambda: api("GET", f"/v1/jobs/{second['id']}")[1]["status"] == "succeeded", 20)
        first.update(api("POST", "/v1/jobs", spec)[1])
        until(lambda: len(got) == 2, 20)
        try:
            mine = next(b["progress"] for b in got if b["job_id"] == first["id"])
            other = f"/v1/jobs/{second['id']}/progress"
            assert report(api, mine, 1, path=other)[0] == 401  # another job's route
            forged = {**mine, "token": mine["token"][:-1] + ("0" if mine["token"][-1] != "0" else "1")}
            assert report(api, forged, 1)[0] == 401  # a MAC that is not the job's
            status, body = api(
                "POST", mine["url"].removeprefix(f"http://{HOST}"), {"done_items": 1},
                {"Authorization": "Bearer not-a-key"},
            )  # fmt: skip
            assert status == 401, body
            # the token opens no other route, not even its own job's
            token = {"Authorization": f"Bearer {mine['token']}"}
            assert api("GET", f"/v1/jobs/{first['id']}", None, token)[0] == 401
            assert api("GET", "/v1/tasks", None, token)[0] == 401
            # a bad count is a 400 naming the field
            status, body = api("POST", mine["url"].removeprefix(f"http://{HOST}"), {"done_items": -1}, token)
            assert status == 400, body
            assert "done_items" in json.dumps(body)
        finally:
            release.set()


def test_a_cancel_reaches_a_running_shard_at_its_next_report(running: Any, api_factory: Any) -> None:
    api: Api = api_factory()
    cancelled = threading.Event()
    seen: list[tuple[int, Any]] = []

    def process(body: dict[str, Any]) -> tuple[int, Any]:
        if body["phase"] != "shard":
            return 200, {}
        seen.append(report(api, body["progress"], 1))
        cancelled.wait(20)
        seen.append(report(api, body["progress"], 2))
        return 200, {"result": 1}

    with running_processor(process) as (url, _):
        job = api("POST", "/v1/jobs", {
            "processor": {"http": {"url": url}},
            "data": [[1, 2]],
            "sharding": {"min_items_per_shard": 10, "max_items_per_shard": 10, "max_shards": 1},
        })[1]  # fmt: skip
        until(lambda: len(seen) == 1, 20)
        assert api("POST", f"/v1/jobs/{job['id']}/cancel")[0] == 202
        cancelled.set()
        until(lambda: len(seen) == 2, 20)
    assert seen == [(202, {"cancelled": False, "commands": []}), (202, {"cancelled": True, "commands": []})]


def test_a_notify_threshold_is_crossed_by_reported_items_before_the_shard_ends(running: Any, api_factory: Any) -> None:
    """One shard of 100 items, notify every 25 %: its reports of 30 and 60 items cross 25 and 50
    while it works (sent by the job function, which the API invokes asynchronously), its end
    crosses 75 and 100 (by shards: 1 of 1 ended); each threshold once."""
    api: Api = api_factory()
    during: list[list[int]] = []
    notified: list[dict[str, Any]] = []

    def process(body: dict[str, Any]) -> tuple[int, Any]:
        if body["phase"] == "notify":
            notified.append(body["progress"])
        if body["phase"] != "shard":
            return 200, {}
        for done in (30, 60, 60, 10):  # a repeat and a late lower count cross nothing
            assert report(api, body["progress"], done) == (202, {"cancelled": False, "commands": []})
        during.append([n["threshold"] for n in notified])
        return 200, {"result": 1}

    with running_processor(process) as (url, _):
        status, job = api("POST", "/v1/jobs", {
            "processor": {"http": {"url": url}},
            "data": [list(range(100))],
            "sharding": {"min_items_per_shard": 100, "max_items_per_shard": 100, "max_shards": 1},
            "notify_every_percent": 25,
        })  # fmt: skip
        assert status == 201, job
        done = until(lambda: (j := api("GET", f"/v1/jobs/{job['id']}")[1])["status"] != "running" and j, 30)
    assert done["status"] == "succeeded", done
    assert during == [[25, 50]]
    assert sorted(n["threshold"] for n in notified) == [25, 50, 75, 100]
    by_items = [n for n in notified if n["threshold"] in (25, 50)]
    assert all((n["done_items"], n["total_items"]) == (60, 100) or n["done_items"] == 30 for n in by_items)
