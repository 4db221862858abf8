"""The receiver kit's processing (receiver-kit/): a run id is processed once, a failure releases
it for Sundial's retry; the memory and Redis-like stores; the WSGI and ASGI apps; the Lambda and SQS
adapters (unsigned targets: parsed and de-duplicated)."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import secrets
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sundial_receiver import Callback, MemoryStore, Receiver, RedisStore, sign
from sundial_receiver.adapters.asgi import asgi_app
from sundial_receiver.adapters.aws import lambda_target, sqs_batch, sqs_run_id
from sundial_receiver.adapters.wsgi import wsgi_app

pytestmark = pytest.mark.unit

SECRET = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def body(run_id: str = "01RUN", **extra: Any) -> bytes:
    data = {
        "task_id": "01TASK",
        "run_id": run_id,
        "scheduled_for": "2026-03-01T08:00:00.000Z",
        "fired_at": "2026-03-01T08:00:00.003Z",
        "attempt": 1,
        "payload": {"n": 1},
        **extra,
    }
    return json.dumps(data, separators=(",", ":")).encode()


def signed(raw: bytes, run_id: str = "01RUN") -> dict[str, str]:
    import time

    at = int(time.time())
    return {"webhook-id": run_id, "webhook-timestamp": str(at), "webhook-signature": sign(SECRET, run_id, at, raw)}


class Recorder:
    def __init__(self, failures: int = 0) -> None:
        self.seen: list[Callback] = []
        self.failures = failures

    def __call__(self, callback: Callback) -> None:
        if self.failures:
            self.failures -= 1
            raise RuntimeError("down")
        self.seen.append(callback)


def test_a_run_is_processed_once_and_its_repeat_answered_200_without_processing():
    receiver, recorder = Receiver(SECRET), Recorder()
    raw = body()
    first = receiver.handle(raw, signed(raw), recorder)
    again = receiver.handle(raw, signed(raw), recorder)
    assert (first.status, first.body["status"], first.duplicate) == (200, "processed", False)
    assert (again.status, again.body["status"], again.duplicate) == (200, "duplicate", True)
    assert [c.run_id for c in recorder.seen] == ["01RUN"]


def test_a_failed_run_is_answered_500_and_released_so_the_retry_is_processed():
    receiver, recorder = Receiver(SECRET), Recorder(failures=1)
    raw = body()
    assert receiver.handle(raw, signed(raw), recorder).status == 500
    assert receiver.handle(raw, signed(raw), recorder).body["status"] == "processed"
    assert receiver.handle(raw, signed(raw), recorder).duplicate
    assert len(recorder.seen) == 1


def test_unverified_calls_are_401_and_bodies_that_are_not_callbacks_400_never_processed():
    receiver, recorder = Receiver(SECRET), Recorder()
    raw = body()
    tampered = receiver.handle(body(payload={"n": 2}), signed(raw), recorder)
    assert (tampered.status, tampered.body["error"]) == (401, "bad_signature")
    assert receiver.handle(raw, {}, recorder).body["error"] == "missing_header"
    junk = b'{"hello": 1}'
    assert receiver.handle(junk, signed(junk), recorder).status == 400
    assert recorder.seen == []


def test_memory_store_claims_once_until_the_ttl_passes_or_it_is_released():
    now = [0.0]
    store = MemoryStore(clock=lambda: now[0])
    assert store.claim("a", ttl=10)
    assert not store.claim("a", ttl=10)
    assert store.claim("b", ttl=10)
    now[0] = 10.5
    assert store.claim("a", ttl=10)
    store.release("a")
    assert store.claim("a", ttl=10)


class FakeRedis:
    """What redis-py's ``set(nx=, ex=)`` and ``delete`` do, with a clock of its own."""

    def __init__(self) -> None:
        self.now = 0.0
        self.values: dict[str, tuple[str, float]] = {}

    def set(self, name: str, value: str, nx: bool = False, ex: int | None = None) -> bool | None:
        current = self.values.get(name)
        if nx and current is not None and current[1] > self.now:
            return None
        self.values[name] = (value, self.now + (ex if ex is not None else 1e18))
        return True

    def delete(self, name: str) -> int:
        return 1 if self.values.pop(name, None) else 0


def test_redis_store_is_set_nx_ex():
    client = FakeRedis()
    store = RedisStore(client)
    assert store.claim("r1", ttl=60)
    assert not store.claim("r1", ttl=60)
    assert set(client.values) == {"sundial-run:r1"}
    client.now = 61
    assert store.claim("r1", ttl=60)
    store.release("r1")
    assert store.claim("r1", ttl=60)


def call_wsgi(app, raw: bytes, headers: dict[str, str], method: str = "POST") -> tuple[str, dict[str, Any]]:
    environ = {
        "REQUEST_METHOD": method,
        "CONTENT_LENGTH": str(len(raw)),
        "CONTENT_TYPE": "application/json",
        "wsgi.input": io.BytesIO(raw),
        **{"HTTP_" + name.upper().replace("-", "_"): value for name, value in headers.items()},
    }
    started: list[str] = []
    chunks = app(environ, lambda status, _headers: started.append(status))
    return started[0], json.loads(b"".join(chunks))


