"""Each function parses its event once, at its edge (shared/messages.py): a queue's record that
is not what its queue carries fails alone (a partial batch failure, so SQS hands it out again
and, after its receives, dead-letters it), and the rest of its batch goes on; the scanner's
asynchronous invocation fails whole, saying which field is wrong."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared.domain.firing import staged_for
from shared.domain.ids import new_task_id
from shared.messages import staged_message
from shared.topology import STRANDED

pytestmark = pytest.mark.integration

MALFORMED = "{not json"


def batch_of(pipeline: Any, queue: str, bodies: list[str]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """``bodies`` sent to ``queue`` and received back as one batch; (messages, body -> id)."""
    from local.sqs_lambda import receive

    ids = {
        body: pipeline.sqs.send_message(QueueUrl=pipeline.urls[queue], MessageBody=body)["MessageId"] for body in bodies
    }
    messages: list[dict[str, Any]] = []
    while len(messages) < len(bodies):
        messages += receive(pipeline.sqs, pipeline.urls[queue], wait_s=1)
    return messages, ids


def invoke(pipeline: Any, queue: str, handler: Any, messages: list[dict[str, Any]]) -> list[str]:
    from local.sqs_lambda import invoke_batch

    return invoke_batch(pipeline.sqs, pipeline.urls[queue], pipeline.arns[queue], handler, messages)


def test_a_malformed_scan_invocation_fails_whole_naming_the_field(pipeline) -> None:
    """The tick's asynchronous invocation is one event, not a batch: a malformed one fails (Lambda
    retries it, then sends it to the dead-letter queue), and the error names the field."""
    from functions.records import MalformedEvent
    from functions.scanner.handler import handler as scanner
    from shared.topology import SCANNER_TIMEOUT_S
    from tests.support.events import FakeLambdaContext

    context = FakeLambdaContext(timeout_s=SCANNER_TIMEOUT_S)
    assert scanner({"requests": [{"shard": 0}]}, context)["scanned"] == [0]
    for event, field in [
        ({"requests": [{"shard": 0}, {"shard": "first"}]}, "requests.1.shard"),
        ({"requests": []}, "requests"),
        ({"shard": 0}, "requests"),
    ]:
        with pytest.raises(MalformedEvent) as refused:
            scanner(event, context)
        assert f"{field}:" in str(refused.value)


def occurrence_of_no_task() -> str:
    """A well-formed staged message whose task does not exist: the trigger drops it (a success)."""
    return json.dumps(staged_message(staged_for(new_task_id(1_000, 0), 1_000, one_shot=True)))


@pytest.mark.parametrize("queue", ["delay-0", STRANDED.name])
def test_a_malformed_staged_message_fails_alone(pipeline, queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The trigger's batch from its event source; the recovering trigger's from its own drain of
    the stranded queue (the tick's drain event), which deletes the good message and leaves the
    failed ones in flight, to come back after the queue's visibility timeout."""
    from functions.recover import handler as recover
    from functions.trigger.handler import handler as trigger
    from shared.topology import TRIGGER_TIMEOUT_S
    from tests.integration.conftest import held
    from tests.support.events import FakeLambdaContext

    good, wrong = occurrence_of_no_task(), json.dumps({"t": "01KA0000000000000000000000", "d": "soon", "r": "x"})
    if queue != STRANDED.name:
        messages, ids = batch_of(pipeline, queue, [good, MALFORMED, wrong])
        assert sorted(invoke(pipeline, queue, trigger, messages)) == sorted([ids[MALFORMED], ids[wrong]])
        return
    ids = {
        body: pipeline.sqs.send_message(QueueUrl=pipeline.urls[queue], MessageBody=body)["MessageId"]
        for body in (good, MALFORMED, wrong)
    }
    answers: list[Any] = []
    fire = recover.fire_last_deliveries

    def recorded(event: dict[str, Any], context: Any) -> Any:
        answers.append(fire(event, context))
        return answers[-1]

    monkeypatch.setattr(recover, "fire_last_deliveries", recorded)
    drained = recover.handler({"drain": True}, FakeLambdaContext(timeout_s=TRIGGER_TIMEOUT_S))
    assert (drained["received"], drained["deleted"], drained["failed"]) == (3, 1, 2)
    failed = [f["itemIdentifier"] for answer in answers for f in answer["batchItemFailures"]]
    assert sorted(failed) == sorted([ids[MALFORMED], ids[wrong]])
    assert held(pipeline, queue) == 2  # in flight, not deleted


def test_a_batch_of_malformed_staged_messages_fails_whole_saying_why(pipeline) -> None:
    """Every record failed: Powertools raises, and the error names each message's problem."""
    from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

    from functions.trigger.handler import handler as trigger
    from local.sqs_lambda import sqs_event
    from tests.support.events import FakeLambdaContext

    messages, ids = batch_of(pipeline, "delay-0", [MALFORMED])
    with pytest.raises(BatchProcessingError) as failed:
        trigger(sqs_event(messages, pipeline.arns["delay-0"]), FakeLambdaContext())
    assert f"message {ids[MALFORMED]} is not a StagedRecord: body: Invalid JSON" in str(failed.value)


def test_a_batch_is_not_handed_out_again_while_its_handler_still_runs(pipeline) -> None:
    """Lambda's event source never hands a message out while the invocation holding it runs (the
    queue's visibility timeout is at least the function's timeout, and the invocation stops at
    its timeout): local/sqs_lambda.py keeps a batch out of sight while its handler works on it,
    however long. Without it a loaded machine's slow batch came back, was claimed again after its
    lease and fired twice. Once the handler fails, its message comes back as usual."""
    import threading

    from local.sqs_lambda import invoke_batch, receive

    queue = "delay-0"
    url = pipeline.urls[queue]
    pipeline.sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "2"})
    messages, _ = batch_of(pipeline, queue, [occurrence_of_no_task()])
    started, release = threading.Event(), threading.Event()

    def slow_handler(event: dict[str, Any], context: Any) -> None:
        started.set()
        release.wait(10)
        raise RuntimeError("the batch failed")  # its message stays on the queue

    worker = threading.Thread(
        target=invoke_batch, args=(pipeline.sqs, url, pipeline.arns[queue], slow_handler, messages)
    )
    worker.start()
    try:
        assert started.wait(10)
        # two visibility timeouts of the handler's run: on moto alone the message was back after one
        seen_meanwhile = [m for _ in range(4) for m in receive(pipeline.sqs, url, wait_s=1)]
        assert seen_meanwhile == []
    finally:
        release.set()
        worker.join(10)
    again: list[dict[str, Any]] = []
    for _ in range(6):
        again += receive(pipeline.sqs, url, wait_s=1)
        if again:
            break
    assert [m["MessageId"] for m in again] == [messages[0]["MessageId"]]
