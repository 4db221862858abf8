"""Lambda's asynchronous invocation as the local runtime models it (local/functions.py): moto's
Lambda answers an ``InvocationType=Event`` call only after running the function (it runs every
invocation synchronously), so the runtime's function server answers 202 at once and runs the
event on its workers, retrying a failure after each configured wait and handing a spent one to its
on-failure destination, as the stack configures the scanner's (infra/pipeline.py)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from local.functions import EventInvokeConfig, FunctionServer
from local.moto_server import FAKE_ENV, MotoServer
from local.settings import FUNCTIONS_URL_ENV

pytestmark = pytest.mark.integration

WAIT_S = 10


@pytest.fixture(scope="module")
def lambdas() -> Iterator[tuple[FunctionServer, Any]]:
    functions = FunctionServer()
    functions.start()
    moto = MotoServer(env={FUNCTIONS_URL_ENV: functions.url})
    moto.start()
    client = boto3.client("lambda", endpoint_url=moto.endpoint, region_name=FAKE_ENV["AWS_REGION"])
    try:
        yield functions, client
    finally:
        moto.stop()
        functions.stop()


def test_an_event_invocation_is_accepted_before_the_function_runs(lambdas: tuple[FunctionServer, Any]) -> None:
    functions, client = lambdas
    release, done = threading.Event(), threading.Event()
    seen: list[Any] = []

    def slow(event: Any, context: Any) -> None:
        release.wait(WAIT_S)
        seen.append(event)
        done.set()

    functions.handlers["slow"] = slow
    answer = client.invoke(FunctionName="slow", InvocationType="Event", Payload=json.dumps({"n": 1}))
    assert answer["StatusCode"] == 202
    assert seen == []  # answered while the function still waits
    release.set()
    assert done.wait(WAIT_S)
    assert seen == [{"n": 1}]


def test_a_failed_event_is_retried_after_each_wait_then_succeeds(lambdas: tuple[FunctionServer, Any]) -> None:
    functions, client = lambdas
    attempts: list[Any] = []
    done, failures = threading.Event(), []

    def flaky(event: Any, context: Any) -> None:
        attempts.append(event)
        if len(attempts) < 3:
            raise RuntimeError(f"attempt {len(attempts)} failed")
        done.set()

    functions.handlers["flaky"] = flaky
    functions.event_configs["flaky"] = EventInvokeConfig(
        retry_delays_s=(0.01, 0.02), on_failure=lambda *failed: failures.append(failed)
    )
    assert client.invoke(FunctionName="flaky", InvocationType="Event", Payload=b'{"n": 2}')["StatusCode"] == 202
    assert done.wait(WAIT_S)
    assert attempts == [{"n": 2}] * 3
    assert failures == []


def test_a_spent_event_goes_to_its_on_failure_destination_once(lambdas: tuple[FunctionServer, Any]) -> None:
    functions, client = lambdas
    attempts: list[Any] = []
    failed = threading.Event()
    failures: list[tuple[str, Any, BaseException]] = []

    def broken(event: Any, context: Any) -> None:
        attempts.append(event)
        raise ValueError("the table refused")

    def destination(name: str, event: Any, error: BaseException) -> None:
        failures.append((name, event, error))
        failed.set()

    functions.handlers["broken"] = broken
    functions.event_configs["broken"] = EventInvokeConfig(retry_delays_s=(0.01, 0.01), on_failure=destination)
    client.invoke(FunctionName="broken", InvocationType="Event", Payload=b'{"n": 3}')
    assert failed.wait(WAIT_S)
    assert len(attempts) == 3  # the first and Lambda's two retries
    ((name, event, error),) = failures
    assert (name, event, str(error)) == ("broken", {"n": 3}, "the table refused")


def test_a_request_response_invocation_still_answers_the_result_and_an_unknown_function_is_not_found(
    lambdas: tuple[FunctionServer, Any],
) -> None:
    functions, client = lambdas
    functions.handlers["echo"] = lambda event, context: {
        "got": event,
        "left_ms": context.get_remaining_time_in_millis(),
    }
    functions.event_configs["echo"] = EventInvokeConfig(timeout_s=60)
    answer = json.loads(client.invoke(FunctionName="echo", Payload=b'{"n": 4}')["Payload"].read())
    assert answer["got"] == {"n": 4}
    assert 50_000 < answer["left_ms"] <= 60_000  # the function's own timeout, counted down
    # Lambda raises ResourceNotFoundException; moto's server answers 200 with "{}" for a function
    # it has not got: either way not the 202 the tick's invoker takes for accepted (shared/adapters/scans.py)
    try:
        status = client.invoke(FunctionName="nobody", InvocationType="Event", Payload=b"{}")["StatusCode"]
    except ClientError as missing:
        status = missing.response["ResponseMetadata"]["HTTPStatusCode"]
    assert status != 202


def test_the_runtimes_scanner_destination_sends_lambdas_invocation_record(lambdas: tuple[FunctionServer, Any]) -> None:
    """What the dead-letter queue gets for a scan invocation whose retries are spent."""
    from local.runtime import Runtime

    endpoint = lambdas[1].meta.endpoint_url
    sqs = boto3.client("sqs", endpoint_url=endpoint, region_name=FAKE_ENV["AWS_REGION"])
    url = sqs.create_queue(QueueName="async-dead-letters")["QueueUrl"]
    Runtime._dead_letter_event(sqs, url)("sundial-scanner", {"requests": [{"shard": 1}]}, KeyError("mark"))
    (message,) = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)["Messages"]
    record = json.loads(message["Body"])
    assert record["requestContext"]["condition"] == "RetriesExhausted"
    assert record["requestContext"]["functionArn"].endswith(":function:sundial-scanner:$LATEST")
    assert record["requestPayload"] == {"requests": [{"shard": 1}]}
    assert record["responsePayload"]["errorType"] == "KeyError"


def test_the_ticks_drain_of_the_stranded_queue_reaches_the_recovering_trigger_once(
    lambdas: tuple[FunctionServer, Any],
) -> None:
    """The tick's look (shared/adapters/stranded.py) through moto's SQS and Lambda to the function server,
    with the config local/runtime.py gives the recovering trigger (no retry): nothing waiting, no
    drain; a message waiting, one drain event, and a failed drain is not retried (the stack's
    ``MaximumRetryAttempts`` 0: the next tick asks again)."""
    from shared.adapters.stranded import StrandedWatch

    functions, client = lambdas
    sqs = boto3.client("sqs", endpoint_url=client.meta.endpoint_url, region_name=FAKE_ENV["AWS_REGION"])
    url = sqs.create_queue(QueueName="sundial-stranded-watched")["QueueUrl"]
    events: list[Any] = []
    ran = threading.Event()

    def failing_drain(event: Any, context: Any) -> None:
        events.append(event)
        ran.set()
        raise RuntimeError("the drain failed")

    functions.handlers["sundial-recover-watched"] = failing_drain
    functions.event_configs["sundial-recover-watched"] = EventInvokeConfig(timeout_s=120)
    watch = StrandedWatch(url, "sundial-recover-watched", sqs=lambda: sqs, lambda_client=lambda: client)
    assert not watch.waiting()
    sqs.send_message(QueueUrl=url, MessageBody="{}")
    assert watch.waiting()
    watch.drain()
    assert ran.wait(WAIT_S)
    assert not threading.Event().wait(0.5)  # room for a retry that must not come
    assert events == [{"drain": True}]
