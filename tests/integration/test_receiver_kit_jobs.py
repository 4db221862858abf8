"""The receiver kit's job processor against Sundial's own side of the contract: the DynamoDB store
keeping answers on moto (a 6 MiB answer in parts under the 400 KB item limit), and Sundial's
HttpProcessor (its safe HTTP client, signing and 6 MiB read) and LambdaProcessor calling the
kit's WSGI app on loopback and its Lambda handler, every phase, a retry answered the same."""

from __future__ import annotations

import io
import json
import secrets
import threading
from collections.abc import Iterator
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import boto3
import pytest
from moto import mock_aws
from sundial_receiver import DynamoDBStore, JobContext, JobProcessorReceiver, ShardingProcessor
from sundial_receiver.adapters.aws import lambda_processor
from sundial_receiver.adapters.wsgi import wsgi_processor
from sundial_receiver.dedupe import DYNAMODB_PART_BYTES
from sundial_receiver.jobs import MAX_ANSWER_BYTES

from shared.delivery.processor import HttpProcessor, LambdaProcessor, http_client
from shared.domain.jobs import ProcessorFailed, ProcessorRetryable, ReportedError
from shared.domain.signing import Signer
from shared.domain.tasks import HttpTarget, LambdaTarget
from tests.unit.test_receiver_kit_jobs import NOTIFY, POST, PRE, SECRET, SHARD, load_example

pytestmark = pytest.mark.integration


@pytest.fixture
def table() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName="steps",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield client


def test_dynamodb_store_keeps_an_answer_until_it_expires(table):
    now = [1_000_000.0]
    store = DynamoDBStore("steps", client=table, clock=lambda: now[0])
    assert store.load("k") is None
    assert store.claim("k", ttl=60)
    assert store.load("k") is None  # claimed only: under way
    store.save("k", b'{"result":"\xc3\xa9"}', ttl=3600)
    assert store.load("k") == b'{"result":"\xc3\xa9"}'
    item = table.get_item(TableName="steps", Key={"pk": {"S": "sundial-run#k"}})["Item"]
    assert (item["expires"], item["parts"], item["bytes"]) == ({"N": "1003600"}, {"N": "1"}, {"N": "15"})
    now[0] += 120  # the lease would have passed: the answer keeps the key claimed
    assert not store.claim("k", ttl=60)
    now[0] += 3600  # DynamoDB's TTL deletes late: an expired answer no longer counts
    assert store.load("k") is None
    assert store.claim("k", ttl=60)


