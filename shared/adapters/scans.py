"""Lambda: the tick's scan requests, as asynchronous invocations of the scanner function.

An adapter of the port ``ScanRequester`` (shared/services/ports/pipeline.py). The tick splits the
shards it found busy into at most ``invocations`` groups and invokes the scanner once per group with
``InvocationType=Event``: Lambda puts the event on its own queue, answers 202 and runs the function
soon after ("Invoking a Lambda function asynchronously", Lambda developer guide). There is no queue
of ours and so no event source mapping, whose pollers long-poll an empty queue all month
(docs/design.md, section 2.2, "why asynchronous invocations").

What Lambda does with such an event, which the stack configures (infra/pipeline.py) and the local
runtime models (local/functions.py):

* an error is retried twice, a minute and then two minutes later, and the event is dropped once
  older than its maximum age (``SCAN_EVENT_MAX_AGE_S``) or sent to the on-failure destination
  (the dead-letter queue, alarmed) once its retries are spent ("Configuring error handling for
  asynchronous invocation");
* a throttled event goes back on Lambda's queue and is tried again until its maximum age;
* an event may run more than once ("even if your function doesn't return an error, it's possible
  for it to receive the same event from Lambda multiple times"): a scan takes its shard's lease
  and skips a request its mark already covers, so a second run stages nothing twice.

A request lost any of these ways loses no occurrence: the shard's mark did not move, so the next
tick finds the same window busy and asks again. A group of all 1,024 shards (the most a deployment
has) takes about 60 KB of the event's 256 KB (``shared.adapters.invoke.MAX_ASYNC_PAYLOAD_BYTES``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from shared.adapters.invoke import invoke_event, lambda_client
from shared.domain.errors import StorageUnavailable
from shared.messages import ScanInvocation, ScanRequest


def groups(shards: Sequence[int], invocations: int) -> list[list[int]]:
    """``shards`` dealt round robin into at most ``invocations`` groups, none empty: the first
    shards found busy start first in every group."""
    count = min(len(shards), invocations)
    return [list(shards[start::count]) for start in range(count)]


class ScanInvoker:
    """The tick's fan-out: one asynchronous invocation of ``function_name`` per group of shards,
    at most ``invocations`` of them a tick (``sundial:scannerMaxConcurrency``): a tick's scans run
    in at most that many environments at once."""

    def __init__(self, function_name: str, invocations: int, client: Callable[[], Any] = lambda_client) -> None:
        self.function_name = function_name
        self.invocations = invocations
        self._client = client

    def request(self, shards: Sequence[int], tick_ms: int, since: Mapping[int, int | None] | None = None) -> None:
        """Every group is invoked even when one invocation is refused; then the first refusal is
        raised (the tick fails, and its next run asks again for whatever was not scanned)."""
        since = since or {}
        refused: list[str] = []
        for group in groups(shards, self.invocations):
            event = ScanInvocation(
                requests=[ScanRequest(shard=shard, tick_ms=tick_ms, since_ms=since.get(shard)) for shard in group]
            )
            try:
                invoke_event(self._client(), self.function_name, event.payload(), f"shards {group}")
            except StorageUnavailable as exc:
                refused.append(exc.message)
        if refused:
            raise StorageUnavailable(f"scan requests: {'; '.join(refused)}")