def test_the_wsgi_app_answers_as_the_receiver_does():
    recorder = Recorder()
    app = wsgi_app(Receiver(SECRET), recorder)
    raw = body()
    assert call_wsgi(app, raw, signed(raw)) == ("200 OK", {"status": "processed", "run_id": "01RUN"})
    assert call_wsgi(app, raw, signed(raw))[1]["status"] == "duplicate"
    assert call_wsgi(app, body(payload=None), signed(raw))[0] == "401 Unauthorized"
    assert call_wsgi(app, raw, signed(raw), method="GET")[0] == "405 Method Not Allowed"
    assert len(recorder.seen) == 1


def run_alone(coroutine: Coroutine[Any, Any, None]) -> None:
    """Run ``coroutine`` to its end on a loop in a thread of its own: a test that ran before in
    this worker may have left a loop running in this one (Playwright's sync API does), where
    ``asyncio.run`` refuses to start."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, coroutine).result()


def asgi_request(
    app, raw: bytes, headers: dict[str, str], method: str = "POST", path: str = "/sundial"
) -> tuple[int, dict[str, str], bytes]:
    """One request, its body in two chunks (an ASGI server may split it), through the ASGI app:
    the status, the headers and the body sent back."""
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "headers": [(name.lower().encode(), value.encode()) for name, value in headers.items()],
    }
    incoming = [
        {"type": "http.request", "body": raw[:10], "more_body": True},
        {"type": "http.request", "body": raw[10:], "more_body": False},
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    run_alone(app(scope, receive, send))
    start, body_message = sent
    return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}, body_message["body"]


def call_asgi(app, raw: bytes, headers: dict[str, str], method: str = "POST") -> tuple[int, dict[str, Any]]:
    """:func:`asgi_request`, its JSON answer read."""
    status, sent, body = asgi_request(app, raw, headers, method)
    assert sent["content-type"] == "application/json"
    return status, json.loads(body)


def test_the_asgi_app_answers_as_the_receiver_does():
    recorder = Recorder(failures=1)
    app = asgi_app(Receiver(SECRET), recorder)
    raw = body()
    assert call_asgi(app, raw, signed(raw)) == (500, {"error": "processing_failed", "run_id": "01RUN"})
    assert call_asgi(app, raw, signed(raw)) == (200, {"status": "processed", "run_id": "01RUN"})
    assert call_asgi(app, raw, {k.upper(): v for k, v in signed(raw).items()})[1]["status"] == "duplicate"
    assert call_asgi(app, raw + b" ", signed(raw))[1]["error"] == "bad_signature"
    assert call_asgi(app, raw, signed(raw), method="GET")[0] == 405
    assert [c.run_id for c in recorder.seen] == ["01RUN"]


def test_the_asgi_app_answers_the_lifespan_protocol():
    incoming = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    run_alone(asgi_app(Receiver(SECRET), Recorder())({"type": "lifespan"}, receive, send))
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


def test_a_lambda_target_skips_repeats_and_a_failure_releases_and_raises():
    recorder = Recorder(failures=1)
    handler = lambda_target(MemoryStore())(recorder)
    event = json.loads(body())  # what Sundial invokes a lambda target with: the callback itself
    with pytest.raises(RuntimeError, match="down"):
        handler(event, None)
    assert handler(event, None)["status"] == "processed"
    assert handler(event, None) == {"status": "duplicate", "run_id": "01RUN"}
    assert [c.payload for c in recorder.seen] == [{"n": 1}]


def sqs_record(message_id: str, raw: bytes, run_id: str = "01RUN") -> dict[str, Any]:
    return {
        "messageId": message_id,
        "body": raw.decode(),
        "messageAttributes": {"Idempotency-Key": {"stringValue": run_id, "dataType": "String"}},
    }


def test_an_sqs_batch_reports_only_its_failed_records_and_skips_repeats():
    seen: list[str] = []
    failing = {"r2"}

    def handle(callback: Callback) -> None:
        if callback.run_id in failing:
            raise RuntimeError("down")
        seen.append(callback.run_id)

    handler = sqs_batch(MemoryStore())(handle)
    event = {
        "Records": [
            sqs_record("m1", body("r1"), "r1"),
            sqs_record("m2", body("r1"), "r1"),  # the same run again (an at-least-once repeat)
            sqs_record("m3", body("r2"), "r2"),
            sqs_record("m4", b"not a callback"),
            sqs_record("m5", body("r3"), "r3"),
        ]
    }
    assert handler(event, None) == {"batchItemFailures": [{"itemIdentifier": "m3"}, {"itemIdentifier": "m4"}]}
    assert seen == ["r1", "r3"]
    assert sqs_run_id(event["Records"][2]) == "r2"
    # The failed run was released: its redelivery is processed, once.
    failing.clear()
    assert handler({"Records": [event["Records"][2], event["Records"][0]]}, None) == {"batchItemFailures": []}
    assert seen == ["r1", "r3", "r2"]
