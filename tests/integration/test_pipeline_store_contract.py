"""The in-memory pipeline store and the DynamoDB one behave the same (so tests of the scanners and
the trigger can trust it): the life of occurrences, each store on its own task repository's state
(tasks created, cancelled and read through the repository, as the API does). Every time is
passed in; the one clock read, the repositories' leaving out runs past their retention, is kept
out of the way by a retention of a century."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from local.moto_patches.read_lag import read_lag
from shared.domain.claims import WRITER_WINDOW_MS, Claimed, Refusal, Success
from shared.domain.errors import ConcurrentUpdate, TaskNotFound
from shared.domain.firing import Staged, staged_for
from shared.domain.registration import new_task
from shared.domain.schedules import At, Every
from shared.domain.states import RunStatus, TaskStatus, ended_as
from shared.domain.tasks import HttpTarget, Priority, Run, Task, TaskSpec
from shared.domain.times import from_ms, to_ms
from shared.store.dynamo import DynamoTaskRepository
from shared.store.pipeline import DynamoPipelineStore
from tests.support.fakes import InMemoryTaskRepository
from tests.support.pipeline_store import InMemoryPipelineStore

pytestmark = pytest.mark.integration

NOW = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
NOW_MS = to_ms(NOW)
LEASE_MS = 150_000
RETENTION = timedelta(days=36_500)
"""Long: the repositories leave out a run past its retention by the wall clock."""
RETENTION_MS = int(RETENTION.total_seconds() * 1000)
TARGETS = (HttpTarget("https://example.com/hook"),)


@dataclass
class Stores:
    """A task repository and the pipeline store on the same state."""

    repository: Any
    store: Any

    def one_shot(self, seconds: int = 90, tenant: str = "t", shard: int = 0, staged: bool = False) -> Task:
        """A one-shot task due ``seconds`` after NOW, registered (counted) through the repository."""
        spec = TaskSpec(At(NOW + timedelta(seconds=seconds)), TARGETS)
        return self.repository.create(new_task(spec, tenant=tenant, now=NOW, shard=shard), staged=staged)

    def recurring(self, tenant: str = "t", shard: int = 0) -> Task:
        """A task due every minute from a minute after NOW."""
        spec = TaskSpec(Every(60, start=NOW + timedelta(minutes=1)), TARGETS)
        return self.repository.create(new_task(spec, tenant=tenant, now=NOW, shard=shard))

    def get(self, task: Task) -> Task:
        return self.repository.get(task.tenant, task.id)

    def runs(self, task: Task, limit: int = 10, cursor: str | None = None) -> list[Run]:
        return self.repository.runs(self.get(task), limit=limit, cursor=cursor).items

    def claim(self, staged: Staged, at: int | None = None, log: str = "b1", take_own: bool = False) -> Any:
        """Claim ``staged`` at ``at`` (its due time by default) for LEASE_MS from then."""
        now = staged.due_ms if at is None else at
        return self.store.claim(staged, now_ms=now, lease_until_ms=now + LEASE_MS, log_id=log, take_own=take_own)

    def cancel(self, task: Task) -> Task:
        """A client's cancel (TaskService.cancel's write)."""
        current = self.get(task)
        return self.repository.update(replace(current, status=TaskStatus.CANCELLED, next_fire_at=None))


@pytest.fixture(params=["memory", "dynamo"])
def stores(request) -> Iterator[Stores]:
    if request.param == "memory":
        repository = InMemoryTaskRepository(retention=RETENTION)
        yield Stores(repository, InMemoryPipelineStore(repository, retention_ms=RETENTION_MS))
        return
    request.getfixturevalue("aws")
    # Every eventually consistent read one write behind (its clock never moves past the lag): the
    # store's decisions rest on strongly consistent reads, as DynamoDB's "Read consistency" asks.
    with read_lag(1.0, clock=lambda: 0.0):
        yield Stores(DynamoTaskRepository(list_shards=1, retention=RETENTION), DynamoPipelineStore(RETENTION_MS))


def first(task: Task) -> Staged:
    """The message a scanner stages for the task's armed occurrence."""
    return staged_for(task.id, to_ms(task.due_at), one_shot=not task.recurring)


def run_of(staged: Staged, status: RunStatus, attempts: int = 1, error: str | None = None, fired: bool = True) -> Run:
    """The run a trigger reports for ``staged``, fired 5 ms after it was due."""
    fired_at = from_ms(staged.due_ms + 5) if fired else None
    return Run(
        staged.run_id, staged.task_id, from_ms(staged.due_ms), status, attempts, fired_at, 5 if fired else None, error
    )


# --- scanning ------------------------------------------------------------------------------------


def test_the_scan_lease_lets_one_scan_at_a_time_move_the_mark(stores):
    store = stores.store
    assert store.watermark(7) is None
    assert store.begin_scan(7, NOW_MS, 1_000) == (None, NOW_MS + 1_000)
    assert store.watermark(7) is None  # a lease taken is not a mark
    assert store.begin_scan(7, NOW_MS + 1_000, 1_000) is None  # held to its last millisecond
    assert not store.end_scan(7, NOW_MS + 999, NOW_MS)  # not this lease
    assert store.end_scan(7, NOW_MS + 1_000, NOW_MS + 120_000)
    assert store.watermark(7) == NOW_MS + 120_000
    assert not store.end_scan(7, NOW_MS + 1_000, NOW_MS)  # released already
    assert store.watermark(8) is None  # shards are apart
    # a scan that crashed holds the shard until its lease runs out; then it can no longer end
    assert store.begin_scan(7, NOW_MS + 2_000, 1_000) == (NOW_MS + 120_000, NOW_MS + 3_000)
    assert store.begin_scan(7, NOW_MS + 3_001, 1_000) == (NOW_MS + 120_000, NOW_MS + 4_001)
    assert not store.end_scan(7, NOW_MS + 3_000, NOW_MS + 200_000)
    assert store.end_scan(7, NOW_MS + 4_001, NOW_MS + 60_000)  # the mark goes where the scan says
    assert store.watermark(7) == NOW_MS + 60_000


def test_the_tick_reads_every_mark_and_what_it_kept_clean_in_one_look(stores):
    store = stores.store
    assert store.scan_marks(range(3)) == ({0: None, 1: None, 2: None}, {})
    taken = store.begin_scan(1, NOW_MS, 1_000)
    assert store.end_scan(1, taken[1], NOW_MS + 120_000)
    store.mark_clean({0: NOW_MS + 60_000, 2: NOW_MS + 180_000, 9: NOW_MS})
    marks, clean = store.scan_marks(range(3))
    assert marks == {0: None, 1: NOW_MS + 120_000, 2: None}
    assert clean == {0: NOW_MS + 60_000, 2: NOW_MS + 180_000}  # only the shards asked about
    store.mark_clean({0: NOW_MS + 120_000})  # the whole map is replaced
    assert store.scan_marks([0, 2])[1] == {0: NOW_MS + 120_000}
    for shard in (0, 99, 100, 149):  # the first and last of each BatchGetItem's keys
        taken = store.begin_scan(shard, NOW_MS, 1_000)
        assert store.end_scan(shard, taken[1], NOW_MS + shard)
    many = range(150)  # more than one BatchGetItem holds
    marks = store.scan_marks(many)[0]
    assert {shard: mark for shard, mark in marks.items() if mark is not None} == {
        0: NOW_MS,
        1: NOW_MS + 120_000,
        99: NOW_MS + 99,
        100: NOW_MS + 100,
        149: NOW_MS + 149,
    }


def test_the_tick_sees_any_item_in_a_shards_window_staged_claimed_or_not(stores):
    store = stores.store
    due = NOW_MS + 90_000
    assert not store.has_items(3, NOW_MS, NOW_MS + 600_000)
    task = stores.one_shot(seconds=90, shard=3, staged=True)  # its writer staged it
    assert store.has_items(3, NOW_MS, NOW_MS + 600_000)
    assert store.has_items(3, due, due + 1)
    assert not store.has_items(3, NOW_MS, due)  # the window's end is not in it
    assert not store.has_items(3, due + 1, due + 600_000)
    assert not store.has_items(4, NOW_MS, NOW_MS + 600_000)  # shards are apart
    assert not store.has_items(3, due, due)  # an empty window
    assert isinstance(stores.claim(first(task)), Claimed)
    assert store.has_items(3, NOW_MS, NOW_MS + 600_000)  # claimed: still an item (the scan decides)
    stores.recurring(shard=5)
    assert store.has_items(5, NOW_MS + 60_000, NOW_MS + 60_001)


