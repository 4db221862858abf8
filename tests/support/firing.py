"""The trigger's four steps wired over in-memory ports and a fake clock (tests/unit/test_trigger.py):
the task repository and pipeline store of tests/support (held to DynamoDB's contract), queues that
keep what was sent, a delivery that answers as scripted, and a clock that only moves when the
trigger waits (``sleep``) or a test says so. No thread sleeps, no wall clock."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from shared.delivery import Envelope, Outcome
from shared.domain.claims import Handled
from shared.domain.errors import DeadLetterNotFound
from shared.domain.firing import Staged, Timing
from shared.domain.registration import new_task
from shared.domain.states import LetterStatus
from shared.domain.tasks import DeadLetter, HttpTarget, Page, Target, Task, TaskSpec
from shared.services.firing import Trigger
from shared.services.firing.alerts import AlertSender
from shared.services.firing.call import Caller
from shared.services.firing.claim import Claimer
from shared.services.firing.record import Recorder
from shared.store.keys import decode_cursor, encode_cursor
from tests.support.fakes import InMemoryTaskRepository
from tests.support.pipeline_store import InMemoryPipelineStore

RETENTION = timedelta(days=30)


@dataclass
class FakeClock:
    now: int

    def __call__(self) -> int:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += round(seconds * 1000)

    def advance(self, ms: int) -> None:
        self.now += ms


@dataclass
class Queues:
    """The delay queues and the DLQ: what the trigger sent, in order."""

    staged: list[Staged] = field(default_factory=list)
    sent: list[tuple[Staged, int]] = field(default_factory=list)
    dead: list[tuple[Staged, str, str | None]] = field(default_factory=list)
    """The DLQ's messages: the occurrence, why, and the task (its ``task_id`` attribute)."""

    def stage(self, occurrences: Any, now_ms: int) -> None:
        self.staged.extend(occurrences)

    def send(self, messages: Any) -> None:
        self.sent.extend(messages)

    def dead_letter(self, staged: Staged, reason: str, task_id: str | None = None) -> None:
        self.dead.append((staged, reason, task_id))


@dataclass
class DeadLetters:
    """The dead letters as shared/store/dead_letters.py keeps them: newest first by run id, those
    waiting for a redrive counted. A redrive marks a letter in the extra run's own write (on
    DynamoDB, ``DynamoTaskRepository.create_run``'s transaction): here, through ``redriven``, an
    :class:`InMemoryTaskRepository`'s."""

    letters: dict[str, DeadLetter] = field(default_factory=dict)
    redriven: Mapping[str, tuple[str, datetime]] = field(default_factory=dict)
    """Letter run id -> (the redrive's run id, when): what the letter's item says once redriven."""

    def _current(self, letter: DeadLetter) -> DeadLetter:
        mark = self.redriven.get(letter.run_id)
        if letter.redriven_run_id is None and mark is not None:
            return replace(letter, redriven_run_id=mark[0], redriven_at=mark[1])
        return letter

    def record(self, letter: DeadLetter) -> None:
        self.letters[letter.id] = letter

    def get(self, tenant: str, letter_id: str) -> DeadLetter:
        letter = self.letters.get(letter_id)
        if letter is None or letter.tenant != tenant:
            raise DeadLetterNotFound(letter_id)
        return self._current(letter)

    def list(
        self, tenant: str, *, limit: int, cursor: str | None, status: LetterStatus | None = None
    ) -> Page[DeadLetter]:
        after = decode_cursor(cursor) if cursor else None
        mine = sorted(
            (self._current(letter) for letter in self.letters.values() if letter.tenant == tenant),
            key=lambda letter: letter.run_id,
            reverse=True,
        )
        matching = [
            letter
            for letter in mine
            if (after is None or letter.run_id < after) and (status is None or letter.status is status)
        ]
        page = matching[:limit]
        more = len(matching) > limit
        cursors = tuple(encode_cursor(letter.run_id) for letter in page)
        return Page(page, encode_cursor(page[-1].run_id) if more else None, cursors)

    def count(self, tenant: str, status: LetterStatus) -> int:
        if status is not LetterStatus.DEAD_LETTERED:
            raise ValueError(f"{status.value} letters are not counted: the status index holds no such letter")
        return sum(
            1 for letter in self.letters.values() if letter.tenant == tenant and self._current(letter).status is status
        )


@dataclass
class Receiver:
    """Answers each URL's calls as scripted, in turn (the last answer repeats); an exception is
    raised (a trigger crashing mid-callback). Keeps every call with the clock's time."""

    clock: FakeClock
    scripts: dict[str, list[Outcome | Exception]] = field(default_factory=dict)
    calls: dict[str, list[tuple[int, Envelope]]] = field(default_factory=lambda: defaultdict(list))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def deliver(self, target: Target, envelope: Envelope) -> Outcome:
        assert isinstance(target, HttpTarget)
        with self.lock:
            calls = self.calls[target.url]
            calls.append((self.clock(), envelope))
            script = self.scripts.get(target.url, [Outcome.success(200)])
            answer = script[min(len(calls), len(script)) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer


@dataclass
class FiringCore:
    repository: InMemoryTaskRepository
    store: InMemoryPipelineStore
    queues: Queues
    dead_letters: DeadLetters
    receiver: Receiver
    clock: FakeClock
    trigger: Trigger

    def register(self, now: datetime, spec: TaskSpec) -> Task:
        """Tenant acme's task made of ``spec`` at ``now``, stored (counted) as the API stores it."""
        return self.repository.create(new_task(spec, tenant="acme", now=now, shard=0))

    def deliver(self, staged: Staged, receives: int = 1) -> Handled:
        """One trigger invocation of one message (its ``receives``-th delivery); its alerts are
        sent as its batch closes."""
        batch = self.trigger.new_batch()
        batch.take_turns([("m", staged)])
        try:
            return batch.fire(staged, "m", receives)
        finally:
            batch.close()


def firing_core(now_ms: int, timing: Timing | None = None) -> FiringCore:
    timing = timing or Timing()
    clock = FakeClock(now_ms)
    repository = InMemoryTaskRepository(retention=RETENTION)
    store = InMemoryPipelineStore(repository, retention_ms=int(RETENTION.total_seconds() * 1000))
    queues, dead_letters, receiver = Queues(), DeadLetters(redriven=repository.redriven), Receiver(clock)
    trigger = Trigger(
        Claimer(store, queues, timing, clock=clock, sleep=clock.sleep),
        Caller(receiver, timing, clock=clock, sleep=clock.sleep),
        Recorder(store, queues, dead_letters, timing, clock=clock, sleep=clock.sleep),
        AlertSender(receiver, sleep=clock.sleep),
        clock=clock,
    )
    return FiringCore(repository, store, queues, dead_letters, receiver, clock, trigger)
