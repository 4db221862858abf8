"""The receiver kit's job processor (receiver-kit/sundial_receiver/jobs.py): the typed context of
each phase, the answer in the phase's shape, a step run once per Idempotency-Key and its retry
answered the same bytes, a failure not remembered, a step under way answered 503, an answer past
Sundial's 6 MiB refused, and the WSGI, ASGI and Lambda adapters, signed as Sundial signs (its own
PhaseCall and Signer build the requests)."""

from __future__ import annotations

import base64
import importlib.util
import io
import json
import logging
import secrets
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from sundial_receiver import JobContext, JobProcessorReceiver, MemoryStore, RedisStore, ShardingProcessor
from sundial_receiver.adapters.asgi import asgi_processor
from sundial_receiver.adapters.aws import lambda_processor
from sundial_receiver.adapters.wsgi import wsgi_processor
from sundial_receiver.jobs import (
    MAX_ANSWER_BYTES,
    AnswerTooLarge,
    InvalidAnswer,
    InvalidJobCall,
    JobCallFailed,
    encode,
    step_key,
)
from sundial_receiver.verify import SECRET_VARIABLE

from shared.delivery import processor as sundial_processor
from shared.delivery.processor import PhaseCall
from shared.domain.signing import Signer
from tests.unit.test_receiver_kit_receive import asgi_request

pytestmark = pytest.mark.unit

SECRET = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
JOB = "01JOB"

PRE = {"job_id": JOB, "phase": "pre", "data": [["a", "b"], ["c"]]}
SHARD = {"job_id": JOB, "phase": "shard", "level": 0, "shard": 1, "shard_count": 3, "items": ["a", "b"]}
NOTIFY = {
    "job_id": JOB,
    "phase": "notify",
    "progress": {"done_shards": 1, "total_shards": 3, "percent": 33, "threshold": 30},
}
POST = {"job_id": JOB, "phase": "post", "results": [1, 2, 3]}


def sundial_request(content: dict[str, Any], secret: str = SECRET, at: int | None = None) -> tuple[bytes, dict]:
    """The body and headers Sundial sends a phase call with (shared/delivery/http.py, ``_headers``:
    the call's headers, then the Standard Webhooks headers over the exact body, the key as id)."""
    call = PhaseCall(JOB, content, Signer.of([secret]))
    body, headers = call.body(), call.headers()
    assert call.signer is not None
    headers |= call.signer.headers(headers["Idempotency-Key"], int(time.time()) if at is None else at, body)
    return body, headers


class Recorder(ShardingProcessor):
    """Records every call; answers each phase's value (or raises ``failures`` times first)."""

    def __init__(self, failures: int = 0) -> None:
        self.calls: list[JobContext] = []
        self.failures = failures

    def fail_maybe(self) -> None:
        if self.failures:
            self.failures -= 1
            raise RuntimeError("the index is locked")

    def pre_process(self, ctx: JobContext) -> Any:
        self.calls.append(ctx)
        return [[item.upper() for item in level] for level in ctx.data]

    def sharding_process(self, ctx: JobContext) -> Any:
        self.calls.append(ctx)
        self.fail_maybe()
        return {"done": len(ctx.items or []), "nonce": secrets.token_hex(8)}  # a second run would differ

    def notify(self, ctx: JobContext) -> Any:
        self.calls.append(ctx)
        return {"ignored": True}

    def post_process(self, ctx: JobContext) -> Any:
        self.calls.append(ctx)
        ctx.set_result({"total": sum(ctx.results or [])})
        return None


def answer_of(receiver: JobProcessorReceiver, content: dict[str, Any]) -> tuple[int, Any]:
    answer = receiver.handle(*sundial_request(content))
    return answer.status, json.loads(answer.content())


# the context


