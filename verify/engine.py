"""The explorer's engine: run the real code of several actors one step at a time, in every order.

An *actor* is a piece of the system that runs on its own (a trigger invocation handling one
delivery of a message, a client's API call). Its code is the product's, unchanged: it runs on a
greenlet of its own and stops at a *gate* before each call into a port (a store write, a queue
send, a target's call), where the engine takes over and decides what happens next: which actor
takes its next step, or that one dies there (a crash: its process stops, nothing after the gate
runs). Between two gates an actor's code runs alone, as it would between two network calls; each
port of the in-memory world is one atomic step, as one DynamoDB request is.

Every decision is a *choice* among the options of that moment, and one execution is the list of
its choices (its *schedule*). The explorer enumerates schedules depth first, by replay: an
execution follows the prefix it is given, then takes the first option at every new decision;
the next prefix is the last decision that had options left, moved on by one. Nothing is
sampled: a bounded run explores the first N schedules of that order, and a schedule printed
with a violation replays it exactly (``--replay``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from greenlet import greenlet


class Killed(BaseException):
    """Thrown into an actor whose process died: it unwinds without another port call (every
    gate it reaches raises this again), as a stopped process runs nothing."""


class ActorState(Enum):
    NEW = "new"
    AT_GATE = "at gate"
    DONE = "done"
    DEAD = "dead"


@dataclass(eq=False)
class Actor:
    name: str
    body: Callable[[], Any]
    state: ActorState = ActorState.NEW
    gate: str = ""
    """The port call it waits to make (at a gate)."""
    result: Any = None
    error: BaseException | None = None
    glet: greenlet | None = None
    steps: int = 0


@dataclass
class Chooser:
    """Answers the execution's decisions: the prefix first, then the first option each time;
    keeps what every decision had (its options and the one taken) for the next prefix."""

    prefix: list[int]
    trail: list[tuple[int, int]] = field(default_factory=list)

    def choose(self, options: int) -> int:
        if options <= 0:
            raise ValueError("a decision needs an option")
        at = len(self.trail)
        chosen = self.prefix[at] if at < len(self.prefix) else 0
        if chosen >= options:
            raise ReplayDiverged(f"decision {at} has {options} options, the schedule says {chosen}")
        self.trail.append((chosen, options))
        return chosen

    def schedule(self) -> list[int]:
        return [chosen for chosen, _ in self.trail]


class ReplayDiverged(Exception):
    """A replayed schedule does not fit the execution (the code changed since it was printed)."""


def next_prefix(trail: list[tuple[int, int]]) -> list[int] | None:
    """The next schedule's prefix in depth-first order, or None once every one was explored."""
    for at in range(len(trail) - 1, -1, -1):
        chosen, options = trail[at]
        if chosen + 1 < options:
            return [c for c, _ in trail[:at]] + [chosen + 1]
    return None


class Stage:
    """Runs actors on greenlets, one gate at a time: the world's ports call :meth:`gate`."""

    def __init__(self) -> None:
        self.actors: list[Actor] = []
        self._live: list[Actor] = []
        """The actors not ended yet (:meth:`runnable`)."""
        self.main = greenlet.getcurrent()
        self.current: Actor | None = None
        self.log: list[str] = []
        """What happened, one line a step: the trace printed with a violation."""

    def add(self, name: str, body: Callable[[], Any]) -> Actor:
        actor = Actor(name, body)
        self.actors.append(actor)
        self._live.append(actor)
        return actor

    def gate(self, label: str) -> None:
        """Called by a port before it acts: hand control back until the engine moves this actor."""
        actor = self.current
        if actor is None:  # the engine itself (setting a world up, reading it after): no gate
            return
        if actor.state is ActorState.DEAD:
            raise Killed
        actor.state, actor.gate = ActorState.AT_GATE, label
        self.main.switch()
        if actor.state is ActorState.DEAD:
            raise Killed

    def runnable(self) -> list[Actor]:
        """The actors that may move, in the order they were added (an ended one never moves
        again: it is left out of the next look)."""
        self._live = [a for a in self._live if a.state is not ActorState.DONE and a.state is not ActorState.DEAD]
        return list(self._live)

    def step(self, actor: Actor) -> None:
        """Let ``actor`` make the call it waits at (or start), and run to its next gate or its end."""
        self.log.append(f"{actor.name}: {actor.gate or 'start'}")
        actor.steps += 1
        if actor.glet is None:
            actor.glet = greenlet(self._runner(actor), parent=self.main)
        self._switch(actor)

    def kill(self, actor: Actor, why: str) -> None:
        """The actor's process dies at its gate: the call it waited to make is never made."""
        self.log.append(f"{actor.name}: dies before {actor.gate or 'start'} ({why})")
        was_started = actor.glet is not None
        actor.state = ActorState.DEAD
        if was_started and actor.glet is not None and not actor.glet.dead:
            self.current = actor
            try:
                actor.glet.throw(Killed)
            finally:
                self.current = None

    def _switch(self, actor: Actor) -> None:
        self.current = actor
        try:
            assert actor.glet is not None
            actor.glet.switch()
        finally:
            self.current = None

    def _runner(self, actor: Actor) -> Callable[[], None]:
        def run() -> None:
            try:
                actor.result = actor.body()
            except Killed:
                actor.state = ActorState.DEAD
                return
            except Exception as exc:  # the actor's own failure: its caller (SQS, a client) sees it
                actor.error = exc
            actor.state = ActorState.DONE

        return run

    def close(self) -> None:
        """Unwind every actor left at a gate (an execution cut short), without a port call."""
        for actor in self.actors:
            if actor.glet is not None and not actor.glet.dead:
                actor.state = ActorState.DEAD
                self.current = actor
                try:
                    actor.glet.throw(Killed)
                finally:
                    self.current = None


@dataclass(frozen=True)
class Violation:
    invariant: str
    detail: str


@dataclass
class Execution:
    schedule: list[int]
    violations: list[Violation]
    trace: list[str]
    end_state: Any
    """What the world ended as, hashable: how many distinct ends the case reached."""