def test_dynamodb_store_keeps_a_6_mib_answer_in_parts(table):
    """An item holds 400 KB; an answer may be 6 MiB (random bytes: zlib cannot shrink them)."""
    store = DynamoDBStore("steps", client=table)
    answer = b'{"result":"' + secrets.token_hex(MAX_ANSWER_BYTES // 2 - 8).encode() + b'"}'
    assert len(answer) <= MAX_ANSWER_BYTES
    store.save("big", answer, ttl=60)
    assert store.load("big") == answer
    head = table.get_item(TableName="steps", Key={"pk": {"S": "sundial-run#big"}})["Item"]
    assert int(head["parts"]["N"]) > len(answer) // 2 // DYNAMODB_PART_BYTES  # hex zips to about half
    table.delete_item(TableName="steps", Key={"pk": {"S": "sundial-run#big#part2"}})
    assert store.load("big") is None  # a part gone: as if never answered


class Indexer(ShardingProcessor):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def pre_process(self, ctx: JobContext) -> Any:
        self.calls.append(ctx.key)
        return [level[::-1] for level in ctx.data]

    def sharding_process(self, ctx: JobContext) -> Any:
        self.calls.append(ctx.key)
        return {"items": ctx.items, "nonce": secrets.token_hex(4)}

    def notify(self, ctx: JobContext) -> Any:
        self.calls.append(ctx.key)

    def post_process(self, ctx: JobContext) -> Any:
        self.calls.append(ctx.key)
        return {"shards": len(ctx.results or [])}


class Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def served(table) -> Iterator[tuple[str, Indexer]]:
    """The kit's WSGI processor on loopback, its answers in DynamoDB."""
    indexer = Indexer()
    app = wsgi_processor(JobProcessorReceiver(SECRET, indexer, DynamoDBStore("steps", client=table)))
    server: WSGIServer = make_server("127.0.0.1", 0, app, handler_class=Quiet)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/jobs", indexer
    server.shutdown()
    server.server_close()


def test_sundials_http_processor_calls_the_kit_every_phase_once_and_a_retry_gets_the_same(served):
    url, indexer = served
    processor = HttpProcessor(
        HttpTarget(url=url, timeout_seconds=10), http_client(allow_loopback=True, allow_private=True)
    )
    processor.signer = lambda: Signer.of([SECRET])
    assert processor.call("01JOB", PRE) == {"data": [["b", "a"], ["c"]]}
    shard = processor.call("01JOB", SHARD)
    assert shard["result"]["items"] == ["a", "b"]
    assert processor.call("01JOB", SHARD) == shard  # Step Functions' retry of the step
    assert processor.call("01JOB", NOTIFY) == {}
    assert processor.call("01JOB", POST) == {"result": {"shards": 3}}
    assert indexer.calls == ["01JOB:pre", "01JOB:shard:0:1", "01JOB:notify:30", "01JOB:post"]


def test_sundial_fails_an_unsigned_call_for_good_and_retries_a_step_under_way(served, table):
    url, _ = served
    client = http_client(allow_loopback=True, allow_private=True)
    unsigned = HttpProcessor(HttpTarget(url=url, timeout_seconds=10), client)
    with pytest.raises(ProcessorFailed, match="401"):  # a 4xx: the job fails, no retry
        unsigned.call("01JOB", SHARD)
    signed = HttpProcessor(HttpTarget(url=url, timeout_seconds=10), client, lambda: Signer.of([SECRET]))
    DynamoDBStore("steps", client=boto3.client("dynamodb", region_name="us-east-1")).claim(
        "job-step:01JOB:shard:0:2", 60
    )
    with pytest.raises(ProcessorRetryable, match="503"):  # under way elsewhere: retried
        signed.call("01JOB", {**SHARD, "shard": 2})


class FakeLambda:
    """boto3's lambda client's ``invoke``, running the kit's handler in-process as Lambda would:
    the return value as JSON, an exception as a function error."""

    def __init__(self, handler: Any) -> None:
        self.handler = handler

    def invoke(self, FunctionName: str, InvocationType: str, Payload: bytes) -> dict[str, Any]:
        try:
            result, error = json.dumps(self.handler(json.loads(Payload), None)).encode(), None
        except Exception as exc:
            result, error = (
                json.dumps({"errorMessage": str(exc), "errorType": type(exc).__name__}).encode(),
                "Unhandled",
            )
        answer: dict[str, Any] = {"StatusCode": 200, "Payload": io.BytesIO(result)}
        if error:
            answer["FunctionError"] = error
        return answer


def test_sundials_lambda_processor_invokes_the_kit_every_phase_once(table):
    indexer = Indexer()
    handler = lambda_processor(JobProcessorReceiver(None, indexer, DynamoDBStore("steps", client=table)))
    processor = LambdaProcessor(LambdaTarget("arn:aws:lambda:us-east-1:123456789012:function:p"), FakeLambda(handler))
    assert processor.call("01JOB", PRE) == {"data": [["b", "a"], ["c"]]}
    shard = processor.call("01JOB", SHARD)
    assert processor.call("01JOB", SHARD) == shard
    assert processor.call("01JOB", NOTIFY) == {}
    assert processor.call("01JOB", POST) == {"result": {"shards": 3}}
    assert len(indexer.calls) == 4
    table.put_item(
        TableName="steps", Item={"pk": {"S": "sundial-run#job-step:01JOB:shard:0:2"}, "expires": {"N": "1e10"}}
    )
    with pytest.raises(ProcessorRetryable, match="the processor function failed") as raised:  # under way elsewhere
        processor.call("01JOB", {**SHARD, "shard": 2})
    assert "running already" in str(raised.value)


class NoUserId(ShardingProcessor):
    """Reads each item's ``user_id``: an item without one raises ``KeyError('user_id')``."""

    def sharding_process(self, ctx: JobContext) -> Any:
        return [item["user_id"] for item in ctx.items or []]


def test_sundial_reads_what_a_kit_processors_method_raised_over_http(table):
    app = wsgi_processor(JobProcessorReceiver(SECRET, NoUserId(), DynamoDBStore("steps", client=table)))
    server: WSGIServer = make_server("127.0.0.1", 0, app, handler_class=Quiet)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        processor = HttpProcessor(
            HttpTarget(url=f"http://127.0.0.1:{server.server_port}/jobs", timeout_seconds=10),
            http_client(allow_loopback=True, allow_private=True),
            lambda: Signer.of([SECRET]),
        )
        with pytest.raises(ProcessorRetryable) as raised:  # a 500: retried
            processor.call("01JOB", {**SHARD, "items": [{"name": "a"}]})
    finally:
        server.shutdown()
        server.server_close()
    failure = raised.value.failure
    assert failure is not None
    assert failure.error == ReportedError("KeyError", "'user_id'")
    assert failure.sentence() == "shard 1 of level 0 failed: KeyError: 'user_id' (the processor answered HTTP 500)"
    assert SECRET not in failure.message()


def test_sundial_reads_what_a_kit_lambda_processors_method_raised(table):
    handler = lambda_processor(JobProcessorReceiver(None, NoUserId(), DynamoDBStore("steps", client=table)))
    processor = LambdaProcessor(LambdaTarget("arn:aws:lambda:us-east-1:123456789012:function:p"), FakeLambda(handler))
    with pytest.raises(ProcessorRetryable) as raised:  # Lambda's function error: retried
        processor.call("01JOB", {**SHARD, "items": [{"name": "a"}]})
    failure = raised.value.failure
    assert failure is not None
    assert failure.error == ReportedError("KeyError", "'user_id'")
    assert failure.sentence() == "shard 1 of level 0 failed: KeyError: 'user_id' (the processor function failed)"


def test_the_lambda_processor_example_keeps_its_answers_in_dynamodb(table, monkeypatch):
    monkeypatch.setenv("ANSWERS_TABLE", "steps")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    module = load_example("lambda_processor", monkeypatch)
    assert module.handler(SHARD, None) == {"result": {"indexed": 2}}
    assert module.store.load("job-step:01JOB:shard:0:1") == b'{"result":{"indexed":2}}'
