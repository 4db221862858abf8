"""The receiver kit (receiver-kit/) against real callbacks of `make run`: the Flask example
built with it verifies the tenant's signed callbacks and processes each run once; the same
delivery replayed is a duplicate, a tampered body or an old timestamp is refused, and a run
whose processing failed once is retried by Sundial and processed once in the end; across a
rotation, a receiver holding either secret verifies the callbacks."""

from __future__ import annotations

import base64
import importlib.util
import secrets
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sundial_receiver import BadSignature, Callback, MemoryStore, Receiver, Verifier, sign
from werkzeug.serving import make_server

from tests.e2e.conftest import ADMIN_KEY, SIGNING_CACHE_S
from tests.e2e.test_tenants import wait

pytestmark = pytest.mark.e2e

EXAMPLE = Path(__file__).resolve().parents[2] / "receiver-kit" / "examples" / "flask_app.py"


def flask_example() -> Any:
    spec = importlib.util.spec_from_file_location("receiver_kit_flask_example", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class App:
    """The example's Flask app with the tenant's secret, on a loopback port: what it processed
    (each run once) and every delivery it was sent, as sent (body bytes and headers)."""

    def __init__(self, secret: str) -> None:
        self.processed: list[Callback] = []
        self.deliveries: list[tuple[bytes, dict[str, str], int]] = []
        self.secret = secret
        self._failed: set[str] = set()  # runs of a ``fail_once`` payload whose first processing raised
        self.receiver = Receiver(secret, MemoryStore())
        self.app = flask_example().create_app(self.receiver, self.process)
        from flask import request

        @self.app.after_request
        def record(response: Any) -> Any:
            self.deliveries.append((request.get_data(), dict(request.headers.items()), response.status_code))
            return response

    def process(self, callback: Callback) -> None:
        if (
            isinstance(callback.payload, dict)
            and callback.payload.get("fail_once")
            and callback.run_id not in self._failed
        ):
            self._failed.add(callback.run_id)
            raise RuntimeError("the first processing fails")
        self.processed.append(callback)

    def of(self, task_id: str) -> list[Callback]:
        return [c for c in self.processed if c.task_id == task_id]


@pytest.fixture
def kit_app(sundial) -> Iterator[tuple[App, str, dict[str, str]]]:
    """The app, its URL, and a new tenant's key headers."""
    status, tenant = sundial.call(
        "POST", "/v1/tenants", {"id": f"kit-{secrets.token_hex(3)}"}, {"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    assert status == 201, tenant
    app = App(tenant["signing_secret"]["secret"])
    server = make_server("127.0.0.1", 0, app.app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, name="kit-receiver", daemon=True)
    thread.start()
    try:
        yield (
            app,
            f"http://127.0.0.1:{server.server_port}/sundial",
            {"Authorization": f"Bearer {tenant['key']['secret']}"},
        )
    finally:
        server.shutdown()
        thread.join(timeout=5)


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    sent = {k: v for k, v in headers.items() if k.lower() not in {"host", "content-length", "connection"}}
    request = urllib.request.Request(url, data=body, method="POST", headers=sent)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def lower(headers: dict[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}


def test_the_kit_verifies_and_processes_real_callbacks_once_and_refuses_forgeries(sundial, kit_app):
    app, url, key = kit_app
    status, task = sundial.call(
        "POST",
        "/v1/tasks",
        {"schedule": {"after_seconds": 1}, "target": {"http": {"url": url}}, "payload": {"order_id": 123}},
        key,
    )
    assert status == 201, task
    assert wait(lambda: len(app.of(task["id"])) == 1, timeout=20)
    (callback,) = app.of(task["id"])
    assert callback.payload == {"order_id": 123}
    assert callback.attempt == 1
    assert callback.parent is None
    assert callback.fired_at >= callback.scheduled_for
    runs = lambda: sundial.call("GET", f"/v1/tasks/{task['id']}/runs", None, key)[1]["items"]  # noqa: E731
    assert wait(lambda: [r["status"] for r in runs()] == ["succeeded"], timeout=20)
    (body, headers, answered) = next(d for d in app.deliveries if lower(d[1])["sundial-task-id"] == task["id"])
    assert answered == 200
    assert lower(headers)["webhook-id"] == callback.run_id == lower(headers)["idempotency-key"]

    # The same delivery again (Sundial's at-least-once, or a replay within the tolerance): a duplicate.
    status, answer = post(url, body, headers)
    assert (status, b"duplicate" in answer) == (200, True)
    # A tampered body under the real signature: refused, never processed.
    status, answer = post(url, body.replace(b"123", b"124"), headers)
    assert (status, b"bad_signature" in answer) == (401, True)
    # A new run, well signed with the tenant's secret, but 10 minutes old: refused.
    fresh = body.replace(callback.run_id.encode(), b"01OLDRUN")
    at = int(time.time()) - 600
    old = {
        **lower(headers),
        "webhook-id": "01OLDRUN",
        "webhook-timestamp": str(at),
        "webhook-signature": sign(app.secret, "01OLDRUN", at, fresh),
    }
    status, answer = post(url, fresh, old)
    assert (status, b"timestamp_too_old" in answer) == (401, True)
    # The same, signed now: the kit takes it (the timestamp alone refused it).
    old.update({"webhook-timestamp": str(at + 600), "webhook-signature": sign(app.secret, "01OLDRUN", at + 600, fresh)})
    assert post(url, fresh, old)[0] == 200
    assert [c.run_id for c in app.processed] == [callback.run_id, "01OLDRUN"]


def test_a_run_whose_processing_failed_is_retried_by_sundial_and_processed_once(sundial, kit_app):
    app, url, key = kit_app
    spec = {
        "schedule": {"after_seconds": 1},
        "target": {"http": {"url": url}},
        "payload": {"fail_once": True},
        "retry": {"max_attempts": 3, "backoff": "fixed", "interval_seconds": 1},
    }
    status, task = sundial.call("POST", "/v1/tasks", spec, key)
    assert status == 201, task
    assert wait(lambda: len(app.of(task["id"])) == 1, timeout=30)
    (callback,) = app.of(task["id"])
    assert callback.attempt == 2
    sent = [d for d in app.deliveries if lower(d[1])["sundial-task-id"] == task["id"]]
    assert [(lower(h)["sundial-attempt"], answered) for _, h, answered in sent] == [("1", 500), ("2", 200)]
    assert {lower(h)["webhook-id"] for _, h, _ in sent} == {callback.run_id}
    runs = lambda: sundial.call("GET", f"/v1/tasks/{task['id']}/runs", None, key)[1]["items"]  # noqa: E731
    assert wait(lambda: [r["status"] for r in runs()] == ["succeeded"], timeout=20)


def test_across_a_rotation_a_receiver_with_either_secret_verifies_and_one_with_both_takes_the_call(sundial, kit_app):
    app, url, key = kit_app
    status, rotated = sundial.call("POST", "/v1/signing-secrets:rotate", {"previous_expires_in_seconds": 3600}, key)
    assert status == 201, rotated
    # The receiver deployed for the rotation holds the new secret and the previous one.
    app.receiver.verifier = Verifier([rotated["secret"], app.secret])
    # the trigger keeps a tenant's secrets that long (the runtime's setting). Kept: the rotation
    # reaching the trigger when its cache runs out, in the runtime's process, is what is tested.
    time.sleep(SIGNING_CACHE_S + 0.5)
    spec = {"schedule": {"after_seconds": 1}, "target": {"http": {"url": url}}, "payload": {"rotated": True}}
    status, task = sundial.call("POST", "/v1/tasks", spec, key)
    assert status == 201, task
    assert wait(lambda: len(app.of(task["id"])) == 1, timeout=20)
    (body, headers, answered) = next(d for d in app.deliveries if lower(d[1])["sundial-task-id"] == task["id"])
    assert answered == 200
    assert len(lower(headers)["webhook-signature"].split(" ")) == 2  # one v1 signature per active secret
    run_id = app.of(task["id"])[0].run_id
    assert Verifier(rotated["secret"]).verify(body, headers) == run_id  # a receiver already switched over
    assert Verifier(app.secret).verify(body, headers) == run_id  # a receiver not switched yet
    other = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    with pytest.raises(BadSignature):
        Verifier(other).verify(body, headers)


def test_a_chained_callback_is_parsed_with_its_parent(sundial, kit_app):
    """A → B on failure: the kit hands B's handler a typed Parent with A's run, status and error."""
    app, url, key = kit_app
    spec = {"schedule": {"cron": "0 0 1 1 *"}, "target": {"http": {"url": url}}, "payload": {"step": "b"}}
    status, child = sundial.call("POST", "/v1/tasks", spec, key)
    assert status == 201, child
    failing = {
        "schedule": {"after_seconds": 1},
        "target": {"http": {"url": url + "-missing"}},  # the Flask app answers 404: a final failure
        "retry": {"max_attempts": 1, "backoff": "fixed", "interval_seconds": 1},
        "on_failure": [child["id"]],
    }
    status, parent = sundial.call("POST", "/v1/tasks", failing, key)
    assert status == 201, parent
    assert wait(lambda: len(app.of(child["id"])) == 1, timeout=20)
    (callback,) = app.of(child["id"])
    assert callback.payload == {"step": "b"}
    assert callback.parent is not None
    assert callback.parent.task_id == parent["id"]
    assert callback.parent.status == "failed"
    assert callback.parent.error is not None
    assert "404" in callback.parent.error
    runs = sundial.call("GET", f"/v1/tasks/{parent['id']}/runs", None, key)[1]["items"]
    assert callback.parent.run_id == runs[0]["run_id"]