def test_each_phase_is_parsed_into_its_typed_context():
    pre = JobContext.from_dict(PRE)
    assert (pre.job_id, pre.phase, pre.data, pre.key) == (JOB, "pre", [["a", "b"], ["c"]], "01JOB:pre")
    assert (pre.level, pre.shard, pre.items, pre.progress, pre.attempt) == (None, None, None, None, None)
    shard = JobContext.from_dict({**SHARD, "progress": {"url": "https://s/p", "token": "t"}, "new": 1})
    assert (shard.level, shard.shard, shard.shard_count, shard.items) == (0, 1, 3, ["a", "b"])
    assert (shard.key, shard.extra) == ("01JOB:shard:0:1", {"new": 1})
    assert shard.progress == {"url": "https://s/p", "token": "t"}
    notify = JobContext.from_dict(NOTIFY)
    assert (notify.done_shards, notify.total_shards, notify.percent, notify.threshold) == (1, 3, 33, 30)
    assert (notify.key, notify.progress) == ("01JOB:notify:30", None)  # a notify's progress is counts, no URL
    post = JobContext.from_dict(POST)
    assert (post.results, post.key) == ([1, 2, 3], "01JOB:post")
    assert JobContext.from_dict({**SHARD, "attempt": 2}).attempt == 2  # should a call say it
    assert JobContext.from_dict(SHARD, attempt=3).attempt == 3  # a Sundial-Attempt header
    legacy = {**NOTIFY, "progress": {"done_shards": 1, "total_shards": 3, "percent": 33}}
    assert (JobContext.from_dict(legacy).threshold, JobContext.from_dict(legacy).key) == (33, "01JOB:notify:33")


@pytest.mark.parametrize("content", [PRE, SHARD, NOTIFY, POST])
def test_the_step_key_is_sundials_idempotency_key(content):
    """A ``lambda`` processor gets no headers: the kit derives the key as Sundial does."""
    assert step_key(content) == PhaseCall(JOB, content).headers()["Idempotency-Key"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ([], "a JSON object"),
        ({"phase": "pre"}, "job_id is required"),
        ({"job_id": JOB, "phase": "later"}, "phase is one of pre, shard, notify, post"),
        ({**SHARD, "level": -1}, "level is required, an integer from 0"),
        ({**SHARD, "shard": True}, "shard is required"),
        ({**SHARD, "shard_count": 0}, "shard_count is required, an integer from 1"),
        ({**SHARD, "items": "a"}, "items is required, a list"),
        ({**NOTIFY, "progress": None}, "progress is required"),
        ({**NOTIFY, "progress": {"done_shards": 1}}, "progress.total_shards is required"),
        ({**POST, "results": None}, "results is required, a list"),
    ],
)
def test_a_body_that_is_no_phase_call_is_refused_with_why(content, message):
    with pytest.raises(InvalidJobCall, match=message):
        JobContext.from_dict(content)
    with pytest.raises(InvalidJobCall, match="not JSON"):
        JobContext.parse(b"{")


def test_the_logger_names_the_job_and_the_shard(caplog):
    ctx = JobContext.from_dict(SHARD)
    with caplog.at_level(logging.INFO, logger="sundial_receiver.jobs"):
        ctx.logger.info("indexed %d", 2)
    assert isinstance(ctx.logger, logging.LoggerAdapter)
    record = caplog.records[-1]
    assert record.getMessage() == "[job 01JOB shard 0/1] indexed 2"
    assert (record.job_id, record.phase, record.level, record.shard) == (JOB, "shard", 0, 1)


# the answers


def test_every_phase_is_answered_in_the_shape_sundial_expects():
    recorder = Recorder()
    receiver = JobProcessorReceiver(SECRET, recorder)
    assert answer_of(receiver, PRE) == (200, {"data": [["A", "B"], ["C"]]})
    status, shard = answer_of(receiver, SHARD)
    assert (status, shard["result"]["done"]) == (200, 2)
    assert answer_of(receiver, NOTIFY) == (200, {})  # Sundial ignores a notify's answer
    assert answer_of(receiver, POST) == (200, {"result": {"total": 6}})  # through ctx.set_result
    assert [c.phase for c in recorder.calls] == ["pre", "shard", "notify", "post"]


