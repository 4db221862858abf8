"""Dead letters in DynamoDB: ``DL#<tenant>`` / ``<run id>`` (see DeadLetterItem).

The SQS dead-letter queue keeps the raw message (and drives the DLQ-depth alarm); this item is
what the API lists, shows and redrives. A tenant's dead letters share a partition: they are
rare by nature (a run that failed every attempt), far below a partition's 1,000 writes/s.

A letter waiting for a redrive is in the status index ``by_status`` (docs/status-index.md): it
carries ``spk``/``ssk`` from the write that records it until the redrive's write removes them
(``DynamoTaskRepository.create_run``), its entries spread over the deployment's list shards by
run id (a failure storm dead-letters thousands a second, from the firing path). The waiting
letters are listed and counted from there, full pages whatever the tenant's redriven ones.

Any other list reads at most :data:`READ_BUDGET` letters per request, whatever its filter finds:
a tenant with thousands of letters of the other status would otherwise be read without bound
inside one API request (the function's 10 s, API Gateway's 29 s). A page that stops on the budget
is short, even empty, with a cursor from the last letter read. A letter past its retention is left out: DynamoDB
deletes expired items only eventually, "typically within a few days" ("Using time to live (TTL)
in DynamoDB"), so the item may still be there.
"""

from __future__ import annotations

import json
from typing import Any

from pynamodb.exceptions import DoesNotExist, PynamoDBException

from shared.domain.codec import compact_json, retry_from_dict, retry_to_dict, target_from_dict, target_to_dict
from shared.domain.errors import DeadLetterNotFound, StorageUnavailable
from shared.domain.states import LetterStatus
from shared.domain.tasks import DeadLetter, Page
from shared.domain.times import from_ms, to_ms, utc_now
from shared.domain.workflows import NodeRef
from shared.store import status_index
from shared.store.keys import decode_cursor, encode_cursor, status_pk
from shared.store.models import DeadLetterItem, is_conflict

READ_BUDGET = 200
"""Letters one list request reads at most (at least a full page, 101, read to know there is
more). A letter is at most a few tens of KB (32 KiB of payload, five targets): 200 are a few MB,
read in a few 1 MB Query pages, each a round trip of tens of milliseconds."""


WAITING = LetterStatus.DEAD_LETTERED
"""The letters the status index holds: those waiting for a redrive."""


def status_keys(letter: DeadLetter, list_shards: int) -> tuple[str, str] | None:
    """A letter's keys in the status index (``spk``, ``ssk``: docs/status-index.md) while it waits
    for a redrive, at its run id (a ULID of its due time: newest last), or None once redriven."""
    return waiting_keys(letter.tenant, letter.run_id, list_shards) if letter.status is WAITING else None


def waiting_keys(tenant: str, run_id: str, list_shards: int) -> tuple[str, str]:
    """A waiting letter's status index keys from its tenant and run id."""
    return status_pk(tenant, "letter", WAITING.value, run_id, list_shards), run_id


def to_item(letter: DeadLetter, expires_ms: int, list_shards: int = 1) -> DeadLetterItem:
    spk, ssk = status_keys(letter, list_shards) or (None, None)
    return DeadLetterItem(
        f"DL#{letter.tenant}",
        letter.run_id,
        tenant=letter.tenant,
        task_id=letter.task_id,
        run_id=letter.run_id,
        due_ms=to_ms(letter.scheduled_for),
        failed_ms=to_ms(letter.failed_at),
        attempts=letter.attempts,
        reason=letter.reason[:2000],
        status=letter.status.value,
        name=letter.name,
        targets=compact_json([target_to_dict(t) for t in letter.targets]),
        multicast=letter.multicast,
        payload=None if letter.payload is None else compact_json(letter.payload),
        retry=compact_json(retry_to_dict(letter.retry)),
        workflow=None if letter.workflow is None else compact_json(letter.workflow.to_dict()),
        schedule_arn=letter.schedule_arn,
        expires_at=from_ms(expires_ms),
        spk=spk,
        ssk=ssk,
    )


def _schedule_arn(item: DeadLetterItem, targets: list[Any]) -> str | None:
    """The letter's schedule ARN: its own, or, on a letter written when each target kept a copy
    of it, the first target's."""
    if item.schedule_arn is not None:
        return str(item.schedule_arn)
    copies = [body.get("schedule_arn") for t in targets for body in t.values() if isinstance(body, dict)]
    return next((arn for arn in copies if arn), None)


def from_item(item: DeadLetterItem) -> DeadLetter:
    targets = json.loads(item.targets)
    return DeadLetter(
        id=item.run_id,
        tenant=item.tenant,
        task_id=item.task_id,
        run_id=item.run_id,
        scheduled_for=from_ms(int(item.due_ms)),
        failed_at=from_ms(int(item.failed_ms)),
        attempts=int(item.attempts),
        reason=item.reason,
        targets=tuple(target_from_dict(t) for t in targets),
        multicast=bool(item.multicast),
        payload=None if item.payload is None else json.loads(item.payload),
        retry=retry_from_dict(json.loads(item.retry)),
        name=item.name,
        redriven_run_id=item.redriven_run_id,
        redriven_at=from_ms(int(item.redriven_ms)) if item.redriven_ms is not None else None,
        workflow=NodeRef.from_dict(json.loads(item.workflow)) if item.workflow is not None else None,
        schedule_arn=_schedule_arn(item, targets),
    )


