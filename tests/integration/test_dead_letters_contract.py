"""The dead letters on DynamoDB (shared/store/dead_letters.py, the redrive's write in
shared/store/dynamo.py) and in memory (tests/support/firing.py over tests/support/fakes.py) held
to the same contract: the letters waiting for a redrive come from the status index
(docs/status-index.md), full pages whatever the tenant's redriven ones, counted exactly; the
redrive's write takes a letter off."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.domain.registration import new_task
from shared.domain.retry import RetryPolicy
from shared.domain.schedules import At
from shared.domain.states import LetterStatus
from shared.domain.tasks import DeadLetter, DeadLetterRef, HttpTarget, TaskSpec
from shared.domain.times import truncate_ms
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration

NOW = truncate_ms(datetime.now(UTC))
TARGETS = (HttpTarget("https://example.com/hook"),)
WAITING = LetterStatus.DEAD_LETTERED


@dataclass
class Letters:
    letters: Any
    repository: Any

    def record(self, n: int, *, redriven: bool = False, tenant: str = "default") -> str:
        """Letter ``n`` (a higher one is newer), waiting or already redriven."""
        run_id = f"01KA{n:022d}"
        self.letters.record(
            DeadLetter(
                run_id, tenant, f"01KB{n:022d}", run_id, NOW - timedelta(minutes=1), NOW, 3, "retries exhausted",
                TARGETS, False, {"n": n}, RetryPolicy(), redriven_run_id=f"01KC{n:022d}" if redriven else None,
            )
        )  # fmt: skip
        return run_id

    def redrive(self, run_id: str) -> None:
        """The redrive's write: the letter's extra run, marking the letter in the same write."""
        letter = self.letters.get("default", run_id)
        extra = replace(
            new_task(TaskSpec(At(NOW), TARGETS), tenant="default", now=NOW, shard=0), parent_id=letter.task_id
        )
        self.repository.create_run(extra, staged=False, redrive=DeadLetterRef("default", run_id))

    def waiting(self, limit: int = 10) -> list[str]:
        return [letter.id for letter in self.letters.list("default", limit=limit, cursor=None, status=WAITING).items]


@pytest.fixture(params=["memory", "dynamo"])
def store(request: pytest.FixtureRequest) -> Letters:
    if request.param == "memory":
        from tests.support.fakes import InMemoryTaskRepository
        from tests.support.firing import DeadLetters

        repository = InMemoryTaskRepository()
        return Letters(DeadLetters(redriven=repository.redriven), repository)
    request.getfixturevalue("aws")
    from shared.settings.environment import from_env
    from shared.store.dead_letters import DynamoDeadLetters
    from shared.store.dynamo import DynamoTaskRepository
    from shared.store.table import bind_table

    bind_table(from_env().table_name)
    return Letters(DynamoDeadLetters(retention_ms=86_400_000, list_shards=3), DynamoTaskRepository(list_shards=3))


def test_waiting_letters_list_full_pages_and_count_exactly_until_redriven(store: Letters) -> None:
    """Letters waiting among more newer redriven ones than a filtered read reaches (200) are on
    the first page of ``dead_lettered``, counted exactly; a redrive takes one off."""
    waiting = [store.record(n) for n in range(3)]
    for n in range(100, 310):
        store.record(n, redriven=True)
    store.record(5, tenant="other")

    def settled() -> None:  # the index's lag (local/moto_patches/index_lag.py)
        assert store.waiting() == waiting[::-1]
        assert store.letters.count("default", WAITING) == 3
        assert store.letters.count("other", WAITING) == 1

    eventually(settled)
    with pytest.raises(ValueError, match="not counted"):
        store.letters.count("default", LetterStatus.REDRIVEN)

    store.redrive(waiting[1])

    def left() -> None:
        assert store.waiting() == [waiting[2], waiting[0]]
        assert store.letters.count("default", WAITING) == 2

    eventually(left)
    assert store.letters.get("default", waiting[1]).status is LetterStatus.REDRIVEN


def test_a_page_of_waiting_letters_goes_on_from_its_cursor_exactly_once(store: Letters) -> None:
    made = [store.record(n) for n in range(7)]
    store.record(50, redriven=True)

    def paged() -> None:
        seen, sizes, cursor = [], [], None
        while True:
            page = store.letters.list("default", limit=3, cursor=cursor, status=WAITING)
            seen += [letter.id for letter in page.items]
            sizes.append(len(page.items))
            cursor = page.next_cursor
            if cursor is None:
                break
        assert seen == made[::-1]
        assert sizes == [3, 3, 1]

    eventually(paged)
