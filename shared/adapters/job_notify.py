"""Lambda: a ``notify`` threshold a shard's progress report crossed, sent by the job function.

An adapter of the port ``JobNotifier`` (shared/services/ports/jobs.py). The API takes the report and
claims the threshold (one conditional write: each threshold is sent once, whichever of a report or a
shard's end crosses it first); the call to the processor is the job function's, which signs and
sends every processor call. The API invokes it with ``InvocationType=Event`` ("Invoking a Lambda
function asynchronously", Lambda developer guide), so the report's answer never waits for the
processor: a processor reporting from inside its own shard call would otherwise wait on a notify to
itself. The stack gives these invocations no retry (infra/job_runner.py): a notify is sent at most
once, as a shard's end sends it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shared.adapters.invoke import invoke_event, lambda_client
from shared.messages import NotifyStep


class LambdaJobNotifier:
    def __init__(self, function_name: str, client: Callable[[], Any] = lambda_client) -> None:
        self.function_name = function_name
        self._client = client

    def notify(self, job_id: str, threshold: int, done_items: int, total_items: int) -> None:
        event = NotifyStep(
            step="notify", job_id=job_id, threshold=threshold, done_items=done_items, total_items=total_items
        )
        invoke_event(self._client(), self.function_name, event.payload(), f"the notify at {threshold} %")
