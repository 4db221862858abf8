"""A job over `make run` processed by a processor built with the receiver kit
(`sundial_receiver.jobs`, served by its WSGI adapter on loopback): 10,000 items, progress
reported every 100 items through the shard calls' progress URL and token, post given every
shard's result in order, a shard call replayed by the test answered with the same bytes without
running again, and a cancel seen by a running shard at its next report; a shard method that raises
``KeyError('user_id')``, over HTTP and as a Lambda function, fails the job saying
``KeyError: 'user_id'``."""

from __future__ import annotations

import io
import json
import secrets
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from sundial_receiver import JobContext, JobProcessorReceiver, MemoryStore, ShardingProcessor
from sundial_receiver.adapters.wsgi import wsgi_processor
from werkzeug.serving import make_server

from tests.e2e.conftest import ADMIN_KEY
from tests.e2e.test_receiver_kit import post  # a delivery replayed as sent
from tests.support.eventually import until

pytestmark = pytest.mark.e2e

ITEMS = 10_000
REPORT_EVERY = 100


class Indexer(ShardingProcessor):
    """Sums its shard's items, reporting every 100; a shard whose first item is -1 waits for
    the test to cancel the job, then stops at its next report; a shard of objects (users) answers
    each one's ``user_id`` (``KeyError('user_id')`` for a user without one)."""

    def __init__(self) -> None:
        self.shard_runs = 0
        self.reports = 0
        self.cancel_seen = threading.Event()
        self.holding = threading.Event()
        self.may_go_on = threading.Event()
        self.peek: Any = None
        """Reads the job's items done (set by the test): a report is counted at once."""
        self.peeked: list[tuple[int, int]] = []
        self.notified: list[int | None] = []

    def sharding_process(self, ctx: JobContext) -> Any:
        self.shard_runs += 1
        items = list(ctx.items or [])
        if any(isinstance(item, dict) for item in items):  # users: each one's user_id
            return [item["user_id"] for item in items]
        total = 0
        for done in range(REPORT_EVERY, len(items) + REPORT_EVERY, REPORT_EVERY):
            total += sum(items[done - REPORT_EVERY : done])
            if items[0] == -1:
                self.holding.set()
                self.may_go_on.wait(30)
            self.reports += 1
            if ctx.report_progress(min(done, len(items))):
                self.cancel_seen.set()
                return {"stopped_at": done}
            if done == 500 and self.peek is not None:
                self.peeked.append((done, self.peek(ctx.job_id)))
        return total

    def notify(self, ctx: JobContext) -> Any:
        self.notified.append(ctx.threshold)

    def post_process(self, ctx: JobContext) -> Any:
        return {"sums": ctx.results}


def processor_of(served: Served) -> dict[str, Any]:
    """The kit's processor as a job names it. Its calls wait up to 60 s (Sundial's most): a shard
    reports ten times through the runtime's API, which beside the other suites took more than the
    10 s default, and Sundial's retry of a step still running is answered 503 (the first call
    holds its Idempotency-Key), so the job failed."""
    return {"http": {"url": served.url, "timeout_seconds": 60}}


class Served:
    def __init__(self, secret: str) -> None:
        self.indexer = Indexer()
        self.calls: list[tuple[bytes, dict[str, str]]] = []
        app = wsgi_processor(JobProcessorReceiver(secret, self.indexer, MemoryStore()))

        def recording(environ: dict[str, Any], start_response: Any) -> Any:
            length = int(environ.get("CONTENT_LENGTH") or 0)
            body = environ["wsgi.input"].read(length)
            headers = {k[5:].replace("_", "-").title(): v for k, v in environ.items() if k.startswith("HTTP_")}
            headers["Content-Type"] = environ.get("CONTENT_TYPE", "")
            self.calls.append((body, headers))
            environ["wsgi.input"] = io.BytesIO(body)
            return app(environ, start_response)

        self.server = make_server("127.0.0.1", 0, recording, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}/process"
        threading.Thread(target=self.server.serve_forever, name="kit-processor", daemon=True).start()