def test_only_sharding_process_is_required_and_the_defaults_keep_the_data():
    class Minimal(ShardingProcessor):
        def sharding_process(self, ctx: JobContext) -> Any:
            return len(ctx.items or [])

    receiver = JobProcessorReceiver(SECRET, Minimal())
    assert answer_of(receiver, PRE) == (200, {})  # {}: Sundial shards the submitted data
    assert answer_of(receiver, SHARD) == (200, {"result": 2})
    assert answer_of(receiver, NOTIFY) == (200, {})
    assert answer_of(receiver, POST) == (200, {"result": None})
    with pytest.raises(TypeError):
        ShardingProcessor()  # type: ignore[abstract]
    with pytest.raises(TypeError, match="ShardingProcessor"):
        JobProcessorReceiver(SECRET, object())  # type: ignore[arg-type]


def test_the_answers_are_what_sundials_own_client_reads():
    """Sundial's HttpProcessor parses the body as JSON and its steps read ``data`` and ``result``."""
    receiver = JobProcessorReceiver(SECRET, Recorder())
    raw = receiver.handle(*sundial_request(SHARD)).content()
    assert raw == json.dumps(json.loads(raw), separators=(",", ":"), ensure_ascii=False).encode()
    assert isinstance(json.loads(raw), dict)


# once per step


def test_a_retried_step_gets_the_first_answers_bytes_without_running_again():
    recorder = Recorder()
    receiver = JobProcessorReceiver(SECRET, recorder)
    first = receiver.handle(*sundial_request(SHARD, at=int(time.time()) - 2))
    again = receiver.handle(*sundial_request(SHARD))  # a retry is signed anew, at another timestamp
    assert (first.status, again.status, first.replayed, again.replayed) == (200, 200, False, True)
    assert again.content() == first.content()
    assert len(recorder.calls) == 1
    other = receiver.handle(*sundial_request({**SHARD, "shard": 2}))  # another step runs
    assert other.content() != first.content()
    assert len(recorder.calls) == 2


def test_a_step_that_raises_is_answered_500_not_remembered_and_runs_again(caplog):
    recorder = Recorder(failures=1)
    receiver = JobProcessorReceiver(SECRET, recorder)
    with caplog.at_level(logging.ERROR, logger="sundial_receiver.jobs"):
        failed = receiver.handle(*sundial_request(SHARD))
    assert (failed.status, json.loads(failed.content())) == (
        500,
        {"error": {"type": "RuntimeError", "message": "the index is locked"}, "key": "01JOB:shard:0:1"},
    )
    assert "the index is locked" in caplog.text
    retried = receiver.handle(*sundial_request(SHARD))
    assert (retried.status, retried.replayed) == (200, False)
    assert receiver.handle(*sundial_request(SHARD)).content() == retried.content()
    assert len(recorder.calls) == 2


def test_a_retry_that_comes_while_the_step_runs_is_answered_503_for_sundials_retry():
    """503 and not 409: Sundial retries 408, 429 and 5xx, and fails the job on any other 4xx."""
    started, release = threading.Event(), threading.Event()

    class Slow(ShardingProcessor):
        runs = 0

        def sharding_process(self, ctx: JobContext) -> Any:
            Slow.runs += 1
            started.set()
            release.wait(10)
            return "done"

    receiver = JobProcessorReceiver(SECRET, Slow())
    answers: list[Any] = []
    first = threading.Thread(target=lambda: answers.append(receiver.handle(*sundial_request(SHARD))))
    first.start()
    assert started.wait(10)
    duplicate = receiver.handle(*sundial_request(SHARD))
    release.set()
    first.join(10)
    assert duplicate.status == 503
    assert ("Retry-After", "1") in duplicate.headers
    assert json.loads(duplicate.content())["error"] == "in_flight"
    assert answers[0].status == 200
    assert receiver.handle(*sundial_request(SHARD)).content() == b'{"result":"done"}'
    assert Slow.runs == 1


