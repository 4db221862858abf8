"""SQS: staging occurrences into the delay queues, retries, dead letters.

An adapter of the port ``DelayQueues`` (shared/services/ports/pipeline.py), in the adapters' layer
(shared/adapters/__init__.py)."""

from __future__ import annotations

import json
import zlib
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import cache
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from shared.domain.errors import StorageUnavailable
from shared.domain.firing import MAX_DELAY_SECONDS, Staged, delay_seconds
from shared.domain.tasks import Priority
from shared.domain.times import iso, utc_now
from shared.messages import staged_message

BATCH = 10


@cache
def _sqs() -> Any:
    return boto3.client("sqs")


class SqsStager:
    """Sends staged occurrences to the delay queues, ten per call, each with its own delay."""

    def __init__(
        self,
        delay_queue_urls: Sequence[str],
        dead_letter_queue_url: str,
        lead_ms: int,
        client: Callable[[], Any] = _sqs,
        high_priority_queue_url: str | None = None,
    ) -> None:
        if not delay_queue_urls:
            raise ValueError("at least one delay queue")
        self.queues = tuple(delay_queue_urls)
        self.dead_letter_queue_url = dead_letter_queue_url
        self.lead_ms = lead_ms
        self._client = client
        self.high_priority_queue_url = high_priority_queue_url
        """High-priority occurrences' own queue (their own trigger); None: they share the others."""

    def queue_of(self, staged: Staged) -> str:
        if staged.priority is Priority.HIGH and self.high_priority_queue_url:
            return self.high_priority_queue_url
        return self.queues[zlib.crc32(staged.run_id.encode()) % len(self.queues)]

    def stage(self, occurrences: Sequence[Staged], now_ms: int) -> None:
        """Every occurrence lands on its queue, visible ``lead_ms`` (+ < 1 s) before it is due."""
        self.send([(staged, delay_seconds(staged.due_ms, now_ms, self.lead_ms)) for staged in occurrences])

    def send(self, messages: Sequence[tuple[Staged, int]]) -> None:
        by_queue: dict[str, list[tuple[Staged, int]]] = defaultdict(list)
        for staged, delay in messages:
            by_queue[self.queue_of(staged)].append((staged, max(0, min(MAX_DELAY_SECONDS, delay))))
        # High-priority occurrences go first: a scan staging a flood sends them before it, not
        # after (their delays were computed when the scan began).
        for queue, entries in sorted(by_queue.items(), key=lambda item: item[0] != self.high_priority_queue_url):
            for start in range(0, len(entries), BATCH):
                self._send_batch(queue, entries[start : start + BATCH])

    def _send_batch(self, queue: str, entries: Sequence[tuple[Staged, int]]) -> None:
        pending = {
            str(i): {"Id": str(i), "MessageBody": json.dumps(staged_message(s)), "DelaySeconds": d}
            for i, (s, d) in enumerate(entries)
        }
        for _ in range(3):  # entries that failed are sent again; a failure after that is raised
            try:
                answer = self._client().send_message_batch(QueueUrl=queue, Entries=list(pending.values()))
            except (BotoCoreError, ClientError) as exc:
                raise StorageUnavailable(f"staging into {queue}: {exc}") from exc
            pending = {f["Id"]: pending[f["Id"]] for f in answer.get("Failed", [])}
            if not pending:
                return
        raise StorageUnavailable(f"staging into {queue}: {len(pending)} messages refused")

    def dead_letter(
        self, staged: Staged, reason: str, task_id: str | None = None, failed_at: datetime | None = None
    ) -> None:
        """The raw message, for the DLQ's alarm and for operators; ``task_id``: the task the
        occurrence belongs to (an extra run's parent), the API lists it from the table."""
        body = {
            **staged_message(staged),
            "task_id": task_id or staged.task_id,
            "run_id": staged.run_id,
            "reason": reason,
            "failed_at": iso(failed_at or utc_now()),
        }
        try:
            self._client().send_message(QueueUrl=self.dead_letter_queue_url, MessageBody=json.dumps(body))
        except (BotoCoreError, ClientError) as exc:
            raise StorageUnavailable(f"dead-lettering {staged.run_id}: {exc}") from exc