@pytest.fixture
def tenant_processor(sundial) -> Iterator[tuple[Served, dict[str, str]]]:
    status, tenant = sundial.call(
        "POST", "/v1/tenants", {"id": f"jobs-{secrets.token_hex(3)}"}, {"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    assert status == 201, tenant
    served = Served(tenant["signing_secret"]["secret"])
    try:
        yield served, {"Authorization": f"Bearer {tenant['key']['secret']}"}
    finally:
        served.indexer.may_go_on.set()
        served.server.shutdown()


def test_a_kit_processor_works_a_10000_item_job_reporting_progress(sundial, tenant_processor) -> None:
    served, key = tenant_processor
    items = list(range(1, ITEMS + 1))
    spec = {
        "processor": processor_of(served),
        "data": [items],
        "sharding": {"min_items_per_shard": 1000, "max_items_per_shard": 1000, "max_shards": 20},
    }
    served.indexer.peek = lambda job_id: sundial.call("GET", f"/v1/jobs/{job_id}", None, key)[1]["progress"][
        "done_items"
    ]
    status, job = sundial.call("POST", "/v1/jobs", spec, key)
    assert status == 201, job
    done = until(
        lambda: (j := sundial.call("GET", f"/v1/jobs/{job['id']}", None, key)[1])["status"] != "running" and j, 90
    )
    assert done["status"] == "succeeded", done
    # post got every shard's result, in shard order
    expected = [sum(items[k : k + 1000]) for k in range(0, ITEMS, 1000)]
    assert done["result"] == {"sums": expected}
    assert (done["progress"]["done_items"], done["progress"]["total_items"]) == (ITEMS, ITEMS)
    assert served.indexer.reports == ITEMS // REPORT_EVERY  # a report every 100 items
    # each shard, 500 items in, finds the job counting at least its own 500: reports are counted
    assert len(served.indexer.peeked) == 10
    assert all(seen >= reported for reported, seen in served.indexer.peeked), served.indexer.peeked
    # a shard call replayed: the first answer's bytes, and the processor not run again
    shard_calls = [(b, h) for b, h in served.calls if b'"phase":"shard"' in b.replace(b" ", b"")]
    body, headers = shard_calls[0]
    runs = served.indexer.shard_runs
    first = post(served.url, body, headers)
    again = post(served.url, body, headers)
    assert first[0] == again[0] == 200
    assert first[1] == again[1]
    assert served.indexer.shard_runs == runs


def test_a_cancel_reaches_a_kit_processors_running_shard_at_its_next_report(sundial, tenant_processor) -> None:
    served, key = tenant_processor
    spec = {
        "processor": processor_of(served),
        "data": [[-1, *range(1, 300)]],
        "sharding": {"min_items_per_shard": 1000, "max_items_per_shard": 1000, "max_shards": 1},
    }
    status, job = sundial.call("POST", "/v1/jobs", spec, key)
    assert status == 201, job
    assert served.indexer.holding.wait(30)
    status, cancelled = sundial.call("POST", f"/v1/jobs/{job['id']}/cancel", None, key)
    assert status == 202, cancelled
    served.indexer.may_go_on.set()
    assert served.indexer.cancel_seen.wait(30)


def test_a_progress_token_opens_nothing_of_another_tenant_and_nothing_once_its_job_ended(
    sundial, tenant_processor
) -> None:
    served, key = tenant_processor
    spec = {"processor": processor_of(served), "data": [[1, 2, 3]]}
    status, job = sundial.call("POST", "/v1/jobs", spec, key)
    assert status == 201, job
    until(lambda: sundial.call("GET", f"/v1/jobs/{job['id']}", None, key)[1]["status"] == "succeeded", 30)
    body = next(b for b, _ in served.calls if b'"phase":"shard"' in b.replace(b" ", b""))
    progress = json.loads(body)["progress"]
    # another tenant's job, running: the token is refused on its route
    status, other = sundial.call(
        "POST", "/v1/tenants", {"id": f"other-{secrets.token_hex(3)}"}, {"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    assert status == 201, other
    other_key = {"Authorization": f"Bearer {other['key']['secret']}"}
    hold = {"processor": processor_of(served), "data": [[-1, 1]]}
    status, theirs = sundial.call("POST", "/v1/jobs", hold, other_key)
    assert status == 201, theirs
    token = {"Authorization": f"Bearer {progress['token']}"}
    status, answer = sundial.call("POST", f"/v1/jobs/{theirs['id']}/progress", {"done_items": 1}, token)
    assert status == 401, answer
    status, answer = sundial.call("GET", f"/v1/jobs/{theirs['id']}", None, token)
    assert status == 401, answer
    # its own job has ended: refused too
    status, answer = sundial.call("POST", f"/v1/jobs/{job['id']}/progress", {"done_items": 1}, token)
    assert status == 401, answer


def test_a_kit_lambda_processor_works_a_10000_item_job_reporting_progress(sundial) -> None:
    """The runtime runs tests/e2e/kit_lambda.py as its own function (LocalSettings.lambdas): the
    job's steps invoke it through the runtime's Lambda, and it reports every 100 items."""
    from local.stepfunctions import ACCOUNT, REGION
    from tests.e2e.kit_lambda import FUNCTION, MODULE_HANDLER
    from tests.support.runtime import KIT_LAMBDA

    assert KIT_LAMBDA == MODULE_HANDLER
    status, tenant = sundial.call(
        "POST", "/v1/tenants", {"id": f"lambda-{secrets.token_hex(3)}"}, {"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    assert status == 201, tenant
    key = {"Authorization": f"Bearer {tenant['key']['secret']}"}
    items = list(range(1, ITEMS + 1))
    spec = {
        "processor": {"lambda": {"function_arn": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{FUNCTION}"}},
        "data": [items],
        "sharding": {"min_items_per_shard": 1000, "max_items_per_shard": 1000, "max_shards": 20},
        "notify_every_percent": 50,
    }
    status, job = sundial.call("POST", "/v1/jobs", spec, key)
    assert status == 201, job
    done = until(
        lambda: (j := sundial.call("GET", f"/v1/jobs/{job['id']}", None, key)[1])["status"] != "running" and j, 90
    )
    assert done["status"] == "succeeded", done
    assert done["result"] == {"sums": [sum(items[k : k + 1000]) for k in range(0, ITEMS, 1000)]}
    assert (done["progress"]["done_items"], done["progress"]["total_items"]) == (ITEMS, ITEMS)
    assert done.get("notify_failure") is None


def test_notify_thresholds_are_crossed_by_the_items_a_shard_reports(sundial, tenant_processor) -> None:
    """One shard of 1,000 items, notify every 25 %: its reports (every 100 items) cross each
    threshold before the shard ends, so every notify carries the items done."""
    served, key = tenant_processor
    spec = {
        "processor": processor_of(served),
        "data": [list(range(1, 1001))],
        "sharding": {"min_items_per_shard": 1000, "max_items_per_shard": 1000, "max_shards": 1},
        "notify_every_percent": 25,
    }
    status, job = sundial.call("POST", "/v1/jobs", spec, key)
    assert status == 201, job
    until(lambda: sundial.call("GET", f"/v1/jobs/{job['id']}", None, key)[1]["status"] == "succeeded", 30)
    until(lambda: len(served.indexer.notified) == 4, 10)  # sent asynchronously: may trail the job's end
    assert sorted(served.indexer.notified) == [25, 50, 75, 100]
    notifies = [json.loads(b)["progress"] for b, _ in served.calls if b'"phase":"notify"' in b.replace(b" ", b"")]
    assert sorted((n["threshold"], n["done_items"], n["total_items"]) for n in notifies) == [
        (25, 300, 1000), (50, 500, 1000), (75, 800, 1000), (100, 1000, 1000),
    ]  # fmt: skip


USERS = [[{"user_id": "u-1"}, {"name": "no id"}]]
ONE_SHARD = {"min_items_per_shard": 10, "max_items_per_shard": 10, "max_shards": 1}
SAID = "KeyError: 'user_id'"


def test_a_kit_processor_whose_shard_raises_fails_the_job_saying_why(sundial, tenant_processor) -> None:
    """The kit answers 500 with the exception's type and message (never its traceback or the
    call's token), Sundial retries the shard as for any 5xx, then fails the job with that error."""
    served, key = tenant_processor
    spec = {"processor": processor_of(served), "data": USERS, "sharding": ONE_SHARD}
    status, job = sundial.call("POST", "/v1/jobs", spec, key)
    assert status == 201, job
    failed = until(
        lambda: (j := sundial.call("GET", f"/v1/jobs/{job['id']}", None, key)[1])["status"] != "running" and j, 60
    )
    assert failed["status"] == "failed", failed
    assert failed["error"] == f"shard 0 of level 0 failed on attempt 3 of 3: {SAID} (the processor answered HTTP 500)"
    assert failed["failure"]["error"] == {"type": "KeyError", "message": "'user_id'"}
    assert failed["failure"]["status"] == 500
    assert served.indexer.shard_runs == 3  # each retry ran the method again: nothing was kept
    token = json.loads(next(b for b, _ in served.calls if b'"phase":"shard"' in b.replace(b" ", b"")))["progress"]
    assert token["token"] not in json.dumps(failed)
    assert "Traceback" not in json.dumps(failed)


def test_a_kit_lambda_processor_whose_shard_raises_fails_the_job_saying_why(sundial) -> None:
    """tests/e2e/kit_lambda.py run by the runtime as its own function: the kit raises its failure's
    answer as the function error, which Sundial retries, then reads into the job's error."""
    from local.stepfunctions import ACCOUNT, REGION
    from tests.e2e.kit_lambda import FUNCTION

    status, tenant = sundial.call(
        "POST", "/v1/tenants", {"id": f"lambda-{secrets.token_hex(3)}"}, {"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    assert status == 201, tenant
    key = {"Authorization": f"Bearer {tenant['key']['secret']}"}
    spec = {
        "processor": {"lambda": {"function_arn": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{FUNCTION}"}},
        "data": USERS,
        "sharding": ONE_SHARD,
    }
    status, job = sundial.call("POST", "/v1/jobs", spec, key)
    assert status == 201, job
    failed = until(
        lambda: (j := sundial.call("GET", f"/v1/jobs/{job['id']}", None, key)[1])["status"] != "running" and j, 60
    )
    assert failed["status"] == "failed", failed
    assert failed["error"] == f"shard 0 of level 0 failed on attempt 3 of 3: {SAID} (the processor function failed)"
    assert failed["failure"]["error"] == {"type": "KeyError", "message": "'user_id'"}
    assert "stackTrace" not in (failed["failure"]["answer"] or "")  # the kit's answer, not Lambda's trace around it