def test_an_answer_beyond_sundials_limit_is_refused_naming_the_limit_and_not_remembered():
    assert MAX_ANSWER_BYTES == sundial_processor.MAX_ANSWER_BYTES == 6 * 1024 * 1024
    sizes = [MAX_ANSWER_BYTES]

    class Big(ShardingProcessor):
        def sharding_process(self, ctx: JobContext) -> Any:
            return "x" * (sizes[0] - len('{"result":""}'))

    receiver = JobProcessorReceiver(SECRET, Big())
    assert len(receiver.handle(*sundial_request(SHARD)).content()) == MAX_ANSWER_BYTES  # exactly: taken
    sizes[0] += 1
    other = {**SHARD, "shard": 2}
    refused = receiver.handle(*sundial_request(other))
    body = json.loads(refused.content())
    assert (refused.status, body["error"]) == (422, "answer_too_large")  # a 4xx: Sundial does not retry
    assert "is 6291457 bytes as JSON, more than the 6291456 bytes (6 MiB)" in body["message"]
    sizes[0] -= 1
    assert receiver.handle(*sundial_request(other)).status == 200  # the refusal was not remembered
    with pytest.raises(AnswerTooLarge, match="more than the 10 bytes"):
        encode("post", "a long result", limit=10)


@pytest.mark.parametrize(
    ("phase", "value", "message"),
    [("pre", [1, 2], "a list of lists"), ("shard", {1, 2}, "not JSON"), ("post", float("nan"), "not JSON")],
)
def test_a_value_that_cannot_be_the_answer_is_refused_422(phase, value, message):
    with pytest.raises(InvalidAnswer, match=message):
        encode(phase, value)

    class Wrong(ShardingProcessor):
        def sharding_process(self, ctx: JobContext) -> Any:
            return {1, 2}

    answer = JobProcessorReceiver(SECRET, Wrong()).handle(*sundial_request(SHARD))
    assert (answer.status, json.loads(answer.content())["error"]) == (422, "invalid_answer")


def test_unverified_calls_are_401_and_bodies_that_are_not_calls_400_never_run():
    recorder = Recorder()
    receiver = JobProcessorReceiver(SECRET, recorder)
    body, headers = sundial_request(SHARD)
    assert receiver.handle(body + b" ", headers).body["error"] == "bad_signature"
    other = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    assert receiver.handle(*sundial_request(SHARD, secret=other)).status == 401
    assert receiver.handle(*sundial_request(SHARD, at=int(time.time()) - 600)).body["error"] == "timestamp_too_old"
    assert receiver.handle(body, {k: v for k, v in headers.items() if k != "webhook-signature"}).status == 401
    bad = {"job_id": JOB, "phase": "later"}
    assert receiver.handle(*sundial_request({**bad, "progress": {}})).status == 400
    assert recorder.calls == []
    rotated = JobProcessorReceiver([other, SECRET], recorder)  # during a rotation: either secret
    assert rotated.handle(body, headers).status == 200
    with pytest.raises(RuntimeError, match="no signing secret"):
        JobProcessorReceiver(None, recorder).handle(body, headers)


# the stores


class FakeRedis:
    """What redis-py's ``set(nx=, ex=)``, ``get`` and ``delete`` do, with a clock of its own."""

    def __init__(self) -> None:
        self.now = 0.0
        self.values: dict[str, tuple[Any, float]] = {}

    def set(self, name: str, value: Any, nx: bool = False, ex: int | None = None) -> bool | None:
        current = self.values.get(name)
        if nx and current is not None and current[1] > self.now:
            return None
        self.values[name] = (value, self.now + (ex if ex is not None else 1e18))
        return True

    def get(self, name: str) -> Any:
        current = self.values.get(name)
        return current[0] if current is not None and current[1] > self.now else None

    def delete(self, name: str) -> int:
        return 1 if self.values.pop(name, None) else 0


@pytest.mark.parametrize("kind", ["memory", "redis"])
def test_the_stores_keep_an_answer_for_its_ttl(kind):
    now = [0.0]
    client = FakeRedis()
    store = MemoryStore(clock=lambda: now[0]) if kind == "memory" else RedisStore(client)
    assert store.load("k") is None
    assert store.claim("k", 5)
    assert store.load("k") is None  # claimed, not answered: under way
    store.save("k", b'{"result":1}', 60)
    assert store.load("k") == b'{"result":1}'
    now[0] = client.now = 30  # the lease has passed, the answer is kept
    assert not store.claim("k", 5)
    assert store.load("k") == b'{"result":1}'
    now[0] = client.now = 61
    assert store.load("k") is None
    assert store.claim("k", 5)
    store.release("k")
    assert store.claim("k", 5)


