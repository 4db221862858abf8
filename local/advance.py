"""The local runtime on the virtual clock (docs/virtual-clock.md, section 3): no tick thread and
no SQS pollers; :meth:`Advance.to` drives them, instant by instant, up to the time asked for.

Each step settles the present (waits until no work is under way, hands every receivable message
of each lane to the trigger as its event source would, and again until nothing is left), then
moves the clock, in the runtime and in moto's SQS (local/moto_patches/clock.py), to the earliest of:

* a sleeping thread's deadline (a trigger waiting for a due time or a retry's start, a limit's
  hold: ``shared.domain.times.sleep`` on the clock);
* the moment a queued message becomes receivable (a staged occurrence's delay, a retry's, a
  visibility timeout that runs out);
* the tick that stages the next occurrence nobody has staged yet: one look-ahead before it is
  due. The ticks in between would each have found their window empty, so the step writes what
  they would have (the tick's clean map, ``PipelineStore.mark_clean``) instead of running a
  month of them: a tick after a month's jump would otherwise look at 43,200 minute buckets.

Finding that occurrence reads the table's bucket partitions inside the moto process
(``local.moto_patches.clock.earliest_unstaged_ms``, asked with the step's other looks in one request:
``MotoServer.look``): the local runtime's own look at moto, which the product never makes.
Occurrences therefore fire in due order, each after everything due before it has fired and been
recorded.

Not driven here (left out, and said so in docs/virtual-clock.md): the function server's retries of
a failed scanner or recover invocation (real-time timers), the stranded queue (the tick drains it
when a step runs one), and jobs (moto's Step Functions waits on the wall).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from local.apigw import LocalContext
from local.clock import VirtualClock
from local.moto_server import Look, MotoServer
from local.sqs_lambda import invoke_batch, receive
from shared.domain.claims import Handled, Result
from shared.domain.times import to_ms

CALLED = frozenset({Result.SUCCEEDED, Result.RETRYING, Result.FAILED, Result.DEAD_LETTERED})
"""The results of an attempt that called its targets."""

RECEIVE_MAX = 10
"""Messages a receive asks for (SQS's most)."""

SETTLE_TIMEOUT_S = 120.0
"""How long a step waits for the work under way to end or sleep before it gives up (a receiver
that never answers holds its trigger that long, at most its call's timeout)."""


@dataclass(frozen=True)
class Lane:
    """A queue the trigger consumes, and how its batches reach a worker."""

    url: str
    arn: str
    handler: Callable[..., Any]
    submit: Callable[[Callable[[], None]], Any]

    @property
    def name(self) -> str:
        """The queue's name (its URL's last part)."""
        return self.url.rsplit("/", 1)[-1]


@dataclass
class Advance:
    clock: VirtualClock
    moto: MotoServer
    sqs: Any
    table: str
    lanes: list[Lane]
    tick: Callable[[], Any]
    ticker: Any
    """The tick's ``Ticker`` (functions/tick/handler.py): its store's marks and clean map."""
    keep: Callable[[int], None] | None = None
    """Given the time each advance ended at, to keep it with the state (a data folder's runtime
    starts there again: ``Runtime._resume_clock``)."""
    fired: set[str] = field(default_factory=set)
    """The occurrences (run ids) whose first attempt called its targets during the advance under way."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _counting: threading.Lock = field(default_factory=threading.Lock)
    _clean: threading.Lock = field(default_factory=threading.Lock)
    """Held while the clean map is read, judged and moved (:meth:`_next_tick`), and by a write
    through the API with the map's repair after it (:meth:`written`)."""
    _last_tick: int | None = None
    _writes: int = 0
    """Writes through the API so far (:meth:`written`): a step's look taken before one is taken again."""

    def count(self, fired: Handled) -> None:
        """The trigger's observer, given every delivery's result (from the batches' threads): an
        occurrence is counted once, when its first attempt called its targets (docs/virtual-clock.md,
        "What fired counts"). Its retries, a delivery dropped as a duplicate or found early, one
        held back by a limit (counted when it is called) and one skipped (its task paused or
        cancelled) are not."""
        if fired.staged.attempt != 1 or fired.result not in CALLED or fired.lateness_ms is None:
            return  # (a run given up on its message's last delivery has no lateness: no call of its own)
        with self._counting:
            self.fired.add(fired.staged.run_id)

    def to(self, until_ms: int) -> tuple[int, int]:
        """Run everything due up to ``until_ms``, in due order; the time then, and how many
        occurrences fired meanwhile (:meth:`count`). One advance at a time."""
        if until_ms < self.clock.now_ms():
            raise ValueError("is before the runtime's time")
        with self._lock:
            with self._counting:
                self.fired = set()
            while True:
                look, seen = self._settle()
                step = self._next(until_ms, look, seen)
                if step is None or step[0] > until_ms:
                    break
                at, tick = step
                self._move(max(at, self.clock.now_ms()))
                if tick:
                    self._last_tick = self.clock.now_ms()
                    with self.clock.busy():
                        self.tick()
            self._move(until_ms)
            self._settle()
            if self.keep is not None:
                self.keep(self.clock.now_ms())
            with self._counting:
                return self.clock.now_ms(), len(self.fired)

    def _move(self, now_ms: int) -> None:
        if now_ms > self.clock.now_ms():
            self.moto.set_clock(now_ms)  # first: the threads it wakes send on the new time
            self.clock.move_to(now_ms)

    def _settle(self) -> tuple[Look, int]:
        """Hand the lanes' receivable messages to the trigger until none is left once no work is
        under way; the step's look that found none (and :meth:`_look`'s count of writes with it),
        which :meth:`_next` goes on from."""
        while True:
            if not self.clock.quiescent(SETTLE_TIMEOUT_S):
                raise TimeoutError(f"work under way did not end or sleep within {SETTLE_TIMEOUT_S} s")
            look, seen = self._look()  # one look, not a receive per lane
            handed = 0
            for lane in self.lanes:
                if lane.name not in look.receivable:
                    continue
                for batch in self._receivable(lane):
                    self.clock.hand_over()
                    lane.submit(self._invoker(lane, batch))
                    handed += 1
            if not handed:
                return look, seen

    def _look(self) -> tuple[Look, int]:
        """moto's look at the queues and the table's marks (``MotoServer.look``), and how many writes
        through the API had been made before it (:meth:`written`)."""
        seen = self._writes
        return self.moto.look(self.table, shards=self.ticker.shards), seen

    def _receivable(self, lane: Lane) -> Iterator[list[dict[str, Any]]]:
        """Batches of what the lane holds receivable, each in due order (the trigger runs a batch's
        records one after the other here: :class:`InlineExecutor`)."""
        while messages := receive(self.sqs, lane.url, RECEIVE_MAX, wait_s=0):
            yield sorted(messages, key=_due)
            if len(messages) < RECEIVE_MAX:
                return  # the lane is drained (what work sends meanwhile, the settle's next look finds)

    def _invoker(self, lane: Lane, batch: list[dict[str, Any]]) -> Callable[[], None]:
        def invoke() -> None:
            with self.clock.busy(carried=True):
                invoke_batch(self.sqs, lane.url, lane.arn, lane.handler, batch)

        return invoke

    def _next(self, until_ms: int, look: Look, seen: int) -> tuple[int, bool] | None:
        """The next instant, and whether the tick runs at it (``until_ms``: where this advance ends),
        from the settled step's ``look``; looked at again when a write through the API came after
        it (``seen``: :meth:`_look`), as the map must be judged on what that write left."""
        now = self.clock.now_ms()
        with self._clean:
            if seen != self._writes:
                look, _ = self._look()
            assert look.marks is not None, "a look of the table's marks"
            marks, clean = look.marks, look.clean
            starts = {
                shard: max(m for m in (mark, clean.get(shard)) if m is not None)
                for shard, mark in marks.items()
                if mark is not None or clean.get(shard) is not None
            }
            message = look.next_message_ms  # moto's test is strict: receivable the moment after
            pending = [moment for moment in (self.clock.next_deadline(), message and message + 1) if moment is not None]
            work = min(pending) if pending else None
            if len(starts) < len(marks):
                tick: int | None = now  # a shard never scanned: its first scan sets its mark
            else:
                tick = self._next_tick(now, work, until_ms, look.unstaged_ms, starts, clean)
        if tick is not None and tick != self._last_tick and (work is None or tick < work):
            return tick, True  # (a tick that changed nothing is not run again at once)
        return (work, False) if work is not None else None

    def _next_tick(
        self, now: int, work: int | None, until_ms: int, due: int | None, starts: dict[int, int], clean: dict[int, int]
    ) -> int | None:
        """When the tick must run to stage the next occurrence nobody staged (None: none), ``due``
        the earliest one's due time past the shards' marks (``starts``). When it comes before any
        other work (``work``: the earliest waiter or message), the ticks' clean map is moved up to it
        across the empty minutes before, as far as is safe: an occurrence written later is written
        by work at ``work`` or after, and is due at least a look-ahead and a guard after its
        writer's now, or staged by its writer (``writer_stages``). Never past this advance's end
        (``until_ms``): the API registers tasks between advances, at that time or later, and one due
        before a clean map moved further would never be scanned. Called holding the clean map."""
        if due is None:
            return None
        at = max(now, due - self.ticker.timing.look_ahead_ms + 1)
        if work is not None and at >= work:
            return at
        safe = (
            min(due, until_ms) if work is None else min(due, work, until_ms)
        )  # nothing unstaged is due before ``due``
        moved = {shard: safe for shard, start in starts.items() if start < safe}
        if moved:
            self.ticker.store.mark_clean({**clean, **moved})
        return at

    def written(self, write: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """A request that may register or re-arm a task, made through the API while an advance
        may run: made with the clean map held, which is then brought back to the present's
        window, as the minute ticks would have left it. A task it wrote due past its writer's
        staging window (``writer_stages``) lies past now + look-ahead, where the scans go on from;
        and no move of the map can come between the write and the repair."""
        with self._clean:
            try:
                answer = write()
            finally:
                self._writes += 1
            end = self.clock.now_ms() + self.ticker.timing.look_ahead_ms
            _, clean = self.ticker.store.scan_marks(range(self.ticker.shards))
            if any(mark > end for mark in clean.values()):
                self.ticker.store.mark_clean({shard: min(mark, end) for shard, mark in clean.items()})
            return answer


def _due(message: dict[str, Any]) -> int:
    """When a staged message's call may start (its retry's start, else its due time)."""
    try:
        body = json.loads(message["Body"])
        return int(body.get("start_ms") or body["due_ms"])
    except (ValueError, KeyError, TypeError):
        return 0


class InlineExecutor:
    """The trigger's thread per record (functions/trigger/handler.py), on the virtual clock: each
    record runs on the batch's own thread, in the batch's order (due order: :meth:`Advance._receivable`).
    A record waiting for its due time then sleeps on the thread the clock counts busy, so the
    clock sees the batch idle while it waits; a record on a thread of its own would leave the
    batch's thread blocked on its future, busy to the clock, and no advance would ever find the
    runtime quiescent."""

    def __init__(self, max_workers: int | None = None) -> None:
        self.max_workers = max_workers

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # as a worker thread would: the future carries it
            future.set_exception(exc)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        return None


def tick_of(handler: Callable[..., Any]) -> Callable[[], Any]:
    """The tick function as the minute rule invokes it."""
    return lambda: handler({}, LocalContext())


CLOCK_ROUTE = "/v1/test/clock"
ADVANCE_ROUTE = "/v1/test/clock:advance"


def with_clock_routes(gateway: Callable[..., dict[str, Any]], advance: Advance) -> Callable[..., dict[str, Any]]:
    """The gateway with the virtual clock's routes in front of the API (they exist only on a
    runtime whose clock is virtual; elsewhere the API answers them 404, as it does any path it
    has not): ``GET /v1/test/clock`` -> ``{"now"}``; ``POST /v1/test/clock:advance`` with
    ``{"to": <time>}`` or ``{"seconds": <n>}`` -> ``{"now", "fired"}`` once everything due up to
    then has fired and been recorded."""

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        path, method = event["path"], event["httpMethod"]
        if path == CLOCK_ROUTE and method == "GET":
            return _answer(200, {"now": iso(advance.clock.now_ms())})
        if path == ADVANCE_ROUTE and method == "POST":
            try:
                until = _until(event.get("body"), advance.clock.now_ms())
                now, fired = advance.to(until)
            except _Refused as refused:
                return _answer(400, {"error": {"code": "validation_error", "message": str(refused)}})
            except TimeoutError as stalled:  # work that neither ended nor slept: the clock stays where it got to
                return _answer(504, {"error": {"code": "clock_stalled", "message": str(stalled)}})
            return _answer(200, {"now": iso(now), "fired": fired})
        if method == "GET":
            return gateway(event, context)
        return advance.written(lambda: gateway(event, context))

    return handle


class _Refused(ValueError):
    pass


def _until(body: str | None, now: int) -> int:
    try:
        asked = json.loads(body or "{}")
    except ValueError:
        raise _Refused("body: is not valid JSON") from None
    if not isinstance(asked, dict) or len(asked.keys() & {"to", "seconds"}) != 1 or asked.keys() - {"to", "seconds"}:
        raise _Refused('body: give exactly one of "to" (a time) and "seconds" (a number)')
    if "seconds" in asked:
        seconds = asked["seconds"]
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds <= MAX_ADVANCE_S:
            raise _Refused(f"seconds: is a number from 0 to {MAX_ADVANCE_S}")
        return now + round(seconds * 1000)
    try:
        until = to_ms(datetime.fromisoformat(str(asked["to"]).replace("Z", "+00:00")))
    except (ValueError, TypeError):
        raise _Refused("to: is not a time (ISO 8601 with its offset)") from None
    if until < now:
        raise _Refused(f"to: is before the runtime's time {iso(now)}")
    if until - now > MAX_ADVANCE_S * 1000:
        raise _Refused(f"to: is more than {MAX_ADVANCE_S} s after the runtime's time")
    return until


MAX_ADVANCE_S = 3 * 366 * 86_400
"""The furthest one advance goes (three years)."""


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _answer(status: int, body: dict[str, Any]) -> dict[str, Any]:
    return {"statusCode": status, "headers": {"Content-Type": "application/json"}, "body": json.dumps(body)}
