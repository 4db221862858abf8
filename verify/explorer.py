"""The explorer: every order of the steps of a case's actors, with crashes, checked at the end.

One execution: the case builds a fresh :class:`~verify.world.World` (its task registered, the
copies of its message waiting in SQS, its clients' calls ready); then, until nothing is left to
do, each decision picks one option among:

- a step of an actor (the port call it waits at, and its code up to the next one);
- its death at that gate (a crash: the process stops, the call is never made), or at the answer
  of a target's call its timeout (Lambda stops it at the function's timeout, the call made and
  its answer lost), while the case's crash budget lasts;
- the receive of a message now visible in SQS (a new trigger invocation with it as its record).

When no actor is left and no message is visible, the clock moves to the next message's visible
time. A receive that failed (its handler raised, or answered ``in_flight``) or was lost comes
back after the visibility timeout, as SQS returns it.

The orders explored are bounded by *preemptions* (context bounding, after CHESS: Musuvathi and
Qadeer, "Iterative context bounding for systematic testing of multithreaded programs", PLDI
2007): switching away from an actor that could go on counts one, and a case allows a few. Within
the bound every order is explored; races between two deliveries need one or two preemptions,
which is why small bounds find what larger ones would.

Copies of one message are symmetric until one is received (symmetry reduction: Ip and Dill,
"Better verification through symmetry", Formal Methods in System Design 9, 1996). SQS's copies
differ only in their id, and nothing reads an id but as a name: the trigger keys its batch's
turns by it, the world names an invocation after it; no id is compared, ordered or derived from
(``Batch.take_turns`` orders by due time). So receiving one of two copies that are alike in all
but their id, neither received yet in the execution, leads to the same executions as receiving
the other, their ids swapped, and the same end states and violations: only the first of them is
a receive option (:meth:`Run.receivable`). A copy received once is never a twin again: the world
has named an actor after it. ``explore_case(..., symmetry=False)`` explores both;
tests/unit/test_explorer.py checks that the two find the same ends and the same broken
invariants.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from shared.domain.claims import Handled, Result
from shared.observability import logger
from verify.engine import Actor, ActorState, Chooser, Execution, Violation, next_prefix
from verify.world import TRIGGER_TIMEOUT_MS, Message, World

MAX_DECISIONS = 2_000
"""An execution still going after this many decisions does not end: a violation of its own."""


@dataclass
class Case:
    """A situation to explore: what the world starts with, which messages belong to it, what
    must hold at the end (besides the invariants every case has)."""

    name: str
    build: Callable[[World], None]
    check: Callable[[World], Iterable[Violation]]
    follows: Callable[[World, Message], bool]
    crashes: int = 1
    preemptions: int = 2
    description: str = ""


@dataclass
class Explored:
    case: str
    executions: int = 0
    complete: bool = False
    """Every schedule within the bounds was explored (not cut by the limit)."""
    ends: set[Any] = field(default_factory=set)
    violations: list[Execution] = field(default_factory=list)
    seconds: float = 0.0
    steps: int = 0


Option = tuple[str, Any]
"""(what, whom): ``step``/``crash``/``timeout`` an actor, or ``receive`` a message."""


class Run:
    """One execution: its world, the budgets left, the actor that moved last."""

    def __init__(
        self, case: Case, prefix: list[int], world_factory: Callable[[], World], *, symmetry: bool = True
    ) -> None:
        self.case, self.chooser, self.symmetry = case, Chooser(prefix), symmetry
        self.world = world_factory()
        case.build(self.world)
        self.receives: dict[Actor, Message] = {}
        self.received: set[str] = set()
        """The ids of the messages received so far in this execution."""
        self.invocations = 0
        self.crashes, self.preemptions = case.crashes, case.preemptions
        self.current: Actor | None = None
        self.violations: list[Violation] = []

    def go(self) -> Execution:
        world, decisions = self.world, 0
        while (options := self._options()) is not None:
            if not options:
                continue  # the clock moved to the next message
            decisions += 1
            if decisions > MAX_DECISIONS:
                self.violations.append(Violation("ends", f"still going after {MAX_DECISIONS} decisions"))
                break
            self._apply(*options[self.chooser.choose(len(options))])
        world.stage.close()
        for message in self.receives.values():
            world.sqs.failed(message)  # cut short: SQS has it back
        self.violations += common_invariants(world) + list(self.case.check(world))
        return Execution(self.chooser.schedule(), self.violations, list(world.stage.log), end_state(world))

    def _options(self) -> list[Option] | None:
        """What may happen next; [] when the clock just moved; None when nothing is left."""
        world = self.world
        runnable = world.stage.runnable()
        free = self._free()  # choosing another is no preemption
        options: list[Option] = []
        for actor in runnable:
            if not free and actor is not self.current and self.preemptions == 0:
                continue
            options.append(("step", actor))
            if self.crashes and actor.state is ActorState.AT_GATE:
                options.append(("crash", actor))
                if actor.gate.startswith("answer http"):
                    options.append(("timeout", actor))
        if free or self.preemptions:
            now = world.clock()
            visible = [m for m in world.sqs.waiting if m.visible_ms <= now and self.case.follows(world, m)]
            options += [("receive", m) for m in self.receivable(visible)]
        if options:
            return options
        later = [m for m in world.sqs.waiting if self.case.follows(world, m)]
        if not later:
            return None
        world.clock.now = max(world.clock.now, min(m.visible_ms for m in later))
        self.current = None
        return []

    def receivable(self, visible: list[Message]) -> list[Message]:
        """The visible messages a receive may take: all of them, but of copies alike in all but
        their id and not received yet only the first (the module's docstring says why)."""
        if not self.symmetry:
            return visible
        kept, fresh = [], set()
        for message in visible:
            if message.id not in self.received:
                alike = (message.staged, message.visible_ms, message.receives, message.stranded)
                if alike in fresh:
                    continue
                fresh.add(alike)
            kept.append(message)
        return kept

    def _free(self) -> bool:
        """Whether the actor that moved last can no longer move (then any choice is no preemption)."""
        current = self.current
        return current is None or current.state is ActorState.DONE or current.state is ActorState.DEAD

    def _apply(self, kind: str, subject: Any) -> None:
        world, stage = self.world, self.world.stage
        free = self._free()
        actor = self._received(subject) if kind == "receive" else subject
        if not free and actor is not self.current:
            self.preemptions -= 1
        if kind in ("crash", "timeout"):
            self.crashes -= 1
            world.events.crashes.append((actor.name, actor.gate))
            if kind == "timeout":  # Lambda stops the invocation at its timeout: the clock has run on
                started = world.started_ms.get(actor.name, world.clock.now)
                world.clock.now = max(world.clock.now, started + TRIGGER_TIMEOUT_MS)
            stage.kill(actor, "the function's timeout" if kind == "timeout" else "crash")
        else:
            if actor.state is ActorState.NEW:
                world.started_ms[actor.name] = world.clock()
            stage.step(actor)
        self.current = actor if actor.state is ActorState.AT_GATE else None
        if actor in self.receives and actor.state in (ActorState.DONE, ActorState.DEAD):
            _answered(world, actor, self.receives.pop(actor))

    def _received(self, message: Message) -> Actor:
        """A trigger invocation with ``message`` as its record."""
        self.world.sqs.waiting.remove(message)
        self.received.add(message.id)
        message.receives += 1
        self.invocations += 1
        name = f"trigger{self.invocations}({message.id}#{message.receives})"
        actor = self.world.stage.add(name, self.world.deliver(message))
        self.receives[actor] = message
        return actor


def execute(
    case: Case, prefix: list[int], world_factory: Callable[[], World], *, symmetry: bool = True
) -> tuple[Execution, Chooser]:
    """Run one execution of ``case`` along ``prefix`` (then the first option at each decision)."""
    run = Run(case, prefix, world_factory, symmetry=symmetry)
    return run.go(), run.chooser


@contextmanager
def _quiet() -> Iterator[None]:
    """The product's logger at CRITICAL while the block runs, then as it was: the product logs each
    chain hop and give-up, millions of lines over an exploration. Set once per exploration, not per
    execution (each setLevel clears logging's caches: 3 % of a run), and given back, as the tests
    of a pytest worker run after one another."""
    before = logger.log_level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(before)


def _answered(world: World, actor: Actor, message: Message) -> None:
    """What the invocation's end tells SQS (functions/trigger/handler.py): a record whose run
    another trigger holds (``in_flight``) or whose handler raised is reported failed, and a lost
    invocation fails every record; either way the message comes back. Else it is deleted."""
    fired: Handled | None = actor.result if isinstance(actor.result, Handled) else None
    error = None if actor.error is None else f"{type(actor.error).__name__}: {actor.error}"
    world.events.answers.append((actor.name, fired.result if fired else None, error))
    if actor.state is ActorState.DEAD or actor.error is not None or (fired and fired.result is Result.IN_FLIGHT):
        world.sqs.failed(message)


def common_invariants(world: World) -> list[Violation]:
    """What holds in every case: no run recorded ended twice, no occurrence re-armed twice, and a
    target called again for one attempt only after the call before was cut (its trigger died or
    failed after making it), with the same run id and idempotency key. (That every occurrence
    ends is each case's check: it reads the API's view.)"""
    found: list[Violation] = []
    ended = Counter(run_id for run_id, _ in world.events.ended)
    for run_id, times in ended.items():
        if times > 1:
            hows = [how for r, how in world.events.ended if r == run_id]
            found.append(Violation("ended once", f"run {run_id} recorded ended {times} times: {hows}"))
    rearmed = Counter(run_id for run_id, _ in world.events.rearmed)
    for run_id, times in rearmed.items():
        if times > 1:
            found.append(Violation("re-armed once", f"the occurrence of run {run_id} re-armed {times} times"))
    # a call is cut when its trigger died after making it, or failed before recording it (a
    # trigger that raises loses what the call answered, as a crash does: its message comes back)
    dead = {name for name, _ in world.events.crashes} | {
        name for name, _, error in world.events.answers if error is not None
    }
    by_attempt: dict[tuple[str, str, int], list[Any]] = {}
    for call in world.receiver.calls:
        if call.key != call.run_id:
            found.append(Violation("same key", f"{call.actor} called with key {call.key} for run {call.run_id}"))
        by_attempt.setdefault((call.url, call.run_id, call.attempt), []).append(call)
    for (url, run_id, attempt), calls in by_attempt.items():
        for earlier, later in itertools.pairwise(calls):
            if earlier.actor not in dead:
                found.append(
                    Violation(
                        "called again only after a cut call",
                        f"{url} called twice for run {run_id} attempt {attempt} ({earlier.actor}, then "
                        f"{later.actor}) though {earlier.actor} did not die",
                    )
                )
    ended_runs = {run_id for run_id, _ in world.events.ended}
    for message in world.sqs.moved:  # a copy of an occurrence that ended is no loss (its alarm fires still)
        if message.staged.run_id not in ended_runs:
            found.append(Violation("never lost", f"{message.id} ({message.staged.run_id}) went to the DLQ unended"))
    return found


def end_state(world: World) -> Any:
    """What an execution ended as, for counting distinct ends: each task's status and run, the
    calls made (url, attempt), the dead letters."""
    tasks = []
    for task_id in sorted(world.repository._tasks):
        task = world.repository.item_task(task_id)
        run = task.run
        tasks.append((task.status.value, run.status.value if run else None, run.attempts if run else None))
    calls = tuple(sorted(Counter((c.url, c.attempt) for c in world.receiver.calls).items()))
    return (tuple(tasks), calls, len(world.dead_letters.letters), len(world.sqs.dlq), len(world.sqs.moved))


def explore_case(case: Case, world_factory: Callable[[], World], limit: int, *, symmetry: bool = True) -> Explored:
    """Every schedule of ``case`` within its bounds, up to ``limit`` executions (of twin copies'
    receives only the first's, unless ``symmetry`` is False)."""
    explored = Explored(case.name)
    started = time.perf_counter()
    prefix: list[int] | None = []
    with _quiet():
        while prefix is not None and explored.executions < limit:
            execution, chooser = execute(case, prefix, world_factory, symmetry=symmetry)
            explored.executions += 1
            explored.steps += len(execution.trace)
            explored.ends.add(execution.end_state)
            if execution.violations:
                explored.violations.append(execution)
            prefix = next_prefix(chooser.trail)
    explored.complete = prefix is None
    explored.seconds = time.perf_counter() - started
    return explored


def replay(case: Case, schedule: list[int], world_factory: Callable[[], World], *, symmetry: bool = True) -> Execution:
    with _quiet():
        execution, _ = execute(case, schedule, world_factory, symmetry=symmetry)
    return execution