def test_a_one_shot_task_is_due_in_its_shards_window_until_it_is_claimed(stores):
    task = stores.one_shot(seconds=90, shard=3)
    stores.one_shot(seconds=90, shard=3, staged=True)  # its writer staged it: no scanner does
    stores.one_shot(seconds=90, shard=4)
    due = NOW_MS + 90_000
    assert stores.store.due(3, NOW_MS, due) == []  # the window's end is not in it
    assert stores.store.due(3, due + 1, due + 60_000) == []
    assert stores.store.due(3, due, due + 1) == [staged_for(task.id, due, one_shot=True)]
    assert stores.store.due(3, NOW_MS, NOW_MS + 3_600_000) == [staged_for(task.id, due, one_shot=True)]
    assert isinstance(stores.claim(first(task)), Claimed)
    assert stores.store.due(3, NOW_MS, NOW_MS + 3_600_000) == []


def test_due_lists_a_shards_occurrences_in_due_order_and_not_paused_ones(stores):
    late, early = stores.one_shot(seconds=150, shard=2), stores.one_shot(seconds=30, shard=2)
    paused = stores.one_shot(seconds=60, shard=2)
    stores.repository.update(replace(paused, status=TaskStatus.PAUSED))
    assert [s.task_id for s in stores.store.due(2, NOW_MS, NOW_MS + 600_000)] == [early.id, late.id]


def test_a_recurring_tasks_later_occurrences_are_due_from_their_own_buckets(stores):
    task = stores.recurring(shard=5)
    one = first(task)
    assert stores.store.due(5, NOW_MS, NOW_MS + 600_000) == [one]
    assert not one.one_shot
    assert isinstance(stores.claim(one), Claimed)
    two_ms, three_ms = one.due_ms + 60_000, one.due_ms + 120_000
    assert stores.store.rearm(
        stores.get(task),
        one,
        run_of(one, RunStatus.SUCCEEDED),
        next_due_ms=two_ms,
        staged_next=False,
        now_ms=one.due_ms + 10,
    )
    two = staged_for(task.id, two_ms, one_shot=False)
    assert stores.store.due(5, NOW_MS, NOW_MS + 600_000) == [two]
    assert stores.store.due(5, two_ms + 1, NOW_MS + 600_000) == []
    assert isinstance(stores.claim(two), Claimed)
    assert stores.store.rearm(
        stores.get(task),
        two,
        run_of(two, RunStatus.SUCCEEDED),
        next_due_ms=three_ms,
        staged_next=True,
        now_ms=two_ms + 10,
    )
    # its writer staged the third itself; the second's item is still there, found by a late scan
    assert stores.store.due(5, NOW_MS, NOW_MS + 600_000) == [two]
    assert stores.store.due(5, two_ms + 1, NOW_MS + 600_000) == []


def test_a_high_priority_tasks_occurrences_travel_its_lane(stores):
    spec = TaskSpec(Every(60, start=NOW + timedelta(minutes=1)), TARGETS, priority=Priority.HIGH)
    task = stores.repository.create(new_task(spec, tenant="t", now=NOW, shard=6))
    (one,) = stores.store.due(6, NOW_MS, NOW_MS + 600_000)
    assert one == staged_for(task.id, to_ms(task.due_at), one_shot=False, priority=Priority.HIGH)
    claimed = stores.claim(one)
    two_ms = one.due_ms + 60_000
    ran = run_of(one, RunStatus.SUCCEEDED)
    stores.store.rearm(claimed.task, one, ran, next_due_ms=two_ms, staged_next=False, now_ms=one.due_ms + 10)
    assert stores.store.due(6, NOW_MS, NOW_MS + 600_000) == [
        staged_for(task.id, two_ms, one_shot=False, priority=Priority.HIGH)
    ]


def test_a_rescheduled_one_shot_is_staged_from_its_occurrence_item_as_a_recurring_occurrence(stores):
    """A client's update arms another due time with an occurrence item, which the scanners
    stage as they stage every occurrence item: not one-shot (the trigger then ends the task
    through ``rearm``, not a run log)."""
    task = stores.one_shot(seconds=90, shard=1)
    moved_ms = NOW_MS + 300_000
    stores.repository.update(replace(task, due_at=from_ms(moved_ms), next_fire_at=from_ms(moved_ms)))
    assert stores.store.due(1, NOW_MS, NOW_MS + 600_000) == [staged_for(task.id, moved_ms, one_shot=False)]
    stores.repository.update(
        replace(stores.get(task), due_at=from_ms(moved_ms + 1), next_fire_at=from_ms(moved_ms + 1)), staged=True
    )
    # the first move's item stays (stale: its claim is refused), the second was staged by its writer
    assert stores.store.due(1, NOW_MS, NOW_MS + 600_000) == [staged_for(task.id, moved_ms, one_shot=False)]
    assert stores.claim(staged_for(task.id, moved_ms, one_shot=False)) is Refusal.STALE
    with pytest.raises(TaskNotFound):
        stores.store.status_of("not-a-task-id")


# --- claiming ------------------------------------------------------------------------------------


