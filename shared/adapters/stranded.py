"""SQS and Lambda: the tick's look at the stranded queue, and its drain invocation.

An adapter of the port ``StrandedQueue`` (shared/services/ports/pipeline.py). SQS moves a
delay-queue message to the stranded queue after its last receive (shared/topology.py, ``STRANDED``);
such messages are rare and already late, so no event source mapping polls the queue (its pollers'
empty long polls, about 15 ReceiveMessage calls a minute, cost more than the rest of an idle stack:
bench/bill.py). Instead, once a minute:

* the tick asks for the queue's ``ApproximateNumberOfMessages`` (GetQueueAttributes: "the
  approximate number of messages available for retrieval from the queue", Amazon SQS API
  Reference). The count is approximate and eventually consistent ("may not achieve consistency
  until at least 1 minute after the producers stop sending messages"): a message it misses is
  seen by a later tick, and a count of messages already gone costs one drain that receives
  nothing;
* when it is above zero, the tick invokes the recovering trigger with ``InvocationType=Event``
  and a :class:`~shared.messages.DrainInvocation` ("Invoking a Lambda function asynchronously",
  Lambda developer guide): Lambda answers 202 and runs it soon after; the function receives the
  queue's messages itself (functions/recover/drain.py). The stack gives the function no retry and
  a maximum event age of a minute (infra/pipeline.py): an event lost any way is asked for again by
  the next tick while messages wait.

Either call's failure is :class:`StorageUnavailable`, which the tick logs and goes on
(``Ticker``)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from shared.adapters.invoke import invoke_event, lambda_client
from shared.domain.errors import StorageUnavailable
from shared.messages import DrainInvocation

WAITING = "ApproximateNumberOfMessages"
"""Messages available for retrieval: not those in flight (a drain holds them, or a failed one
waits out its visibility timeout) nor delayed (the stranded queue delays none)."""


@cache
def _sqs() -> Any:
    return boto3.client("sqs")


class StrandedWatch:
    """The stranded queue at ``queue_url``, drained by ``function_name``."""

    def __init__(
        self,
        queue_url: str,
        function_name: str,
        sqs: Callable[[], Any] = _sqs,
        lambda_client: Callable[[], Any] = lambda_client,
    ) -> None:
        self.queue_url = queue_url
        self.function_name = function_name
        self._sqs = sqs
        self._lambda = lambda_client

    def waiting(self) -> bool:
        try:
            answer = self._sqs().get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=[WAITING])
        except (BotoCoreError, ClientError) as exc:
            raise StorageUnavailable(f"the stranded queue's depth: {exc}") from exc
        return int(answer.get("Attributes", {}).get(WAITING, 0)) > 0

    def drain(self) -> None:
        invoke_event(
            self._lambda(), self.function_name, DrainInvocation(drain=True).payload(), "the stranded queue's drain"
        )
