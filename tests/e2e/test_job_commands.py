"""Commands to a running job over `make run` (docs/jobs.md, section 8): a processor built with the
receiver kit (served by its WSGI adapter on loopback, threaded) whose shard, once the test has
sent its commands through the CLI and the API, reports its progress from eight threads at once;
``ctx.commands()`` hands out every command once, in the order sent, whichever report's answer
carried them. A job that has ended refuses a command (409 ``job_finished``, the CLI failing)."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sundial_receiver import JobCommand, JobContext, JobProcessorReceiver, MemoryStore, ShardingProcessor
from sundial_receiver.adapters.wsgi import wsgi_processor
from werkzeug.serving import make_server

from tests.e2e.conftest import ADMIN_KEY
from tests.support.cli import Sundial
from tests.support.eventually import until

pytestmark = pytest.mark.e2e

WORKERS = 8


class Listening(ShardingProcessor):
    """One shard: reports once, waits for the test's commands, then reports from WORKERS threads
    at once and keeps what ``ctx.commands()`` hands out, then one report more."""

    def __init__(self) -> None:
        self.reported, self.sent = threading.Event(), threading.Event()
        self.heard: list[JobCommand] = []
        self.answers: list[bool] = []

    def sharding_process(self, ctx: JobContext) -> Any:
        self.answers.append(ctx.report_progress(0))
        self.heard += ctx.commands()  # none sent yet
        self.reported.set()
        self.sent.wait(30)
        with ThreadPoolExecutor(WORKERS) as pool:
            self.answers += pool.map(ctx.report_progress, range(1, WORKERS + 1))
        self.heard += ctx.commands()
        self.heard += ctx.commands()  # each once: nothing more
        return len(ctx.items or [])

    def post_process(self, ctx: JobContext) -> Any:
        return {"shards": ctx.results}


@pytest.fixture
def served(sundial) -> Iterator[tuple[Listening, str, Sundial]]:
    status, tenant = sundial.call(
        "POST", "/v1/tenants", {"id": f"commands-{secrets.token_hex(3)}"}, {"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    assert status == 201, tenant
    listening = Listening()
    app = wsgi_processor(JobProcessorReceiver(tenant["signing_secret"]["secret"], listening, MemoryStore()))
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, name="commands-processor", daemon=True).start()
    try:
        yield (
            listening,
            f"http://127.0.0.1:{server.server_port}/process",
            Sundial(sundial.base, tenant["key"]["secret"]),
        )
    finally:
        listening.sent.set()
        server.shutdown()


def test_each_command_reaches_the_processor_once_in_order_through_reports_made_at_once(served) -> None:
    listening, url, cli = served
    job = cli.json("jobs", "create", "--file", "-", stdin=_spec(url))
    assert listening.reported.wait(60), "the shard never reported"
    sent = [
        cli.json("jobs", "command", job["id"], "rate", "--args", '{"per_second": 5}'),
        cli.json("jobs", "command", job["id"], "skip", "--args", '{"item": 2}'),
        cli.json("jobs", "command", job["id"], "dump"),
    ]
    assert [(c["command"], c["args"]) for c in sent] == [
        ("rate", {"per_second": 5}),
        ("skip", {"item": 2}),
        ("dump", {}),
    ]
    listening.sent.set()
    done = until(lambda: (j := cli.json("jobs", "get", job["id"]))["status"] != "running" and j, 60)
    assert done["status"] == "succeeded", done
    assert listening.answers == [False] * (WORKERS + 1)  # never cancelled
    heard = [(c.id, c.command, c.args, c.sent_at) for c in listening.heard]
    assert heard == [(c["id"], c["command"], c["args"], c["sent_at"]) for c in sent]  # once each, in order
    refused = cli.fails(1, "jobs", "command", job["id"], "rate")
    assert "job_finished" in refused.stdout + refused.stderr


def _spec(url: str) -> str:
    return (
        '{"processor": {"http": {"url": "' + url + '", "timeout_seconds": 60}}, "data": [[1, 2, 3]], '
        '"sharding": {"min_items_per_shard": 10, "max_items_per_shard": 10, "max_shards": 1}}'
    )
