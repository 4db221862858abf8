"""``make verify``: explore every order of the firing steps of each case (verify/explorer.py).

    python -m verify                    the bounded run `make test` runs too
    python -m verify --deep             a second crash, one more preemption, no limit per case
    python -m verify --case retrying    one case
    python -m verify --case retrying --replay 0x5,1,0x20   one schedule, with its trace
    python -m verify --no-symmetry      every copy's receive too (twins are explored once by default)

Prints, per case, the schedules explored, whether that was all of them within the bounds, the
distinct end states, the violations (each with its schedule, replayable, and its trace). Exits 1
on any violation.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime

from shared.domain.times import to_ms
from verify.cases import CASES
from verify.engine import Execution
from verify.explorer import Case, Explored, explore_case, replay
from verify.world import World

START = to_ms(datetime(2026, 11, 27, 9, 0, tzinfo=UTC))
BOUNDED_LIMIT = 40_000
"""Schedules per case in the bounded run (`make test`): the cases within it are explored whole."""


def world() -> World:
    return World(START)


def compact(schedule: list[int]) -> str:
    """A schedule as runs: ``0x5,1,0x20`` is five 0s, a 1, twenty 0s."""
    parts: list[str] = []
    for choice in schedule:
        if parts and parts[-1].split("x")[0] == str(choice):
            head, _, count = parts[-1].partition("x")
            parts[-1] = f"{head}x{int(count or 1) + 1}"
        else:
            parts.append(str(choice))
    return ",".join(parts)


def expand(text: str) -> list[int]:
    schedule: list[int] = []
    for part in filter(None, text.split(",")):
        choice, _, count = part.partition("x")
        schedule += [int(choice)] * int(count or 1)
    return schedule


def deepened(case: Case) -> Case:
    return replace(case, crashes=case.crashes + 1, preemptions=case.preemptions + 1)


def report(explored: Explored, shown: int = 1) -> None:
    whole = "all" if explored.complete else "first"
    print(
        f"{explored.case:<22} {whole:>5} {explored.executions:>8,} interleavings  {len(explored.ends):>3} end states"
        f"  {len(explored.violations):>5} violating  {explored.seconds:6.1f} s"
    )
    for execution in explored.violations[:shown]:
        show(explored.case, execution)


def show(case: str, execution: Execution) -> None:
    for violation in execution.violations:
        print(f"  VIOLATION {violation.invariant}: {violation.detail}")
    print(f"  replay: python -m verify --case {case} --replay {compact(execution.schedule)}")
    for line in execution.trace:
        print(f"    {line}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m verify", description=__doc__.split("\n")[0])
    parser.add_argument("--case", action="append", choices=sorted(CASES), help="only these cases")
    parser.add_argument("--deep", action="store_true", help="a second crash and one more preemption, no limit")
    parser.add_argument("--limit", type=int, help="schedules per case at most")
    parser.add_argument("--replay", help="one schedule of one case (as printed with a violation)")
    parser.add_argument(
        "--no-symmetry", action="store_true", help="receive each of twin copies too (verify/explorer.py, symmetry)"
    )
    args = parser.parse_args(argv)
    cases = [CASES[name] for name in args.case] if args.case else list(CASES.values())
    if args.deep:
        cases = [deepened(case) for case in cases]
    if args.replay is not None:
        if len(cases) != 1:
            parser.error("--replay needs one --case")
        execution = replay(cases[0], expand(args.replay), world, symmetry=not args.no_symmetry)
        show(cases[0].name, execution)
        print("violations:", len(execution.violations))
        return 1 if execution.violations else 0
    limit = args.limit or (10**9 if args.deep else BOUNDED_LIMIT)
    started = time.perf_counter()
    total, violating = 0, 0
    for case in cases:
        explored = explore_case(case, world, limit, symmetry=not args.no_symmetry)
        report(explored)
        total += explored.executions
        violating += len(explored.violations)
    seconds = time.perf_counter() - started
    print(f"{total:,} interleavings in {seconds:.1f} s ({total / seconds:,.0f}/s), {violating} violating")
    return 1 if violating else 0


if __name__ == "__main__":
    sys.exit(main())
