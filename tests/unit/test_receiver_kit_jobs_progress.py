"""A shard's progress reports (receiver-kit/sundial_receiver/jobs.py, ``JobContext.report_progress``)
against a real HTTP server on 127.0.0.1: the POST and its bearer token, ``202 {"cancelled": false}``,
``202 {"cancelled": true}`` and ``401`` turning ``cancelled`` on for good, a refused connection, a
redirect and an unexpected status logged and never raised, and a call without a progress URL a
no-op logged once."""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from sundial_receiver import JobContext, JobProcessorReceiver, ShardingProcessor

from tests.unit.test_receiver_kit_jobs import SECRET, SHARD, sundial_request

pytestmark = pytest.mark.unit


class ProgressServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), ProgressHandler)
        self.answers: list[tuple[int, bytes, dict[str, str]]] = []
        self.received: list[tuple[str, dict[str, str], Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1/jobs/01JOB/progress"


class ProgressHandler(BaseHTTPRequestHandler):
    server: ProgressServer

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length))
        self.server.received.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        status, data, headers = self.server.answers.pop(0) if self.server.answers else (202, b"{}", {})
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[ProgressServer]:
    running = ProgressServer()
    thread = threading.Thread(target=running.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield running
    running.shutdown()
    running.server_close()
    thread.join(5)


def shard(url: str | None, token: str = "tok-1") -> JobContext:
    content = dict(SHARD)
    if url is not None:
        content["progress"] = {"url": url, "token": token}
    return JobContext.from_dict(content, progress_timeout=2.0)


def test_a_report_posts_the_done_items_with_the_bearer_token(server):
    server.answers.append((202, b'{"cancelled": false}', {}))
    ctx = shard(server.url)
    assert ctx.report_progress(40) is False
    assert ctx.cancelled is False
    path, headers, body = server.received[0]
    assert (path, body) == ("/v1/jobs/01JOB/progress", {"done_items": 40})
    assert headers["authorization"] == "Bearer tok-1"
    assert headers["content-type"] == "application/json"


def test_202_cancelled_true_cancels_from_then_on(server):
    server.answers += [(202, b'{"cancelled": true}', {}), (202, b'{"cancelled": false}', {})]
    ctx = shard(server.url)
    assert ctx.report_progress(1) is True
    assert ctx.cancelled
    assert ctx.report_progress(2) is True  # a later false does not undo it
    assert ctx.cancelled
    assert [body["done_items"] for _, _, body in server.received] == [1, 2]


def test_401_means_the_job_has_ended_cancelled(server, caplog):
    server.answers.append((401, b'{"error": "unauthorized"}', {}))
    ctx = shard(server.url)
    with caplog.at_level(logging.INFO, logger="sundial_receiver.jobs"):
        assert ctx.report_progress(5) is True
    assert ctx.cancelled
    assert "the job has ended" in caplog.text


def test_a_refused_connection_is_logged_never_raised(caplog):
    with socket.socket() as unused:  # a port with nobody listening
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    ctx = shard(f"http://127.0.0.1:{port}/progress")
    with caplog.at_level(logging.WARNING, logger="sundial_receiver.jobs"):
        assert ctx.report_progress(3) is False
    assert not ctx.cancelled
    assert "progress not reported (3 items)" in caplog.text
    assert "[job 01JOB shard 0/1]" in caplog.text


def test_other_answers_are_logged_and_a_redirect_not_followed(server, caplog):
    server.answers += [
        (500, b"down", {}),
        (307, b"", {"Location": server.url.replace("/progress", "/elsewhere")}),
        (202, b"not json", {}),
    ]
    ctx = shard(server.url)
    with caplog.at_level(logging.WARNING, logger="sundial_receiver.jobs"):
        assert ctx.report_progress(1) is False
        assert ctx.report_progress(2) is False
        assert ctx.report_progress(3) is False
    assert "HTTP 500" in caplog.text
    assert "HTTP 307" in caplog.text
    assert [path for path, _, _ in server.received] == ["/v1/jobs/01JOB/progress"] * 3  # the token went nowhere else
    assert not ctx.cancelled


def test_without_a_progress_url_a_report_is_a_no_op_logged_once(caplog):
    ctx = shard(None)
    with caplog.at_level(logging.INFO, logger="sundial_receiver.jobs"):
        assert ctx.report_progress(1) is False
        assert ctx.report_progress(2) is False
    assert caplog.text.count("carries no progress URL") == 1
    assert shard("file:///etc/passwd").report_progress(1) is False  # never anything but http(s)
    with pytest.raises(TypeError):
        ctx.report_progress(-1)


def test_a_processor_stops_early_when_its_job_is_cancelled(server):
    """Through the receiver: a shard that reports as it goes sees ``cancelled`` and returns what it did."""
    server.answers += [(202, b'{"cancelled": false}', {}), (202, b'{"cancelled": true}', {})]

    class Careful(ShardingProcessor):
        def sharding_process(self, ctx: JobContext) -> Any:
            done = 0
            for _ in ctx.items or []:
                done += 1
                if ctx.report_progress(done):
                    break
            return {"done": done, "cancelled": ctx.cancelled}

    content = {**SHARD, "items": list(range(10)), "progress": {"url": server.url, "token": "t"}}
    answer = JobProcessorReceiver(SECRET, Careful()).handle(*sundial_request(content))
    assert json.loads(answer.content()) == {"result": {"done": 2, "cancelled": True}}


def test_the_commands_a_report_is_answered_with_are_handed_out_once_in_order(server):
    first = {"id": "c1", "command": "rate", "args": {"per_second": 5}, "sent_at": "2026-11-30T09:00:00.000Z"}
    second = {"id": "c2", "command": "dump", "args": {}, "sent_at": "2026-11-30T09:00:01.000Z"}
    third = {"id": "c3", "command": "stop", "sent_at": "2026-11-30T09:00:02.000Z"}
    server.answers += [
        (202, json.dumps({"cancelled": False, "commands": [first, second]}).encode(), {}),
        (202, json.dumps({"cancelled": False, "commands": []}).encode(), {}),
        (202, json.dumps({"cancelled": False, "commands": [third, "not a command", {"args": {}}]}).encode(), {}),
    ]
    ctx = shard(server.url)
    assert ctx.commands() == []  # nothing reported yet
    assert ctx.report_progress(1) is False
    assert ctx.report_progress(2) is False
    taken = [(c.id, c.command, c.args) for c in ctx.commands()]
    assert taken == [("c1", "rate", {"per_second": 5}), ("c2", "dump", {})]
    assert ctx.commands() == []  # each once
    assert ctx.report_progress(3) is False
    (stop,) = ctx.commands()  # what is not a command is passed over
    assert (stop.id, stop.command, stop.args, stop.sent_at) == ("c3", "stop", {}, "2026-11-30T09:00:02.000Z")


def test_the_next_report_acknowledges_the_ids_received_and_one_offered_again_is_not_handed_out_again(server):
    first = {"id": "c1", "command": "rate", "args": {"per_second": 5}, "sent_at": "2026-11-30T09:00:00.000Z"}
    second = {"id": "c2", "command": "dump", "args": {}, "sent_at": "2026-11-30T09:00:01.000Z"}
    server.answers += [
        (202, json.dumps({"cancelled": False, "commands": [first]}).encode(), {}),
        (502, b'{"message": "Internal server error"}', {}),  # the acknowledgment did not get through
        (202, json.dumps({"cancelled": False, "commands": [first, second]}).encode(), {}),  # offered again
        (202, json.dumps({"cancelled": False, "commands": []}).encode(), {}),
        (202, json.dumps({"cancelled": False, "commands": []}).encode(), {}),
    ]
    ctx = shard(server.url)
    for done in range(1, 6):
        ctx.report_progress(done)
        if done == 1:
            assert [c.id for c in ctx.commands()] == ["c1"]
    assert [c.id for c in ctx.commands()] == ["c2"]  # c1 once, though two answers carried it
    assert ctx.commands() == []
    sent = [body for _, _, body in server.received]
    assert sent == [
        {"done_items": 1},
        {"done_items": 2, "acknowledged": ["c1"]},
        {"done_items": 3, "acknowledged": ["c1"]},  # again: the 502's answer may not be Sundial's
        {"done_items": 4, "acknowledged": ["c1", "c2"]},  # c1 carried again: acknowledged again
        {"done_items": 5},  # acknowledged with a 202: not sent again
    ]