def test_a_claim_takes_the_run_once(stores):
    task = stores.one_shot()
    staged = first(task)
    claimed = stores.claim(staged)
    assert isinstance(claimed, Claimed)
    assert (claimed.targets_done, claimed.log_id, claimed.counted) == (0, "b1", True)
    assert claimed.task.id == task.id
    assert claimed.task.version == task.version + 1
    assert (claimed.task.run.status, claimed.task.run.attempts, claimed.task.run.run_id) == (
        RunStatus.FIRING,
        1,
        staged.run_id,
    )
    assert stores.get(task).run == claimed.task.run
    # a one-shot's items expire once its retention after the claim has passed (a recurring one's never)
    assert claimed.task.expires_at == datetime.fromtimestamp(staged.due_ms // 1000, UTC) + RETENTION
    recurring = stores.recurring()
    assert stores.claim(first(recurring)).task.expires_at is None
    # a second copy of the message, another scanner's or a redelivery, while the lease holds
    assert stores.claim(staged, log="b2") is Refusal.IN_FLIGHT
    assert stores.claim(staged, at=staged.due_ms + LEASE_MS, log="b2") is Refusal.IN_FLIGHT
    assert stores.get(task).version == claimed.task.version
    with pytest.raises(ConcurrentUpdate):  # a client who read the task before the claim
        stores.repository.update(replace(task, name="renamed"))


def test_copies_claimed_at_once_on_threads_fire_once(stores):
    """The trigger claims on a thread per record: the claim is one atomic write in both stores."""
    task = stores.one_shot()
    staged = first(task)
    with ThreadPoolExecutor(max_workers=6) as pool:
        answers = list(pool.map(lambda k: stores.claim(staged, log=f"b{k}"), range(6)))
    claimed = [a for a in answers if isinstance(a, Claimed)]
    assert len(claimed) == 1
    assert sorted(a for a in answers if not isinstance(a, Claimed)) == [Refusal.IN_FLIGHT] * 5
    assert stores.get(task).version == task.version + 1


def test_a_claim_tells_a_stale_message_from_one_that_came_early(stores):
    task = stores.one_shot(seconds=120)
    due = to_ms(task.due_at)
    later = staged_for(task.id, due + 60_000, one_shot=True)
    earlier = staged_for(task.id, due - 60_000, one_shot=True)
    assert stores.claim(later) is Refusal.BEHIND  # not armed for it (yet)
    assert stores.claim(earlier) is Refusal.STALE  # armed for a later time now
    gone = new_task(TaskSpec(At(NOW + timedelta(minutes=3)), TARGETS), tenant="t", now=NOW, shard=0)
    assert stores.claim(first(gone)) is Refusal.BEHIND  # no such task (yet)
    assert stores.store.status_of(gone.id) is None
    assert stores.store.status_of(task.id) is TaskStatus.SCHEDULED
    stores.repository.update(replace(task, status=TaskStatus.PAUSED))
    assert stores.store.status_of(task.id) is TaskStatus.PAUSED
    assert stores.claim(first(task)) is Refusal.STALE  # paused since it was staged
    assert stores.get(task).run is None


def test_a_writers_message_that_overtook_its_write_is_looked_at_again_until_the_writer_is_out_of_time(stores):
    """A resume stages before it writes: its message can find the task still paused; a PATCH to an
    earlier time too: its message can find the task armed later. Staged after the task's last
    change and within WRITER_WINDOW_MS of its staging, that is RESUMING or RESCHEDULING (the claim
    looks again); after the window, for a message staged before that change (by the task's first
    writer, or a scanner), STALE as before."""
    task = stores.one_shot(seconds=120)
    due = to_ms(task.due_at)
    paused_ms = due - 10_000
    paused = stores.repository.update(replace(task, status=TaskStatus.PAUSED, updated_at=from_ms(paused_ms)))
    resumed = replace(first(task), writer_ms=paused_ms + 1_000)
    assert stores.claim(resumed, at=due) is Refusal.RESUMING
    assert stores.claim(resumed, at=paused_ms + 1_000 + WRITER_WINDOW_MS) is Refusal.RESUMING
    assert stores.claim(resumed, at=paused_ms + 1_000 + WRITER_WINDOW_MS + 1) is Refusal.STALE
    assert stores.claim(replace(resumed, writer_ms=NOW_MS), at=due) is Refusal.STALE  # staged before the pause
    assert stores.claim(first(task), at=due) is Refusal.STALE  # a scanner's: paused since it was staged
    assert stores.claim(replace(resumed, attempt=2), at=due) is Refusal.STALE
    assert stores.get(task).run is None
    # the write lands: the same message claims it
    stores.repository.update(replace(paused, status=TaskStatus.SCHEDULED))
    assert isinstance(stores.claim(resumed, at=due + 1_000), Claimed)
    # a writer's message for an earlier time than the task is armed for, staged since the task's
    # last change: a PATCH to an earlier time whose write may still land (RESCHEDULING), until
    # its window is out; staged before that change (a hop started twice, the first hop's message
    # after the second hop's write), stale at once
    other = stores.one_shot(seconds=300)
    earlier = staged_for(other.id, to_ms(other.due_at) - 60_000, one_shot=True)
    patching = replace(earlier, writer_ms=NOW_MS + 1)
    assert stores.claim(patching, at=NOW_MS + 1_000) is Refusal.RESCHEDULING
    assert stores.claim(patching, at=NOW_MS + 1 + WRITER_WINDOW_MS) is Refusal.RESCHEDULING
    assert stores.claim(patching, at=NOW_MS + 2 + WRITER_WINDOW_MS) is Refusal.STALE
    assert stores.claim(replace(earlier, writer_ms=NOW_MS - 1), at=NOW_MS + 1_000) is Refusal.STALE
    assert stores.claim(earlier, at=NOW_MS + 1_000) is Refusal.STALE  # a scanner's
    assert stores.claim(replace(patching, attempt=2), at=NOW_MS + 1_000) is Refusal.STALE
    # the PATCH's write lands: the same message claims it
    stores.repository.update(replace(other, due_at=from_ms(earlier.due_ms), next_fire_at=from_ms(earlier.due_ms)))
    assert isinstance(stores.claim(patching, at=NOW_MS + 2_000), Claimed)
    # a late copy of an occurrence its writer staged that fired, its task armed for the next: stale
    recurring = stores.recurring()
    staged = replace(first(recurring), writer_ms=NOW_MS)
    claimed = stores.claim(staged)
    assert isinstance(claimed, Claimed)
    ran = run_of(staged, RunStatus.SUCCEEDED)
    assert stores.store.rearm(
        claimed.task, staged, ran, next_due_ms=staged.due_ms + 60_000, staged_next=False, now_ms=staged.due_ms + 10
    )
    assert stores.claim(staged, at=staged.due_ms + 1_000) in (Refusal.STALE, Refusal.DONE)


def test_a_crashed_claim_is_taken_over_after_its_lease_and_only_then(stores):
    task = stores.one_shot()
    staged = first(task)
    assert isinstance(stores.claim(staged, log="b1"), Claimed)
    lease = staged.due_ms + LEASE_MS
    assert stores.claim(staged, at=lease, log="b2") is Refusal.IN_FLIGHT
    # the batch whose attempt failed takes its own lease over (abandoning the occurrence)
    own = stores.claim(staged, at=staged.due_ms + 10, log="b1", take_own=True)
    assert isinstance(own, Claimed)
    assert stores.claim(staged, at=staged.due_ms + 10, log="b2", take_own=True) is Refusal.IN_FLIGHT
    # the trigger of b1 died: the redelivered message takes the run over once the lease ran out
    lease = staged.due_ms + 10 + LEASE_MS  # the one b1 took over
    assert stores.claim(staged, at=lease, log="b3") is Refusal.IN_FLIGHT
    taken = stores.claim(staged, at=lease + 1, log="b3")
    assert isinstance(taken, Claimed)
    assert (taken.log_id, taken.task.run.attempts, taken.task.run.status) == ("b3", 1, RunStatus.FIRING)
    assert stores.claim(staged, at=lease + 2, log="b4") is Refusal.IN_FLIGHT  # its lease now
    assert not stores.store.record_retry(
        replace(staged, attempt=2), error="x", targets_done=0, fired_ms=lease, lateness_ms=0
    )  # not the attempt the task holds


def test_a_run_that_succeeded_before_its_trigger_died_is_not_taken_over(stores):
    task = stores.one_shot()
    staged = first(task)
    stores.claim(staged, log="b1")
    stores.store.log_successes("b1", [Success(staged.run_id, staged.due_ms + 5, 5, 1, "t")], staged.due_ms + 10)
    assert stores.claim(staged, at=staged.due_ms + LEASE_MS + 1, log="b2") is Refusal.DONE
    assert stores.claim(staged, at=staged.due_ms + 10, log="b2") is Refusal.IN_FLIGHT  # the lease still holds


def test_a_retry_whose_attempt_before_succeeded_in_a_run_log_is_done_not_early(stores):
    """Found by make verify: the trigger of attempt 1 sent the retry and died before recording the
    failure; the redelivered attempt 1 then succeeded (a one-shot: in its batch's run log only).
    The retry, coming back, was EARLY forever (sent back again and again, for the task's
    retention); it is over."""
    task = stores.one_shot()
    one = first(task)
    stores.claim(one, log="b1")
    two = one.next_attempt()
    assert stores.claim(two, at=one.due_ms + 100) is Refusal.EARLY  # the attempt before may still record
    taken = stores.claim(one, at=one.due_ms + LEASE_MS + 1, log="b2")  # b1 died: its message came back
    assert isinstance(taken, Claimed)
    stores.store.log_successes("b2", [Success(one.run_id, one.due_ms + LEASE_MS + 5, 5, 1, "t")], one.due_ms)
    assert stores.claim(two, at=one.due_ms + LEASE_MS + 100, log="b3") is Refusal.DONE


def test_a_retry_is_early_until_its_attempt_is_recorded_then_claimed_once(stores):
    task = stores.one_shot()
    one = first(task)
    stores.claim(one)
    two = one.next_attempt()
    assert stores.claim(two, at=one.due_ms + 100) is Refusal.EARLY
    assert stores.store.record_retry(one, error="HTTP 500", targets_done=0b10, fired_ms=one.due_ms + 5, lateness_ms=5)
    assert not stores.store.record_retry(one, error="HTTP 500", targets_done=0, fired_ms=0, lateness_ms=0)  # once
    run = stores.get(task).run
    assert (run.status, run.attempts, run.last_error) == (RunStatus.RETRYING, 1, "HTTP 500")
    assert (run.fired_at, run.lateness_ms) == (from_ms(one.due_ms + 5), 5)
    assert stores.claim(one, at=one.due_ms + 200) is Refusal.DONE  # the first attempt is over
    claimed = stores.claim(two, at=one.due_ms + 2_000, log="b2")
    assert isinstance(claimed, Claimed)
    assert claimed.targets_done == 0b10  # the targets that already succeeded are not called again
    assert (claimed.task.run.status, claimed.task.run.attempts) == (RunStatus.FIRING, 2)
    assert claimed.task.run.last_error == "HTTP 500"
    assert stores.claim(two, at=one.due_ms + 2_001, log="b3") is Refusal.IN_FLIGHT
    assert stores.claim(two.next_attempt(), at=one.due_ms + 2_002, log="b3") is Refusal.EARLY
    # the second attempt fails too: the first attempt's fired time and lateness stay the run's
    assert stores.store.record_retry(
        two, error="HTTP 503", targets_done=0b11, fired_ms=one.due_ms + 2_005, lateness_ms=2_005, throttled_ms=300
    )
    run = stores.get(task).run
    assert (run.status, run.attempts, run.last_error) == (RunStatus.RETRYING, 2, "HTTP 503")
    assert (run.fired_at, run.lateness_ms, run.throttled_ms) == (from_ms(one.due_ms + 5), 5, 300)
    assert stores.claim(replace(two, attempt=4), at=one.due_ms + 3_000) is Refusal.DONE  # not the one it waits for
    # a retry of a task cancelled meanwhile is taken only to end its run, never to fire it
    stores.cancel(task)
    ending = stores.claim(two.next_attempt(), at=one.due_ms + 4_000)
    assert isinstance(ending, Claimed)
    assert ending.superseded == "its task was cancelled while it waited for its next attempt: not fired again"


def test_a_held_copy_claims_its_run_without_using_an_attempt(stores):
    task = stores.one_shot()
    one = first(task)
    stores.claim(one)
    held = one.hold(start_ms=one.due_ms + 1_000, booked=(("hook", 1),), ready_ms=one.due_ms)
    assert stores.claim(held, at=one.due_ms + 10) is Refusal.EARLY  # before its hold is recorded
    lease = one.due_ms + 1_000 + LEASE_MS
    assert stores.store.record_hold(one, lease_until_ms=lease, throttled_ms=1_000)
    assert not stores.store.record_hold(one, lease_until_ms=lease, throttled_ms=1_000)  # once
    run = stores.get(task).run
    assert (run.status, run.attempts, run.throttled_ms) == (RunStatus.THROTTLED, 0, 1_000)
    assert stores.claim(one, at=one.due_ms + 20) is Refusal.DONE  # the copy that was held is over
    claimed = stores.claim(held, at=one.due_ms + 1_000, log="b2")
    assert isinstance(claimed, Claimed)
    assert (claimed.task.run.status, claimed.task.run.attempts) == (RunStatus.FIRING, 1)
    # a second copy of the held message while its attempt fires looks like one that overtook the
    # hold's write: it is sent back shortly (EARLY), not left to the lease (IN_FLIGHT)
    assert stores.claim(held, at=one.due_ms + 1_001, log="b3") is Refusal.EARLY
    assert stores.claim(held.next_attempt(), at=one.due_ms + 1_002, log="b3") is Refusal.EARLY


# --- one-shot outcomes ---------------------------------------------------------------------------


def test_a_one_shot_success_is_logged_once_and_gives_its_place_back_once(stores):
    task, other = stores.one_shot(), stores.one_shot(seconds=600)
    staged = first(task)
    stores.claim(staged)
    assert stores.repository.live_tasks("t") == 2
    success = Success(staged.run_id, staged.due_ms + 5, 5, 1, counted_in="t", throttled_ms=40)
    stores.store.log_successes("b1", [success], staged.due_ms + 10)
    assert stores.repository.live_tasks("t") == 1
    stores.store.log_successes("b1", [success], staged.due_ms + 20)  # a replay: nothing twice
    assert stores.repository.live_tasks("t") == 1
    read = stores.get(task)
    assert read.status is TaskStatus.COMPLETED
    assert read.next_fire_at is None
    assert (read.run.status, read.run.attempts, read.run.fired_at) == (
        RunStatus.SUCCEEDED,
        1,
        from_ms(staged.due_ms + 5),
    )
    assert (read.run.lateness_ms, read.run.throttled_ms) == (5, 40)
    assert [r.status for r in stores.runs(task)] == [RunStatus.SUCCEEDED]
    # the run log is never read by status_of: the item itself still says scheduled
    assert stores.store.status_of(task.id) is TaskStatus.SCHEDULED
    # the trigger could not tell the log was written and records the success on the task: nothing
    ended = run_of(staged, RunStatus.SUCCEEDED)
    assert stores.store.finish_one_shot(
        staged, ended, now_ms=staged.due_ms + 30, targets_done=-1, counted_in="t", logged_in="b1"
    )
    assert stores.repository.live_tasks("t") == 1
    stores.store.log_successes("b2", [], staged.due_ms + 40)  # nothing to log: no log is written
    unclaimed = first(other)
    finish = {"now_ms": NOW_MS, "targets_done": -1, "counted_in": "t", "logged_in": "b2"}
    assert not stores.store.finish_one_shot(unclaimed, run_of(unclaimed, RunStatus.SUCCEEDED), **finish)


def test_a_success_whose_run_log_was_not_written_is_recorded_on_its_task_once(stores):
    task = stores.one_shot()
    staged = first(task)
    stores.claim(staged, log="b1")
    ended = run_of(staged, RunStatus.SUCCEEDED)
    finish = {"now_ms": staged.due_ms + 30, "targets_done": -1, "counted_in": "t", "logged_in": "b1"}
    assert stores.store.finish_one_shot(staged, ended, **finish)
    assert stores.repository.live_tasks("t") == 0
    assert not stores.store.finish_one_shot(staged, ended, **finish)
    assert stores.repository.live_tasks("t") == 0
    read = stores.get(task)
    assert (read.status, read.next_fire_at) == (TaskStatus.COMPLETED, None)
    assert (read.run.status, read.run.fired_at, read.run.lateness_ms) == (RunStatus.SUCCEEDED, ended.fired_at, 5)
    assert read.expires_at == datetime.fromtimestamp((staged.due_ms + 30) // 1000, UTC) + RETENTION
    assert stores.claim(staged, at=staged.due_ms + LEASE_MS + 1, log="b2") is Refusal.STALE


@pytest.mark.parametrize("status", [RunStatus.FAILED, RunStatus.DEAD_LETTERED, RunStatus.SKIPPED])
def test_a_one_shot_ends_as_its_run_did_and_gives_its_place_back_once(stores, status):
    task = stores.one_shot()
    staged = first(task)
    stores.claim(staged)
    skipped = status is RunStatus.SKIPPED
    ended = run_of(staged, status, attempts=0 if skipped else 1, error="HTTP 400", fired=not skipped)
    finish = {"now_ms": staged.due_ms + 30, "targets_done": 0, "counted_in": "t", "failures": 1}
    assert stores.store.finish_one_shot(staged, ended, **finish)
    assert stores.repository.live_tasks("t") == 0
    assert not stores.store.finish_one_shot(staged, ended, **finish)  # a second report writes nothing
    assert stores.repository.live_tasks("t") == 0
    read = stores.get(task)
    assert read.status is ended_as(status)
    assert read.next_fire_at is None
    assert read.consecutive_failures == 1
    assert (read.run.status, read.run.attempts, read.run.last_error) == (status, ended.attempts, "HTTP 400")
    assert (read.run.fired_at, read.run.lateness_ms) == (ended.fired_at, ended.lateness_ms)
    assert [r.status for r in stores.runs(task)] == [status]
    assert stores.store.status_of(task.id) is ended_as(status)
    assert stores.claim(staged, at=staged.due_ms + LEASE_MS + 1, log="b2") is Refusal.STALE
    assert stores.repository.live_tasks("t") == 0


def test_an_uncounted_one_shot_frees_nothing(stores):
    task = stores.one_shot()
    staged = first(task)
    stores.claim(staged)
    ended = run_of(staged, RunStatus.FAILED, error="HTTP 400")
    assert stores.store.finish_one_shot(staged, ended, now_ms=staged.due_ms + 30, targets_done=0)
    assert stores.repository.live_tasks("t") == 1  # counted_in None: the trigger said it was not counted
    assert stores.get(task).status is TaskStatus.FAILED


def test_a_one_shot_that_succeeds_on_a_retry_keeps_no_error_and_its_throttled_time(stores):
    task = stores.one_shot()
    staged = first(task)
    stores.claim(staged)
    assert stores.store.record_retry(
        staged, error="HTTP 500", targets_done=0, fired_ms=staged.due_ms + 5, lateness_ms=5, throttled_ms=30
    )
    assert stores.get(task).run.last_error == "HTTP 500"
    retry = staged.next_attempt()
    stores.claim(retry, at=staged.due_ms + 2_000)
    ended = replace(run_of(retry, RunStatus.SUCCEEDED, attempts=2), throttled_ms=70)
    assert stores.store.finish_one_shot(retry, ended, now_ms=staged.due_ms + 2_100, targets_done=-1)
    read = stores.get(task).run
    assert (read.status, read.attempts, read.last_error, read.throttled_ms) == (RunStatus.SUCCEEDED, 2, None, 70)
    assert read.lateness_ms == 5  # the first attempt's: a retry is late by its backoff
    assert read.fired_at == from_ms(staged.due_ms + 5)


def test_a_one_shot_cancelled_while_firing_stays_cancelled_and_its_run_frees_its_place(stores):
    task = stores.one_shot()
    staged = first(task)
    stores.claim(staged)
    stores.cancel(task)
    assert stores.repository.live_tasks("t") == 1  # the firing run's outcome will free it
    ended = run_of(staged, RunStatus.DEAD_LETTERED, error="HTTP 500")
    assert stores.store.finish_one_shot(staged, ended, now_ms=staged.due_ms + 30, targets_done=0, counted_in="t")
    assert stores.repository.live_tasks("t") == 0
    read = stores.get(task)
    assert (read.status, read.next_fire_at) == (TaskStatus.CANCELLED, None)
    assert (read.run.status, read.run.last_error) == (RunStatus.DEAD_LETTERED, "HTTP 500")
    assert stores.claim(staged, at=staged.due_ms + LEASE_MS + 1) is Refusal.STALE
    assert stores.repository.live_tasks("t") == 0


def test_a_one_shot_cancelled_while_its_retry_waits_gives_its_place_back_at_once(stores):
    task = stores.one_shot()
    one = first(task)
    stores.claim(one)
    stores.store.record_retry(one, error="HTTP 500", targets_done=0, fired_ms=one.due_ms + 5, lateness_ms=5)
    stores.cancel(task)
    assert stores.repository.live_tasks("t") == 0
    ending = stores.claim(one.next_attempt(), at=one.due_ms + 2_000)  # to end its run (an uncounted end)
    assert isinstance(ending, Claimed)
    assert (ending.superseded is not None, ending.counted) == (True, False)
    assert stores.repository.live_tasks("t") == 0


def test_a_one_shot_cancelled_while_firing_whose_retry_comes_is_ended_by_it_and_freed_once(stores):
    """Found by make verify: the retry of a cancelled task was refused (STALE) and its run stayed
    ``retrying`` in the API for good. It takes the run now, to end it unfired (the trigger
    records it skipped, freeing the place in the same write)."""
    task = stores.one_shot()
    one = first(task)
    stores.claim(one)
    stores.cancel(task)
    assert stores.repository.live_tasks("t") == 1
    # the attempt failed: its retry is recorded (a cancel does not stop that write) and sent
    assert stores.store.record_retry(one, error="HTTP 500", targets_done=0, fired_ms=one.due_ms + 5, lateness_ms=5)
    assert stores.repository.live_tasks("t") == 1
    two = one.next_attempt()
    ending = stores.claim(two, at=one.due_ms + 2_000)
    assert isinstance(ending, Claimed)
    assert (ending.superseded is not None, ending.counted) == (True, True)
    assert stores.claim(two, at=one.due_ms + 3_000) is Refusal.STALE  # its copy: dropped, the run is taken
    skipped = run_of(two, RunStatus.SKIPPED, attempts=1, error=ending.superseded, fired=False)
    assert stores.store.finish_one_shot(two, skipped, now_ms=one.due_ms + 2_001, targets_done=0, counted_in="t")
    assert stores.repository.live_tasks("t") == 0
    assert stores.claim(two, at=one.due_ms + LEASE_MS * 2) is Refusal.STALE  # once
    assert stores.repository.live_tasks("t") == 0
    read = stores.get(task)
    assert (read.status, read.run.status, read.run.last_error) == (
        TaskStatus.CANCELLED,
        RunStatus.SKIPPED,
        ending.superseded,
    )


def test_a_one_shot_cancelled_while_firing_whose_trigger_died_is_freed_after_its_lease(stores):
    task, logged = stores.one_shot(), stores.one_shot(seconds=100)
    staged, other = first(task), first(logged)
    stores.claim(staged, log="b1")
    stores.claim(other, log="b2")
    stores.store.log_successes("b2", [Success(other.run_id, other.due_ms, 0, 1, "t")], other.due_ms + 10)
    assert stores.repository.live_tasks("t") == 1
    stores.cancel(task)
    stores.cancel(logged)  # shown completed: a client's cancel of it changes nothing
    assert stores.claim(staged, at=staged.due_ms + LEASE_MS) is Refusal.STALE  # its lease still holds
    assert stores.repository.live_tasks("t") == 1
    # its message come back takes the run to end it unfired (the end frees the place)
    ending = stores.claim(staged, at=staged.due_ms + LEASE_MS + 1, log="b3")
    assert isinstance(ending, Claimed)
    assert ending.superseded is not None
    assert "its trigger stopped" in ending.superseded
    assert stores.claim(other, at=other.due_ms + LEASE_MS + 1) is Refusal.STALE  # its run log freed it
    skipped = run_of(staged, RunStatus.SKIPPED, attempts=0, error=ending.superseded, fired=False)
    assert stores.store.finish_one_shot(
        staged, skipped, now_ms=staged.due_ms + LEASE_MS + 2, targets_done=0, counted_in="t"
    )
    assert stores.repository.live_tasks("t") == 0


# --- recurring outcomes --------------------------------------------------------------------------


def test_a_recurring_task_is_rearmed_to_its_next_occurrence_then_completed(stores):
    task = stores.recurring()
    one = first(task)
    claimed = stores.claim(one)
    assert claimed.counted
    two_ms = one.due_ms + 60_000
    ran = run_of(one, RunStatus.SUCCEEDED)
    assert stores.store.rearm(
        claimed.task, one, ran, next_due_ms=two_ms, staged_next=False, now_ms=one.due_ms + 10, failures=0
    )
    read = stores.get(task)
    assert (read.status, read.due_at, read.next_fire_at) == (TaskStatus.SCHEDULED, from_ms(two_ms), from_ms(two_ms))
    assert read.run is None
    assert read.version == claimed.task.version + 1
    assert read.last_run.run_id == one.run_id
    assert (read.last_run.status, read.last_run.fired_at) == (RunStatus.SUCCEEDED, ran.fired_at)
    (kept,) = stores.runs(task)
    assert (kept.run_id, kept.status, kept.attempts, kept.fired_at, kept.lateness_ms) == (
        one.run_id,
        RunStatus.SUCCEEDED,
        1,
        ran.fired_at,
        5,
    )
    assert stores.repository.live_tasks("t") == 1
    assert stores.claim(one, at=one.due_ms + LEASE_MS + 1) is Refusal.STALE  # a late copy of the first
    assert not stores.store.rearm(read, one, ran, next_due_ms=two_ms, staged_next=False, now_ms=one.due_ms + 20)

    two = staged_for(task.id, two_ms, one_shot=False)
    second = stores.claim(two, log="b2")
    assert isinstance(second, Claimed)
    assert second.task.run.run_id == two.run_id != one.run_id
    failed = run_of(two, RunStatus.DEAD_LETTERED, attempts=3, error="HTTP 500")
    assert stores.store.rearm(
        second.task, two, failed, next_due_ms=None, staged_next=False, now_ms=two_ms + 10, counted=True, failures=1
    )
    read = stores.get(task)
    assert (read.status, read.next_fire_at, read.run) == (TaskStatus.FAILED, None, None)
    assert read.consecutive_failures == 1
    assert read.expires_at == datetime.fromtimestamp((two_ms + 10) // 1000, UTC) + RETENTION
    assert stores.repository.live_tasks("t") == 0
    runs = stores.runs(task)
    assert [(r.run_id, r.status, r.attempts, r.last_error) for r in runs] == [
        (two.run_id, RunStatus.DEAD_LETTERED, 3, "HTTP 500"),
        (one.run_id, RunStatus.SUCCEEDED, 1, None),
    ]
    page = stores.repository.runs(read, limit=1, cursor=None)
    assert [r.run_id for r in page.items] == [two.run_id]
    rest = stores.repository.runs(read, limit=1, cursor=page.next_cursor)
    assert ([r.run_id for r in rest.items], rest.next_cursor) == ([one.run_id], None)


def test_a_recurring_task_that_fails_too_often_pauses_itself_armed_for_its_next_occurrence(stores):
    task = stores.recurring()
    one = first(task)
    claimed = stores.claim(one)
    two_ms = one.due_ms + 60_000
    failed = run_of(one, RunStatus.FAILED, error="HTTP 400")
    reason = "paused after 3 failed occurrences"
    assert stores.store.rearm(
        claimed.task,
        one,
        failed,
        next_due_ms=two_ms,
        staged_next=False,
        now_ms=one.due_ms + 10,
        failures=3,
        paused_reason=reason,
    )
    read = stores.get(task)
    assert (read.status, read.paused_reason, read.consecutive_failures) == (TaskStatus.PAUSED, reason, 3)
    assert read.due_at == from_ms(two_ms)
    assert stores.claim(staged_for(task.id, two_ms, one_shot=False)) is Refusal.STALE
    assert stores.repository.live_tasks("t") == 1  # a paused task still counts


def test_a_recurring_task_cancelled_while_firing_keeps_its_run_and_is_not_rearmed(stores):
    task = stores.recurring()
    one = first(task)
    claimed = stores.claim(one)
    stores.cancel(task)
    assert stores.repository.live_tasks("t") == 0  # a recurring task's cancel frees it at once
    ran = run_of(one, RunStatus.SUCCEEDED)
    assert not stores.store.rearm(
        claimed.task, one, ran, next_due_ms=None, staged_next=False, now_ms=one.due_ms + 10, counted=True
    )
    assert stores.repository.live_tasks("t") == 0
    read = stores.get(task)
    assert (read.status, read.next_fire_at, read.run) == (TaskStatus.CANCELLED, None, None)
    assert read.last_run.run_id == one.run_id
    assert [(r.run_id, r.status) for r in stores.runs(task)] == [(one.run_id, RunStatus.SUCCEEDED)]
    assert stores.store.due(0, NOW_MS, NOW_MS + 600_000) == []


def _rescheduled_while_firing(stores) -> tuple[Task, Staged, Claimed, int]:
    """A recurring task whose first occurrence was claimed, then moved 45 s later by its client
    (a PATCH) while it fired: the task, the occurrence, its claim and the new due time."""
    task = stores.recurring()
    one = first(task)
    claimed = stores.claim(one)
    moved_ms = one.due_ms + 45_000
    current = stores.get(task)
    stores.repository.update(replace(current, due_at=from_ms(moved_ms), next_fire_at=from_ms(moved_ms)))
    return task, one, claimed, moved_ms


def test_a_recurring_task_rescheduled_while_firing_keeps_the_clients_occurrence(stores):
    task, one, claimed, moved_ms = _rescheduled_while_firing(stores)
    ran = run_of(one, RunStatus.SUCCEEDED)
    assert not stores.store.rearm(
        claimed.task, one, ran, next_due_ms=one.due_ms + 60_000, staged_next=False, now_ms=one.due_ms + 10
    )
    read = stores.get(task)
    assert (read.status, read.due_at, read.run) == (TaskStatus.SCHEDULED, from_ms(moved_ms), None)
    moved = staged_for(task.id, moved_ms, one_shot=False)
    due = stores.store.due(0, NOW_MS, NOW_MS + 600_000)
    assert moved in due
    # the DynamoDB store writes the next occurrence's bucket item before the arming (a crash
    # between them must not leave an armed occurrence no scan finds): the one this refused
    # re-arm wrote is staged, and refused by the claim, the task being armed before it (the
    # trigger looks again until the misfire tolerance, then drops it)
    for stray in (d for d in due if d != moved):
        assert stray == staged_for(task.id, one.due_ms + 60_000, one_shot=False)
        assert stores.claim(stray) is Refusal.BEHIND
    assert isinstance(stores.claim(moved), Claimed)


def test_a_recurring_task_completed_by_a_claim_that_was_not_counted_frees_nothing(stores):
    task = stores.recurring()
    one = first(task)
    claimed = stores.claim(one)
    ran = run_of(one, RunStatus.SUCCEEDED)
    # counted=False: the trigger's claim said so (a task registered before quotas)
    assert stores.store.rearm(claimed.task, one, ran, next_due_ms=None, staged_next=False, now_ms=one.due_ms + 10)
    assert stores.get(task).status is TaskStatus.COMPLETED
    assert stores.repository.live_tasks("t") == 1


def test_a_new_occurrences_claim_starts_its_run_afresh(stores):
    """A run abandoned mid-way (its retry never claimed: the client moved the task) leaves its
    fields on the item; the next occurrence's first claim clears every one of them, its lateness
    too (which the new run's retries would otherwise keep as theirs: ``if_not_exists``)."""
    task = stores.recurring()
    one = first(task)
    stores.claim(one)
    assert stores.store.record_retry(
        one, error="HTTP 500", targets_done=1, fired_ms=one.due_ms + 5, lateness_ms=5, throttled_ms=300
    )
    moved_ms = one.due_ms + 30_000
    current = stores.get(task)
    stores.repository.update(replace(current, due_at=from_ms(moved_ms), next_fire_at=from_ms(moved_ms)))
    ending = stores.claim(one.next_attempt(), at=one.due_ms + 2_000)  # taken to be ended unfired...
    assert isinstance(ending, Claimed)
    assert ending.superseded == "its task was rescheduled while it waited for its next attempt: not fired again"
    skipped = run_of(one.next_attempt(), RunStatus.SKIPPED, attempts=1, error=ending.superseded, fired=False)
    assert not stores.store.rearm(  # ...and put away: the client armed the task already
        ending.task, one.next_attempt(), skipped, next_due_ms=one.due_ms + 60_000, staged_next=False, now_ms=one.due_ms
    )
    moved = staged_for(task.id, moved_ms, one_shot=False)
    claimed = stores.claim(moved)
    assert isinstance(claimed, Claimed)
    assert claimed.targets_done == 0
    run = claimed.task.run
    assert (run.run_id, run.attempts, run.last_error, run.fired_at, run.lateness_ms, run.throttled_ms) == (
        moved.run_id,
        1,
        None,
        None,
        None,
        0,
    )
    assert stores.store.record_retry(moved, error="HTTP 502", targets_done=0, fired_ms=moved_ms + 7, lateness_ms=7)
    assert (stores.get(task).run.fired_at, stores.get(task).run.lateness_ms) == (from_ms(moved_ms + 7), 7)


def moved_a_minute_earlier_and_fired(stores, *, staged_next: bool):  # type: ignore[no-untyped-def]
    """A recurring task (every minute from NOW + 1 min: its home item is that minute's) moved a
    minute earlier by a client, that occurrence claimed, fired and the task re-armed back at its
    first due time (``staged_next``: by the re-arm itself). The task, its first due time and the
    occurrence that fired."""
    task = stores.recurring()
    home_ms = to_ms(task.due_at)
    early_ms = home_ms - 60_000
    current = stores.get(task)
    stores.repository.update(replace(current, due_at=from_ms(early_ms), next_fire_at=from_ms(early_ms)))
    moved = staged_for(task.id, early_ms, one_shot=False)
    claimed = stores.claim(moved)
    assert isinstance(claimed, Claimed)
    ran = run_of(moved, RunStatus.SUCCEEDED)
    rearmed = stores.store.rearm(
        claimed.task, moved, ran, next_due_ms=home_ms, staged_next=staged_next, now_ms=early_ms + 10
    )
    assert rearmed
    return task, home_ms, moved


def test_a_task_re_armed_at_its_first_due_time_keeps_its_item(stores):
    """The pointer to an occurrence at the task's first due time would have the home item's key:
    a re-arm there (a client moved the task a minute earlier; that occurrence fired) arms the
    home item itself, which the scanners stage, and writes no pointer over it."""
    task, home_due, moved = moved_a_minute_earlier_and_fired(stores, staged_next=False)
    earlier = moved.due_ms
    read = stores.get(task)
    assert (read.status, read.due_at) == (TaskStatus.SCHEDULED, from_ms(home_due))
    assert stores.store.status_of(task.id) is TaskStatus.SCHEDULED
    home = staged_for(task.id, home_due, one_shot=False)
    assert stores.store.due(0, earlier + 1, home_due + 1) == [home]
    assert isinstance(stores.claim(home), Claimed)
    assert [r.run_id for r in stores.runs(task)] == [home.run_id, moved.run_id]


# --- extra runs ----------------------------------------------------------------------------------


def test_an_extra_runs_state_shows_in_its_tasks_runs_and_its_end_on_the_task(stores):
    task = stores.one_shot(seconds=600)
    staged = first(task)
    stores.claim(staged)
    stores.store.finish_one_shot(
        staged,
        run_of(staged, RunStatus.FAILED, error="HTTP 400"),
        now_ms=staged.due_ms + 10,
        targets_done=0,
        counted_in="t",
    )
    assert stores.get(task).status is TaskStatus.FAILED
    at = NOW + timedelta(minutes=20)
    extra = replace(new_task(TaskSpec(At(at), TARGETS), tenant="t", now=NOW, shard=1), parent_id=task.id)
    stores.repository.create_run(extra, staged=True)
    assert stores.store.due(1, NOW_MS, NOW_MS + 3_600_000) == []  # staged by its writer
    assert stores.repository.live_tasks("t") == 0  # an extra run is not counted
    run_staged = first(extra)
    assert [(r.run_id, r.status, r.task_id) for r in stores.runs(task)] == [
        (run_staged.run_id, RunStatus.STAGED, task.id),
        (staged.run_id, RunStatus.FAILED, task.id),
    ]
    claimed = stores.claim(run_staged)
    assert isinstance(claimed, Claimed)
    assert not claimed.counted
    assert claimed.task.parent_id == task.id
    assert stores.runs(task)[0].status is RunStatus.FIRING
    stores.store.log_successes("b1", [Success(run_staged.run_id, run_staged.due_ms + 5, 5, 1)], run_staged.due_ms + 10)
    assert (stores.runs(task)[0].status, stores.runs(task)[0].fired_at) == (
        RunStatus.SUCCEEDED,
        from_ms(run_staged.due_ms + 5),
    )
    assert stores.repository.live_tasks("t") == 0


def test_an_extra_runs_end_is_noted_on_its_task_unless_a_later_one_is_there(stores):
    task = stores.one_shot()
    staged = first(task)
    stores.claim(staged)
    stores.store.finish_one_shot(staged, run_of(staged, RunStatus.FAILED), now_ms=staged.due_ms + 10, targets_done=0)
    version = stores.get(task).version

    def extra(minutes: int, status: RunStatus) -> Run:
        at = from_ms(staged.due_ms + minutes * 60_000)
        return Run(f"01KAZ00000000000000000000{minutes}", task.id, at, status, 1, at, 0)

    later, earlier = extra(9, RunStatus.FAILED), extra(5, RunStatus.SUCCEEDED)
    stores.store.note_ended_run(task.id, later)
    read = stores.get(task)
    assert (read.last_run.run_id, read.last_run.status) == (later.run_id, RunStatus.FAILED)
    assert read.version == version  # noting the run is not a change of the task
    stores.store.note_ended_run(task.id, earlier)  # older: neither noted nor completing the task
    read = stores.get(task)
    assert (read.last_run.run_id, read.status) == (later.run_id, TaskStatus.FAILED)
    succeeded = replace(later, status=RunStatus.SUCCEEDED)
    stores.store.note_ended_run(task.id, succeeded)  # the same time: noted, and a failed task completes
    read = stores.get(task)
    assert (read.last_run.run_id, read.last_run.status, read.status) == (
        later.run_id,
        RunStatus.SUCCEEDED,
        TaskStatus.COMPLETED,
    )
    assert read.version == version + 1
    # noted between a client's read and its update (no version bump): the update keeps it
    read_before = stores.get(task)
    latest = extra(12, RunStatus.FAILED)
    stores.store.note_ended_run(task.id, latest)
    stores.repository.update(replace(read_before, name="renamed"))
    assert (stores.get(task).name, stores.get(task).last_run.run_id) == ("renamed", latest.run_id)
    gone = new_task(TaskSpec(At(NOW + timedelta(minutes=3)), TARGETS), tenant="t", now=NOW, shard=0)
    stores.store.note_ended_run(gone.id, succeeded)  # no such task: nothing
    assert stores.store.status_of(gone.id) is None


def test_an_extra_runs_success_completes_only_a_failed_task(stores):
    """Found by make mutation (the completing write's condition could go unnoticed): a run now
    that succeeds on a task still scheduled, or paused, leaves it so; only a failed task completes."""
    for status in (TaskStatus.SCHEDULED, TaskStatus.PAUSED):
        task = stores.recurring()
        if status is TaskStatus.PAUSED:
            stores.repository.update(replace(stores.get(task), status=TaskStatus.PAUSED))
        at = from_ms(first(task).due_ms + 60_000)
        stores.store.note_ended_run(
            task.id, Run("01KAZ000000000000000000099", task.id, at, RunStatus.SUCCEEDED, 1, at, 0)
        )
        read = stores.get(task)
        assert (read.status, read.last_run.status) == (status, RunStatus.SUCCEEDED)


# --- the status index: the firing writes put a task on its status's list, and take it off ----


def _lists(stores: Stores, status: Any, expected: list[str]) -> None:
    """The first page of ``?status=`` of tenant t comes to hold ``expected`` (the index's lag)."""
    from tests.support.eventually import eventually

    def read() -> None:
        assert [t.id for t in stores.repository.list("t", status=status, limit=10, cursor=None).items] == expected

    eventually(read)


@pytest.mark.parametrize("with_task", [True, False], ids=["as claimed", "read from its item"])
def test_a_one_shot_that_fails_is_on_the_failed_list_until_a_redrive_succeeds(stores, with_task):
    from shared.domain.states import TaskFilter

    task = stores.one_shot()
    stores.one_shot(seconds=120)  # another, not failing: never listed
    staged = first(task)
    claimed = stores.claim(staged)
    ended = run_of(staged, RunStatus.DEAD_LETTERED, error="HTTP 500")
    extra = {"task": claimed.task} if with_task else {}
    assert stores.store.finish_one_shot(staged, ended, now_ms=staged.due_ms + 30, targets_done=0, **extra)
    _lists(stores, TaskFilter.FAILED, [task.id])
    assert stores.repository.count("t", TaskFilter.FAILED) == 1
    redriven = Run("01KAZ000000000000000000009", task.id, from_ms(staged.due_ms + 60_000), RunStatus.SUCCEEDED, 1)
    stores.store.note_ended_run(task.id, redriven)
    assert stores.get(task).status is TaskStatus.COMPLETED
    _lists(stores, TaskFilter.FAILED, [])
    assert stores.repository.count("t", TaskFilter.FAILED) == 0


@pytest.mark.parametrize("with_task", [True, False], ids=["as claimed", "read from its item"])
def test_an_extra_run_that_fails_is_never_on_the_failed_list(stores, with_task):
    from shared.domain.states import TaskFilter

    parent = stores.one_shot(seconds=3_600)
    spec = TaskSpec(At(NOW + timedelta(seconds=30)), TARGETS)
    extra = stores.repository.create_run(
        replace(new_task(spec, tenant="t", now=NOW, shard=0), parent_id=parent.id), staged=False
    )
    staged = first(extra)
    claimed = stores.claim(staged)
    ended = run_of(staged, RunStatus.DEAD_LETTERED, error="HTTP 500")
    given = {"task": claimed.task} if with_task else {}
    assert stores.store.finish_one_shot(staged, ended, now_ms=staged.due_ms + 30, targets_done=0, **given)
    task = stores.one_shot(seconds=60)  # a task of its own that fails the same way: listed
    own = first(task)
    own_claim = stores.claim(own)
    own_end = run_of(own, RunStatus.DEAD_LETTERED, error="HTTP 500")
    own_given = {"task": own_claim.task} if with_task else {}
    assert stores.store.finish_one_shot(own, own_end, now_ms=own.due_ms + 30, targets_done=0, **own_given)
    _lists(stores, TaskFilter.FAILED, [task.id])  # the index has both writes by then
    assert stores.repository.count("t", TaskFilter.FAILED) == 1


def test_a_recurring_task_paused_after_failures_and_one_that_ends_failed_are_listed(stores):
    from shared.domain.states import TaskFilter

    pausing, ending = stores.recurring(), stores.recurring(shard=1)
    one = first(pausing)
    claimed = stores.claim(one)
    failed = run_of(one, RunStatus.FAILED, error="HTTP 400")
    rearm = {"staged_next": False, "now_ms": one.due_ms + 10, "failures": 3}
    assert stores.store.rearm(
        claimed.task, one, failed, next_due_ms=one.due_ms + 60_000, paused_reason="3 failures in a row", **rearm
    )
    last = first(ending)
    last_claimed = stores.claim(last)
    assert stores.store.rearm(last_claimed.task, last, run_of(last, RunStatus.FAILED), next_due_ms=None, **rearm)
    _lists(stores, TaskFilter.PAUSED_AFTER_FAILURES, [pausing.id])
    _lists(stores, TaskFilter.PAUSED, [pausing.id])
    _lists(stores, TaskFilter.FAILED, [ending.id])
    counts = [stores.repository.count("t", s) for s in (TaskFilter.PAUSED, TaskFilter.PAUSED_AFTER_FAILURES)]
    assert counts == [1, 1]
    # a client's resume takes it off (the repository's update writes its keys: none)
    resumed = replace(stores.get(pausing), status=TaskStatus.SCHEDULED, paused_reason=None)
    stores.repository.update(resumed)
    _lists(stores, TaskFilter.PAUSED, [])


# --- edges make mutation found unheld --------------------------------------------------------


def test_an_occurrence_its_re_arm_staged_is_not_staged_again_and_one_it_left_is(stores):
    staged_task, left_task = stores.recurring(), stores.recurring()
    for task, staged_next in ((staged_task, True), (left_task, False)):
        one = first(task)
        claimed = stores.claim(one)
        ran = run_of(one, RunStatus.SUCCEEDED)
        assert stores.store.rearm(
            claimed.task, one, ran, next_due_ms=one.due_ms + 60_000, staged_next=staged_next, now_ms=one.due_ms + 10
        )
    due = stores.store.due(0, NOW_MS + 60_000, NOW_MS + 600_000)
    assert staged_for(left_task.id, NOW_MS + 120_000, one_shot=False) in due
    assert staged_for(staged_task.id, NOW_MS + 120_000, one_shot=False) not in due


def test_a_scan_window_holds_its_start_and_not_its_end(stores):
    task = stores.one_shot(seconds=90)
    due_ms = to_ms(task.due_at)
    assert [s.task_id for s in stores.store.due(0, due_ms, due_ms + 1)] == [task.id]
    assert stores.store.due(0, due_ms - 60_000, due_ms) == []
    assert not stores.store.has_items(0, due_ms - 60_000, due_ms)
    assert stores.store.has_items(0, due_ms, due_ms + 1)


def test_a_counted_recurring_tasks_last_occurrence_rescheduled_meanwhile_completes_nothing(stores):
    task, one, claimed, moved_ms = _rescheduled_while_firing(stores)
    ran = run_of(one, RunStatus.SUCCEEDED)
    assert not stores.store.rearm(
        claimed.task, one, ran, next_due_ms=None, staged_next=False, now_ms=one.due_ms + 10, counted=True
    )
    read = stores.get(task)
    assert (read.status, read.due_at) == (TaskStatus.SCHEDULED, from_ms(moved_ms))
    assert stores.repository.live_tasks("t") == 1  # still counted: it fires at its new time


def test_an_extra_run_older_than_the_occurrence_put_away_last_is_not_the_tasks_latest_and_a_newer_one_is(stores):
    task = stores.recurring()
    one = first(task)
    claimed = stores.claim(one)
    ran = run_of(one, RunStatus.SUCCEEDED)
    assert stores.store.rearm(
        claimed.task, one, ran, next_due_ms=one.due_ms + 60_000, staged_next=False, now_ms=one.due_ms + 10
    )
    older = Run("01KAZ000000000000000000007", task.id, from_ms(one.due_ms - 1_000), RunStatus.FAILED, 1)
    stores.store.note_ended_run(task.id, older)
    read = stores.get(task)
    assert read.last_run is not None
    assert (read.last_run.run_id, read.last_run.status) == (one.run_id, RunStatus.SUCCEEDED)
    newer = Run("01KAZ000000000000000000008", task.id, from_ms(one.due_ms + 1_000), RunStatus.FAILED, 1)
    stores.store.note_ended_run(task.id, newer)
    read = stores.get(task)
    assert read.last_run is not None
    assert (read.last_run.run_id, read.last_run.status) == (newer.run_id, RunStatus.FAILED)


def test_a_one_shot_ended_on_time_keeps_a_lateness_of_0_and_a_retry_without_limits_no_throttling(stores):
    at_once = stores.one_shot(seconds=60)
    first_attempt = first(at_once)
    stores.claim(first_attempt)
    failed = run_of(first_attempt, RunStatus.FAILED, error="HTTP 400")
    on_time = replace(failed, fired_at=from_ms(first_attempt.due_ms), lateness_ms=0)
    assert stores.store.finish_one_shot(first_attempt, on_time, now_ms=first_attempt.due_ms + 10, targets_done=0)
    assert stores.get(at_once).run.lateness_ms == 0
    task = stores.one_shot()
    one = first(task)
    stores.claim(one)
    assert stores.store.record_retry(one, error="HTTP 500", targets_done=0, fired_ms=one.due_ms, lateness_ms=0)
    assert not stores.get(task).run.throttled_ms
    two = one.next_attempt()
    stores.claim(two, at=one.due_ms + 2_000)
    on_time = Run(two.run_id, task.id, from_ms(one.due_ms), RunStatus.FAILED, 2, from_ms(one.due_ms), 0, "HTTP 500")
    assert stores.store.finish_one_shot(two, on_time, now_ms=one.due_ms + 2_010, targets_done=0)
    read = stores.get(task).run
    assert (read.status, read.lateness_ms, read.throttled_ms) == (RunStatus.FAILED, 0, 0)


def test_the_marks_of_more_shards_than_one_batch_get_reads_are_all_read(stores):
    lease = stores.store.begin_scan(240, NOW_MS, 60_000)  # past two batches of 100 keys
    assert lease is not None
    stores.store.end_scan(240, lease[1], NOW_MS + 5_000)
    marks, _ = stores.store.scan_marks(range(250))
    assert len(marks) == 250
    assert (marks[240], marks[3]) == (NOW_MS + 5_000, None)


def _cancelled_while_its_retry_was_recorded(stores, *, pause: bool = False) -> tuple[Task, Staged]:
    """A counted one-shot cancelled (or paused) while firing, whose attempt then failed and was
    recorded to be retried: the cancel left its place to the run's outcome."""
    task = stores.one_shot()
    one = first(task)
    stores.claim(one)
    current = stores.get(task)
    if pause:
        stores.repository.update(replace(current, status=TaskStatus.PAUSED))
    else:
        stores.cancel(task)
    assert stores.store.record_retry(one, error="HTTP 500", targets_done=0, fired_ms=one.due_ms + 5, lateness_ms=5)
    assert stores.repository.live_tasks("t") == 1
    return task, one


def test_a_late_copy_of_a_cancelled_runs_earlier_attempt_frees_its_place_once(stores):
    _task, one = _cancelled_while_its_retry_was_recorded(stores)
    assert stores.claim(one, at=one.due_ms + 1_000, log="b9") is Refusal.STALE  # a copy of attempt 1
    assert stores.repository.live_tasks("t") == 0  # the run will never be counted out otherwise
    ending = stores.claim(one.next_attempt(), at=one.due_ms + 2_000)
    assert isinstance(ending, Claimed)
    assert (ending.superseded is not None, ending.counted) == (True, False)  # freed once
    assert stores.repository.live_tasks("t") == 0


def test_a_late_copy_of_a_paused_runs_earlier_attempt_frees_nothing(stores):
    _task, one = _cancelled_while_its_retry_was_recorded(stores, pause=True)
    assert stores.claim(one, at=one.due_ms + 1_000, log="b9") is Refusal.STALE
    assert stores.repository.live_tasks("t") == 1  # paused: it may fire after a resume


def test_a_late_copy_of_a_cancelled_run_whose_retry_is_firing_frees_it_only_once_that_trigger_died(stores):
    task, one = _cancelled_while_its_retry_was_recorded(stores)
    two = one.next_attempt()
    taken = stores.claim(two, at=one.due_ms + 2_000, log="b2")  # to end it unfired
    assert isinstance(taken, Claimed)
    assert stores.claim(one, at=one.due_ms + 3_000, log="b9") is Refusal.STALE  # b2 is at it: its end frees
    assert stores.repository.live_tasks("t") == 1
    died = one.due_ms + 2_000 + LEASE_MS + 1  # b2's trigger died before ending it
    assert stores.claim(one, at=died, log="b9") is Refusal.STALE
    assert stores.repository.live_tasks("t") == 0
    assert stores.get(task).status is TaskStatus.CANCELLED


def test_a_re_arm_back_to_the_tasks_first_due_time_marks_its_home_item_staged(stores):
    """A task moved earlier than its first due time (a PATCH) comes back to it: the home item is
    then the occurrence's pointer, and the re-arm that staged it says so there."""
    task, home_ms, early = moved_a_minute_earlier_and_fired(stores, staged_next=True)
    early_ms = early.due_ms
    assert staged_for(task.id, home_ms, one_shot=False) not in stores.store.due(0, early_ms, home_ms + 60_000)