def test_the_redis_store_reads_text_answers_of_a_decoding_client():
    client = FakeRedis()
    client.values["sundial-run:answer:k"] = ('{"result":"é"}', 1e18)  # redis-py with decode_responses=True
    assert RedisStore(client).load("k") == '{"result":"é"}'.encode()


def test_a_receiver_on_a_redis_store_replays_the_same_bytes():
    recorder = Recorder()
    client = FakeRedis()
    receiver = JobProcessorReceiver(SECRET, recorder, RedisStore(client), ttl=120, lease=30)
    first = receiver.handle(*sundial_request(SHARD)).content()
    assert client.values["sundial-run:answer:job-step:01JOB:shard:0:1"] == (first, 120)
    assert receiver.handle(*sundial_request(SHARD)).content() == first
    assert len(recorder.calls) == 1


def test_an_answer_that_cannot_be_saved_is_answered_all_the_same(caplog):
    class Broken(MemoryStore):
        def save(self, key: str, answer: bytes, ttl: int) -> None:
            raise ConnectionError("store down")

    recorder = Recorder()
    receiver = JobProcessorReceiver(SECRET, recorder, Broken())
    with caplog.at_level(logging.ERROR, logger="sundial_receiver.jobs"):
        assert answer_of(receiver, POST) == (200, {"result": {"total": 6}})
    assert "could not be saved" in caplog.text
    assert answer_of(receiver, POST)[0] == 200  # released: a retry runs the step again
    assert len(recorder.calls) == 2


# the adapters


def call_wsgi(app, raw: bytes, headers: dict[str, str], method: str = "POST") -> tuple[str, dict, bytes]:
    environ = {
        "REQUEST_METHOD": method,
        "CONTENT_LENGTH": str(len(raw)),
        "CONTENT_TYPE": "application/json",
        "wsgi.input": io.BytesIO(raw),
        **{"HTTP_" + name.upper().replace("-", "_"): value for name, value in headers.items()},
    }
    started: list[tuple[str, list]] = []
    chunks = app(environ, lambda status, sent: started.append((status, sent)))
    return started[0][0], dict(started[0][1]), b"".join(chunks)


def test_the_wsgi_processor_verifies_runs_once_and_replays():
    recorder = Recorder()
    app = wsgi_processor(JobProcessorReceiver(SECRET, recorder))
    body, headers = sundial_request(SHARD)
    status, sent, first = call_wsgi(app, body, headers)
    assert (status, sent["Content-Type"], json.loads(first)["result"]["done"]) == ("200 OK", "application/json", 2)
    assert sent["Content-Length"] == str(len(first))
    assert call_wsgi(app, *sundial_request(SHARD))[2] == first
    assert call_wsgi(app, body + b" ", headers)[0] == "401 Unauthorized"
    assert call_wsgi(app, body, headers, method="GET")[0] == "405 Method Not Allowed"
    assert call_wsgi(app, *sundial_request(POST))[2] == b'{"result":{"total":6}}'
    assert len(recorder.calls) == 2


def call_asgi(app, raw: bytes, headers: dict[str, str], method: str = "POST") -> tuple[int, dict, bytes]:
    return asgi_request(app, raw, headers, method, path="/jobs")


def test_the_asgi_processor_verifies_runs_once_and_replays():
    recorder = Recorder(failures=1)
    app = asgi_processor(JobProcessorReceiver(SECRET, recorder))
    assert call_asgi(app, *sundial_request(SHARD))[0] == 500
    status, sent, first = call_asgi(app, *sundial_request(SHARD))
    assert (status, sent["content-type"]) == (200, "application/json")
    assert call_asgi(app, *sundial_request(SHARD))[2] == first
    body, headers = sundial_request(SHARD)
    assert json.loads(call_asgi(app, body + b" ", headers)[2])["error"] == "bad_signature"
    assert call_asgi(app, body, headers, method="GET")[0] == 405
    assert len(recorder.calls) == 2


