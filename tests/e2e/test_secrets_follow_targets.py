"""`make run` end to end: a secret header sent back as ``"[redacted]"`` in a PATCH keeps *that
target's* stored value (matched by URL, else origin, never by position), a job target's processor
headers too, and a target moved to another origin must send its secrets again: a write-only
secret never reaches a URL its writer did not give it. Real receivers on two origins."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from local.receiver import running_receiver
from tests.support.eventually import eventually
from tests.support.processor import SummingProcessor, running_processor

pytestmark = pytest.mark.e2e

REDACTED = "[redacted]"
LATER = {"after_seconds": 3600}
NOW = {"after_seconds": 1}


@pytest.fixture
def elsewhere() -> Iterator[Any]:
    """A second receiver: another port, so another origin."""
    with running_receiver() as running:
        yield running


def http(url: str, secret: str) -> dict[str, Any]:
    return {"http": {"url": url, "headers": {"Authorization": secret, "X-Team": "orders"}}}


def patch(sundial, task_id: str, body: dict[str, Any]) -> tuple[int, Any]:
    return sundial.call("PATCH", f"/v1/tasks/{task_id}", body)


def test_targets_sent_back_in_another_order_keep_their_own_secrets(sundial, receiver, elsewhere):
    a, b = receiver.script("/a", 200), elsewhere.script("/b", 200)
    status, task = sundial.call(
        "POST", "/v1/tasks", {"schedule": LATER, "targets": [http(a, "Bearer A"), http(b, "Bearer B")]}
    )
    assert status == 201, task
    shown = sundial.call("GET", f"/v1/tasks/{task['id']}")[1]["targets"]
    assert [t["http"]["headers"]["Authorization"] for t in shown] == [REDACTED, REDACTED]
    status, changed = patch(sundial, task["id"], {"targets": shown[::-1], "schedule": NOW})
    assert status == 200, changed
    (to_a,) = receiver.wait_for("/a", 1, timeout=15)
    (to_b,) = elsewhere.wait_for("/b", 1, timeout=15)
    assert to_a.headers["Authorization"] == "Bearer A"
    assert to_b.headers["Authorization"] == "Bearer B"


def test_a_target_moved_to_another_origin_must_send_its_secret_again(sundial, receiver, elsewhere):
    here = receiver.script("/here", 200)
    status, task = sundial.call("POST", "/v1/tasks", {"schedule": LATER, "target": http(here, "Bearer here")})
    assert status == 201, task
    moved = http(elsewhere.script("/there", 200), REDACTED)
    status, refused = patch(sundial, task["id"], {"target": moved, "schedule": NOW})
    assert status == 400, refused
    (detail,) = refused["error"]["details"]
    assert detail["field"] == "target.http.headers.Authorization"
    assert "send the value itself" in detail["message"]
    assert refused["error"]["code"] == "validation_error"
    # the same origin, another path: the value is the target's own, and it follows
    status, changed = patch(
        sundial, task["id"], {"target": http(receiver.script("/path", 200), REDACTED), "schedule": NOW}
    )
    assert status == 200, changed
    (call,) = receiver.wait_for("/path", 1, timeout=15)
    assert call.headers["Authorization"] == "Bearer here"
    assert elsewhere.calls_to("/there") == []
    # the value itself moves a target to another origin
    status, other = sundial.call("POST", "/v1/tasks", {"schedule": LATER, "target": http(here, "Bearer here")})
    assert status == 201, other
    status, sent = patch(sundial, other["id"], {"target": http(moved["http"]["url"], "Bearer there"), "schedule": NOW})
    assert status == 200, sent
    (there,) = elsewhere.wait_for("/there", 1, timeout=15)
    assert there.headers["Authorization"] == "Bearer there"


def test_a_job_targets_processor_keeps_its_secret_when_sent_back(sundial):
    with running_processor(SummingProcessor()) as (url, seen):
        job = {"name": "secret-job", "processor": http(url, "Bearer job"), "data": [[{"expand": 2}]]}
        status, task = sundial.call("POST", "/v1/tasks", {"schedule": LATER, "target": {"job": job}})
        assert status == 201, task
        shown = sundial.call("GET", f"/v1/tasks/{task['id']}")[1]["target"]
        assert shown["job"]["processor"]["http"]["headers"]["Authorization"] == REDACTED
        status, changed = patch(sundial, task["id"], {"target": shown, "schedule": NOW})
        assert status == 200, changed

        def pre_called() -> dict[str, str]:
            calls = [headers for headers, body in seen if body["phase"] == "pre"]
            assert calls, seen
            return calls[0]

        headers = eventually(pre_called, timeout=20)
        assert headers["Authorization"] == "Bearer job"  # not the literal "[redacted]"


def test_a_redirect_is_not_followed_and_the_run_says_where_it_pointed(sundial, receiver):
    """A 302 to another port of the same host carried the signed call and its headers there: now
    the attempt fails for good, its status and Location in the run's error, and nothing else is
    called."""
    with running_receiver() as other_port:
        there = other_port.script("/there", 200)
        here = receiver.script("/moved", (302, {"Location": there}))
        status, task = sundial.call(
            "POST", "/v1/tasks", {"schedule": NOW, "target": http(here, "Bearer here"), "retry": {"max_attempts": 3}}
        )
        assert status == 201, task

        def ended() -> dict[str, Any]:
            (run,) = sundial.call("GET", f"/v1/tasks/{task['id']}/runs")[1]["items"]
            assert run["status"] in ("failed", "dead_lettered"), run
            return run

        run = eventually(ended, timeout=20)
        assert run["attempts"] == 1  # a 3xx is final: not retried
        assert run["last_error"] == f"HTTP 302 redirect to {there} not followed"
        assert len(receiver.calls_to("/moved")) == 1
        assert other_port.calls_to("/there") == []
