"""Commands to a running job (docs/jobs.md, section 8), through the API's handler, the job item on
moto, the stack's state machine run by moto's interpreter and a real HTTP processor that reports
its progress: each command is in the answer to one report only, in the order sent (the handler
here takes one request at a time: tests/e2e/test_job_commands.py sends reports truly at once to
`make run`); bad bodies, a job not running, one of no such job and a full list of pending
commands are refused with a 4xx naming why."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from functions.api import common
from shared.domain.job_commands import COMMAND_LEASE_MS, MAX_PENDING_COMMANDS
from shared.domain.times import now_ms
from shared.store.jobs import DynamoJobStore
from tests.integration import test_job_progress as progress
from tests.integration.test_job_progress import HOST, Api, report
from tests.support.eventually import until
from tests.support.processor import running_processor

pytestmark = pytest.mark.integration

REPORTS_AT_ONCE = 8

# the progress tests' fixtures: the stack's state machine on moto, the API's handler
definition, running, api_factory = progress.definition, progress.running, progress.api_factory


def one_shard_job(api: Api, url: str) -> dict[str, Any]:
    status, job = api("POST", "/v1/jobs", {
        "processor": {"http": {"url": url}},
        "data": [[1, 2]],
        "sharding": {"min_items_per_shard": 10, "max_items_per_shard": 10, "max_shards": 1},
    })  # fmt: skip
    assert status == 201, job
    return job


def test_commands_reach_the_next_report_once_each_in_order_however_many_reports_come_at_once(
    running: Any, api_factory: Any
) -> None:
    api: Api = api_factory()
    sent, go, done = threading.Event(), threading.Event(), threading.Event()
    answers: list[tuple[int, Any]] = []
    later: list[tuple[int, Any]] = []

    def process(body: dict[str, Any]) -> tuple[int, Any]:
        if body["phase"] != "shard":
            return 200, {}
        answers.append(report(api, body["progress"], 1))  # before any command: none
        sent.set()
        go.wait(20)
        with ThreadPoolExecutor(REPORTS_AT_ONCE) as pool:  # the shard's workers report side by side
            answers.extend(pool.map(lambda n: report(api, body["progress"], 2 + n), range(REPORTS_AT_ONCE)))
        go.clear()
        done.set()
        go.wait(20)
        later.append(report(api, body["progress"], 20))
        return 200, {"result": 1}

    with running_processor(process) as (url, _):
        job = one_shard_job(api, url)
        assert sent.wait(20)
        commands = [{"command": "rate", "args": {"per_second": n}} for n in (5, 6, 7)] + [{"command": "dump"}]
        kept = []
        for command in commands:
            status, body = api("POST", f"/v1/jobs/{job['id']}/commands", command)
            assert status == 202, body
            kept.append(body)
        assert [(k["command"], k["args"]) for k in kept] == [(c["command"], c.get("args", {})) for c in commands]
        go.set()
        assert done.wait(20)
        status, last = api("POST", f"/v1/jobs/{job['id']}/commands", {"command": "stop", "args": {"now": True}})
        assert status == 202, last
        go.set()
        until(lambda: api("GET", f"/v1/jobs/{job['id']}")[1]["status"] == "succeeded", 20)
    assert answers[0] == (202, {"cancelled": False, "commands": []})
    assert all(status == 202 for status, _ in answers + later)
    delivered = [command for _, body in answers[1:] for command in body["commands"]]
    assert delivered == kept  # each once, in the order sent, with its id and time
    assert sum(1 for _, body in answers[1:] if body["commands"]) == 1  # all four in one answer
    assert later == [(202, {"cancelled": False, "commands": [last]})]
    # the job has ended: a command reaches only a running job
    status, body = api("POST", f"/v1/jobs/{job['id']}/commands", {"command": "rate"})
    assert (status, body["error"]["code"]) == (409, "job_finished")


def test_a_job_holds_a_bounded_number_of_commands_no_report_has_taken(running: Any, api_factory: Any) -> None:
    api: Api = api_factory()
    reached, release = threading.Event(), threading.Event()
    took: list[tuple[int, Any]] = []

    def process(body: dict[str, Any]) -> tuple[int, Any]:
        if body["phase"] != "shard":
            return 200, {}
        reached.set()
        release.wait(20)
        took.append(report(api, body["progress"], 1))
        return 200, {"result": 1}

    with running_processor(process) as (url, _):
        job = one_shard_job(api, url)
        assert reached.wait(20)
        path = f"/v1/jobs/{job['id']}/commands"
        try:
            for n in range(MAX_PENDING_COMMANDS):
                assert api("POST", path, {"command": f"step-{n}"})[0] == 202
            status, body = api("POST", path, {"command": "one-too-many"})
            assert (status, body["error"]["code"]) == (409, "too_many_commands"), body
            for bad, field in [
                ({}, "command"),
                ({"command": ""}, "command"),
                ({"command": "has space"}, "command"),
                ({"command": "x" * 65}, "command"),
                ({"command": "rate", "args": [1]}, "args"),
                ({"command": "rate", "args": {"blob": "x" * 5000}}, "args"),
                ({"command": "rate", "extra": 1}, "extra"),
            ]:
                status, body = api("POST", path, bad)
                assert status == 400, (bad, body)
                assert field in [d["field"] for d in body["error"]["details"]], (bad, body)
            status, body = api("POST", "/v1/jobs/01NOSUCHJOB0000000000000000/commands", {"command": "rate"})
            assert (status, body["error"]["code"]) == (404, "job_not_found")
        finally:
            release.set()
        until(lambda: len(took) == 1, 20)
        until(lambda: api("GET", f"/v1/jobs/{job['id']}")[1]["status"] == "succeeded", 20)
    ((status, answer),) = took
    assert status == 202
    assert [c["command"] for c in answer["commands"]] == [f"step-{n}" for n in range(MAX_PENDING_COMMANDS)]


def blocked_shard(api: Api) -> tuple[Any, threading.Event, threading.Event, list[dict[str, Any]]]:
    """A one-shard job whose shard call waits for ``release``; its ``progress`` once ``reached``."""
    reached, release = threading.Event(), threading.Event()
    progress_of: list[dict[str, Any]] = []

    def process(body: dict[str, Any]) -> tuple[int, Any]:
        if body["phase"] != "shard":
            return 200, {}
        progress_of.append(body["progress"])
        reached.set()
        release.wait(20)
        return 200, {"result": 1}

    return process, reached, release, progress_of


def test_a_command_whose_answer_was_lost_is_offered_again_after_the_lease_and_never_once_acknowledged(
    running: Any, api_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    api: Api = api_factory()
    now = [now_ms()]
    monkeypatch.setattr(common.jobs(), "clock", lambda: now[0])  # the API's service: a clock the test moves
    process, reached, release, progress_of = blocked_shard(api)
    with running_processor(process) as (url, _):
        job = one_shard_job(api, url)
        try:
            assert reached.wait(20)
            (progress,) = progress_of
            status, kept = api("POST", f"/v1/jobs/{job['id']}/commands", {"command": "rate", "args": {"n": 1}})
            assert status == 202, kept
            # the route ran and offered it; its answer never reached the processor (dropped here)
            assert report(api, progress, 1) == (202, {"cancelled": False, "commands": [kept]})
            now[0] += COMMAND_LEASE_MS - 1
            assert report(api, progress, 2) == (202, {"cancelled": False, "commands": []})  # within the lease
            now[0] += 1
            assert report(api, progress, 3) == (202, {"cancelled": False, "commands": [kept]})  # offered again
            acknowledged = api(
                "POST",
                progress["url"].removeprefix(f"http://{HOST}"),
                {"done_items": 4, "acknowledged": [kept["id"]]},
                {"Authorization": f"Bearer {progress['token']}"},
            )
            assert acknowledged == (202, {"cancelled": False, "commands": []})
            now[0] += 10 * COMMAND_LEASE_MS
            assert report(api, progress, 5) == (202, {"cancelled": False, "commands": []})  # never again
            item = DynamoJobStore().item(job["id"])
            assert item is not None
            assert item.commands is None
        finally:
            release.set()
        until(lambda: api("GET", f"/v1/jobs/{job['id']}")[1]["status"] == "succeeded", 20)


def test_two_reports_that_read_the_same_commands_are_never_both_offered_one_within_its_lease(
    running: Any, api_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two reports at once, interleaved by hand: the second read the list before the first
    rewrote it; its write is refused, it reads again and finds the command offered."""
    api: Api = api_factory()
    process, reached, release, _ = blocked_shard(api)
    store = DynamoJobStore()
    with running_processor(process) as (url, _):
        job = one_shard_job(api, url)
        try:
            assert reached.wait(20)
            status, kept = api("POST", f"/v1/jobs/{job['id']}/commands", {"command": "dump"})
            assert status == 202, kept
            stale = store.item(job["id"])  # what the second report read, before the first wrote
            read = DynamoJobStore.item
            reads: list[str] = []

            def item(self: DynamoJobStore, job_id: str) -> Any:
                reads.append(job_id)
                return stale if len(reads) == 2 else read(self, job_id)

            monkeypatch.setattr(DynamoJobStore, "item", item)
            at = now_ms()
            first = store.take_commands(job["id"], [], at)
            second = store.take_commands(job["id"], [], at + 1)
            assert [c.id for c in first] == [kept["id"]]
            assert second == []
            assert len(reads) == 3  # the second report read again after its write was refused
            # after the lease, unacknowledged: one report (only) is offered it again
            later = [store.take_commands(job["id"], [], at + COMMAND_LEASE_MS + n) for n in range(3)]
            assert [[c.id for c in taken] for taken in later] == [[kept["id"]], [], []]
        finally:
            release.set()
        until(lambda: api("GET", f"/v1/jobs/{job['id']}")[1]["status"] == "succeeded", 20)