def test_the_lambda_processor_answers_invocations_once_per_step_and_raises_failures():
    """A ``lambda`` processor is invoked with the body as the event, unsigned, and its return
    value is the answer; a failure raises (Lambda's function error, which Sundial retries)."""
    recorder = Recorder(failures=1)
    handler = lambda_processor(JobProcessorReceiver(None, recorder))
    event = json.loads(PhaseCall(JOB, SHARD).body())
    with pytest.raises(JobCallFailed, match="the index is locked") as raised:
        handler(event, None)
    assert raised.value.answer.status == 500
    first = handler(event, None)
    assert first["result"]["done"] == 2
    assert handler(json.dumps(event), None) == first
    assert handler(PRE, None) == {"data": [["A", "B"], ["C"]]}
    assert handler(NOTIFY, None) == {}
    assert len(recorder.calls) == 4
    with pytest.raises(InvalidJobCall):
        handler({"job_id": JOB, "phase": "later"}, None)


def test_the_lambda_processor_raises_for_a_step_under_way_and_a_refused_answer():
    store = MemoryStore()
    store.claim("job-step:01JOB:shard:0:1", 60)  # another invocation runs it
    handler = lambda_processor(JobProcessorReceiver(None, Recorder(), store))
    with pytest.raises(JobCallFailed, match="running already") as raised:
        handler(SHARD, None)
    assert raised.value.answer.status == 503

    class Big(ShardingProcessor):
        def sharding_process(self, ctx: JobContext) -> Any:
            return "x" * MAX_ANSWER_BYTES

    with pytest.raises(AnswerTooLarge, match="6291456 bytes"):
        lambda_processor(JobProcessorReceiver(None, Big()))(SHARD, None)


def url_event(body: bytes, headers: dict[str, str], *, encoded: bool = False, method: str = "POST") -> dict:
    """A Lambda function URL's request event (payload format 2.0)."""
    return {
        "version": "2.0",
        "headers": {k.lower(): v for k, v in headers.items()},
        "requestContext": {"http": {"method": method, "path": "/"}},
        "body": base64.b64encode(body).decode() if encoded else body.decode(),
        "isBase64Encoded": encoded,
    }


def test_the_lambda_processor_behind_a_function_url_verifies_the_signature():
    recorder = Recorder()
    handler = lambda_processor(JobProcessorReceiver(SECRET, recorder))
    body, headers = sundial_request(SHARD)
    first = handler(url_event(body, headers), None)
    assert (first["statusCode"], first["headers"]["Content-Type"]) == (200, "application/json")
    again = handler(url_event(*sundial_request(SHARD), encoded=True), None)
    assert again["body"] == first["body"]
    tampered = handler(url_event(body.replace(b'"a"', b'"z"'), headers), None)
    assert (tampered["statusCode"], json.loads(tampered["body"])["error"]) == (401, "bad_signature")
    assert handler(url_event(body, headers, method="GET"), None)["statusCode"] == 405
    assert len(recorder.calls) == 1


# the examples

EXAMPLES = Path(__file__).resolve().parents[2] / "receiver-kit" / "examples"


def load_example(name: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv(SECRET_VARIABLE, SECRET)  # the variable the examples read
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_flask_processor_example_serves_a_job(monkeypatch):
    pytest.importorskip("flask")
    client = load_example("flask_processor", monkeypatch).app.test_client()
    body, headers = sundial_request(SHARD)
    first = client.post("/jobs", data=body, headers=headers)
    assert (first.status_code, first.content_type) == (200, "application/json")
    assert first.get_json() == {"result": {"indexed": 2}}
    assert client.post("/jobs", data=body, headers=headers).data == first.data
    assert client.post("/jobs", data=body + b" ", headers=headers).status_code == 401
    body, headers = sundial_request({**POST, "results": [{"indexed": 2}, {"indexed": 3}]})
    post = client.post("/jobs", data=body, headers=headers)
    assert post.get_json() == {"result": {"indexed": 5}}


def test_the_fastapi_processor_example_serves_a_job(monkeypatch):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    client = TestClient(load_example("fastapi_processor", monkeypatch).app)
    body, headers = sundial_request(SHARD)
    first = client.post("/jobs", content=body, headers=headers)
    assert (first.status_code, first.json()) == (200, {"result": {"indexed": 2}})
    assert client.post("/jobs", content=body, headers=headers).content == first.content