class DynamoDeadLetters:
    def __init__(self, retention_ms: int, list_shards: int = 1) -> None:
        self.retention_ms = retention_ms
        self.list_shards = list_shards
        """The deployment's list shards: a waiting letter's status index entry goes to its run id's
        shard (docs/status-index.md)."""

    def record(self, letter: DeadLetter) -> None:
        """Written once per run: a redelivered copy of the same failure changes nothing. A letter
        waiting for a redrive is in the status index from this write on."""
        item = to_item(letter, to_ms(letter.failed_at) + self.retention_ms, self.list_shards)
        try:
            item.save(condition=DeadLetterItem.pk.does_not_exist())
        except PynamoDBException as exc:
            if is_conflict(exc):
                return
            raise StorageUnavailable(f"dead letter {letter.run_id}: {exc.msg}") from exc

    def get(self, tenant: str, letter_id: str) -> DeadLetter:
        try:
            item = DeadLetterItem.get(f"DL#{tenant}", letter_id.upper(), consistent_read=True)
            if item.expired(utc_now()):
                raise DoesNotExist()
            return from_item(item)
        except DoesNotExist as exc:
            raise DeadLetterNotFound(f"dead letter {letter_id!r} not found") from exc
        except PynamoDBException as exc:
            raise StorageUnavailable(f"dead letter {letter_id}: {exc.msg}") from exc

    def list(
        self,
        tenant: str,
        *,
        limit: int,
        cursor: str | None,
        status: LetterStatus | None = None,
        read_budget: int = READ_BUDGET,
    ) -> Page[DeadLetter]:
        """Newest first (run ids are ULIDs of the due time). The letters waiting for a redrive
        (``dead_lettered``) come from the status index: full pages, whatever the tenant's redriven
        ones. Otherwise at most ``read_budget`` letters are read (the ``status`` filter is applied
        to those read: a filter on the server reads, and bills, the same items). ``next_cursor``
        goes on after the last letter of the page when it is full, else after the last one read
        when the budget ran out first (the page is then short, or empty); None once the partition
        has been read to its end."""
        budget = max(read_budget, limit + 1)
        if status is WAITING:
            return self._list_waiting(tenant, limit, cursor, budget)
        position = decode_cursor(cursor) if cursor else None
        condition = DeadLetterItem.sk < position if position else None
        now = utc_now()
        found: list[DeadLetter] = []
        last_read: str | None = None
        read = 0
        try:
            query = DeadLetterItem.query(
                f"DL#{tenant}",
                condition,
                scan_index_forward=False,
                page_size=budget if status else limit + 1,
                limit=budget,
            )
            for item in query:
                read += 1
                last_read = item.sk
                if not item.expired(now) and (status is None or item.status == status):
                    found.append(from_item(item))
                if len(found) > limit:
                    return _page(found[:limit], encode_cursor(found[limit - 1].run_id))
        except PynamoDBException as exc:
            raise StorageUnavailable(f"dead letters: {exc.msg}") from exc
        if read < budget or last_read is None:  # the partition ended before the budget
            return _page(found, None)
        return _page(found, encode_cursor(last_read))

    def _list_waiting(self, tenant: str, limit: int, cursor: str | None, budget: int) -> Page[DeadLetter]:
        """A page of the letters waiting for a redrive through the status index (status_index.page:
        a letter redriven since is left out and the page reads on), for at most ``budget`` entries."""
        now = utc_now()
        try:
            found, after = status_index.page(
                DeadLetterItem,
                tenant,
                "letter",
                [WAITING.value],
                self.list_shards,
                lambda item: item.tenant == tenant and item.status == WAITING and not item.expired(now),
                limit,
                decode_cursor(cursor) if cursor else None,
                budget,
            )
        except PynamoDBException as exc:
            raise StorageUnavailable(f"dead letters: {exc.msg}") from exc
        return _page([from_item(item) for _, item in found], encode_cursor(after) if after else None)

    def count(self, tenant: str, status: LetterStatus) -> int:
        """How many of the tenant's letters wait for a redrive (``dead_lettered``, the status the
        status index holds): exact, whatever the number of its redriven ones; ValueError for
        another status. A letter past its retention counts until DynamoDB's TTL deletes it."""
        if status is not WAITING:
            raise ValueError(f"{status.value} letters are not counted: the status index holds no such letter")
        try:
            return status_index.count(tenant, "letter", [WAITING.value], self.list_shards)
        except PynamoDBException as exc:
            raise StorageUnavailable(f"dead letters: {exc.msg}") from exc


def _page(letters: list[DeadLetter], next_cursor: str | None) -> Page[DeadLetter]:
    return Page(letters, next_cursor, tuple(encode_cursor(letter.run_id) for letter in letters))
