"""`make chaos`'s own logic (verify/chaos.py): the occurrences it expects are those of the
schedules it registers (held to croniter, another implementation of cron), and its verdict counts
what it must: an occurrence without a final run is lost, one with two runs recorded twice, and a
second call of one attempt is explained only by its invocation's end (stopped by an injected
fault, or failed) or a restart between the two."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest
from croniter import croniter

from verify.chaos import Answers, Call, Faulted, iso, judge, plan, to_ms

pytestmark = pytest.mark.unit

LOW = to_ms("2026-11-29T10:00:00.000Z")
WINDOW = (LOW, LOW + 300_000)


def occurrences_of(spec: dict) -> list[int]:
    """What a schedule fires, by another reading than the planner's arithmetic."""
    schedule = spec["schedule"]
    if "at" in schedule:
        return [to_ms(schedule["at"])]
    start, end = to_ms(schedule["start"]), to_ms(schedule["end"])
    if "every_seconds" in schedule:
        return list(range(start, end + 1, schedule["every_seconds"] * 1000))
    times = croniter(schedule["cron"], datetime.fromtimestamp(start / 1000 - 0.001, tz=UTC), second_at_beginning=True)
    found = []
    while (at := round(times.get_next(datetime).timestamp() * 1000)) <= end:
        found.append(at)
    return found


def test_the_plan_adds_up_and_each_task_expects_what_its_schedule_fires() -> None:
    planned = plan(2000, WINDOW, "http://127.0.0.1:9", random.Random(5))
    assert sum(len(p.due) for p in planned) == 2000
    kinds = {next(iter(p.spec["schedule"].keys() & {"at", "every_seconds", "cron"})) for p in planned}
    assert kinds == {"at", "every_seconds", "cron"}
    for one in planned:
        assert one.due == occurrences_of(one.spec), one.spec
        assert all(WINDOW[0] <= due < WINDOW[1] for due in one.due), one.spec
        assert one.spec["target"]["http"]["url"].startswith("http://127.0.0.1:")  # loopback only


def run(run_id: str, at: int, status: str = "succeeded") -> dict:
    return {"run_id": run_id, "scheduled_for": datetime.fromtimestamp(at / 1000, tz=UTC).isoformat(), "status": status}


def call(run_id: str, attempt: int, at: float) -> Call:
    return Call("t", run_id, attempt, "", f"key-{run_id}", "200", at)


def test_the_verdict_counts_lost_twice_recorded_and_unexplained_second_calls() -> None:
    planned = plan(30, WINDOW, "http://127.0.0.1:9", random.Random(1))
    one_shots = [p for p in planned if "at" in p.spec["schedule"]][:4]
    tasks = {f"t{i}": p for i, p in enumerate(one_shots)}
    due = {task_id: p.due[0] for task_id, p in tasks.items()}
    runs = {
        "t0": [run("r0", due["t0"])],  # fine
        "t1": [],  # lost: no run
        "t2": [run("r2", due["t2"], "retrying")],  # lost: never ended
        "t3": [run("r3", due["t3"]), run("r3b", due["t3"]), run("r3c", due["t3"] + 1)],  # twice, and one unexpected
    }
    calls = [
        call("r0", 1, 10.0),
        call("r0", 1, 20.0),  # after an injected stop of r0's attempt 1
        call("r3", 2, 30.0),
        call("r3", 2, 50.0),  # a restart at 40 came between
        call("r3b", 1, 60.0),
        call("r3b", 1, 61.0),  # nothing between: unexplained
        call("r3b", 2, 70.0),
        call("r3b", 2, 71.0),  # its invocation failed
        call("r2", 1, 80.0),
        call("r2", 2, 81.0),  # two attempts: not one called twice
        call("r2", 3, 90.0),
        call("r2", 3, 91.0),  # its invocation timed out
        call("r0", 4, 41.0),
        call("r0", 4, 46.0),  # the first made while the runtime was stopping: the restart explains it
        call("r0", 5, 46.0),
        call("r0", 5, 47.0),  # both after the restart: unexplained
    ]
    faulted = Faulted(stopped={("r0", 1)}, failed={("r3b", 2)}, timed_out={("r2", 3)})
    report = judge(tasks, runs, calls, faulted, restarts=[(40.0, 45.0)])
    assert report.expected == 4
    assert report.lost == [f"task t1 at {iso(due['t1'])}: no run", f"task t2 at {iso(due['t2'])}: [('r2', 'retrying')]"]
    (twice,) = report.recorded_twice
    assert "r3b" in twice
    (unexpected,) = report.unexpected_runs
    assert "r3c" in unexpected
    explained = (report.called_twice_stop, report.called_twice_timed_out, report.called_twice_failed)
    assert (*explained, report.called_twice_restart) == (1, 1, 1, 2)
    assert report.called_twice_unexplained == [
        "run r3b attempt 1 (keys ['key-r3b'])",
        "run r0 attempt 5 (keys ['key-r0'])",
    ]
    assert not report.ok
    clean = judge({"t0": tasks["t0"]}, {"t0": runs["t0"]}, calls[:2], faulted, restarts=[])
    assert clean.ok
    assert clean.states == {"succeeded": 1}


def test_the_receivers_answers_are_drawn_per_attempt_in_their_shares() -> None:
    answers = Answers()
    drawn = [answers.choose(9, f"run-{i}", 1) for i in range(20_000)]
    assert drawn == [answers.choose(9, f"run-{i}", 1) for i in range(20_000)]  # the same for a replay
    shares = {answer: drawn.count(answer) / len(drawn) for answer in ("500", "429", "late")}
    assert abs(shares["500"] - answers.error) < 0.01
    assert abs(shares["429"] - answers.throttled) < 0.01
    assert abs(shares["late"] - answers.late) < 0.003
