"""``make chaos``: the local runtime under AWS's faults, over N occurrences of mixed tasks.

    python -m verify.chaos --tasks 20000            N occurrences, a fresh seed (printed)
    python -m verify.chaos --tasks 2000 --seed 7    again, as a run printed it

It starts ``python -m local`` (on the wall's clock, as `make run`) with a data folder and faults
injected at random (local/faults.py: DynamoDB throttling on writes, SQS duplicate deliveries and
visibility lapses, an invocation stopped at its timeout right after its call), a receiver on
loopback that answers 500, 429 with ``Retry-After``, or too late (past the task's timeout) now and
then, and registers one-shot, fixed-rate and cron tasks whose occurrences it knows without asking
Sundial (their times are arithmetic on the schedule, each start and end chosen between two
occurrences), due over a window at ``--rate`` occurrences a second. Meanwhile it stops the
runtime ``--restarts`` times (as Ctrl-C does: every Lambda invocation under way ends where it
stands, moto keeps what it acknowledged) and starts it again on its data folder: the occurrences
due while it is down fire when it is back. Once every run has ended it reads every task's runs
through the API and prints:

- occurrences expected, and **lost**: an occurrence with no run in a final state;
- **recorded twice**: an occurrence with more than one run;
- **called twice**: one attempt of one run called more than once, and whether the invocation that
  made the first call ended before recording it (stopped by an injected fault, stopped at its
  timeout, or failed: SQS delivers its whole batch again) or a restart came between the two
  calls: the only ways the design allows it (docs/design.md 2.7);
- the final states, the calls, the faults injected, and the lateness of first attempts (p50, p99,
  on this machine, restarts included).

Exits 1 when anything is lost, recorded twice, or called twice with nothing to explain it.
Only loopback is called: the tasks' targets are this receiver's URLs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import pairwise
from pathlib import Path
from typing import Any

from sundial_receiver.testing import Sundial

from local.faults import FAULTS_LOG, Faults
from local.moto_server import free_port
from local.settings import LocalSettings
from shared.settings.environment import env_name

ROOT = Path(__file__).resolve().parents[1]
MIN_WINDOW_S = 120
"""The shortest window the occurrences are due in (the recurring tasks' span fits in it)."""
QUIET_S = 10
"""After the window: the runs are first read once no call came for this long."""
TIMEOUT_S = 2
"""Every task's HTTP timeout; a late answer comes this plus half a second after the call."""
RETRY = {"max_attempts": 8, "backoff": "fixed", "interval_seconds": 5}
FINAL = frozenset({"succeeded", "failed", "dead_lettered", "skipped"})
STARTUP_S = 180.0
MISFIRE_TOLERANCE_MS = 24 * 3_600_000
"""The runtime's: longer than the run (a task's missed occurrences would be skipped past it)."""
REGISTER_S = 0.004
"""Seconds one task's registration is allowed for, before the first occurrence is due."""
SETTLE_S = 900.0
"""The longest wait, after the window, for every run to end."""


@dataclass(frozen=True)
class Answers:
    """How the receiver answers a call, drawn per (run, attempt) from the seed."""

    error: float = 0.04
    """500."""
    throttled: float = 0.02
    """429 with ``Retry-After: 30``."""
    late: float = 0.002
    """200, half a second after the task's timeout: the call has timed out."""

    def choose(self, seed: int, run_id: str, attempt: int) -> str:
        draw = random.Random(f"{seed}:{run_id}:{attempt}").random()
        for answer, share in (("500", self.error), ("429", self.throttled), ("late", self.late)):
            if draw < share:
                return answer
            draw -= share
        return "200"


@dataclass(frozen=True)
class Call:
    task_id: str
    run_id: str
    attempt: int
    scheduled_for: str
    key: str
    answer: str
    at: float
    """Wall time of its arrival."""


@dataclass
class Receiver:
    seed: int
    answers: Answers
    calls: list[Call] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def handle(self, body: dict[str, Any], key: str) -> tuple[int, dict[str, str], float]:
        answer = self.answers.choose(self.seed, str(body["run_id"]), int(body["attempt"]))
        call = Call(
            str(body["task_id"]),
            str(body["run_id"]),
            int(body["attempt"]),
            str(body["scheduled_for"]),
            key,
            answer,
            time.time(),  # wall: to place the call between the restarts
        )
        with self.lock:
            self.calls.append(call)
        if answer == "500":
            return 500, {}, 0.0
        if answer == "429":
            return 429, {"Retry-After": "30"}, 0.0
        return 200, {}, (TIMEOUT_S + 0.5 if answer == "late" else 0.0)


@contextmanager
def receiving(receiver: Receiver) -> Iterator[Receiver]:
    class Handle(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            status, headers, wait = receiver.handle(body, self.headers.get("Idempotency-Key", ""))
            if wait:
                time.sleep(wait)  # wall: an answer past the caller's timeout
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handle)
    server.daemon_threads = True
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.2,), daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


class Runtime:
    """``python -m local`` with the data folder ``data`` and ``faults``."""

    def __init__(self, data: Path, faults: str, log: Path) -> None:
        self.data, self.faults, self.log = data, faults, log
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.api = Sundial(f"http://127.0.0.1:{self.port}", timeout_s=300)
        self.restarts: list[tuple[float, float]] = []
        """(wall time the stop began, wall time the runtime answered again), per restart."""

    def start(self) -> None:
        name = LocalSettings.setting_name
        environ = {
            k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k not in LocalSettings.env_names()
        }
        environ.update(
            {
                name("port"): str(self.port),
                name("data"): str(self.data),
                name("faults"): self.faults,
                # a recurring task that fell behind catches up rather than skipping what it missed,
                # so that every occurrence planned must have its run
                env_name("misfire_tolerance_ms"): str(MISFIRE_TOLERANCE_MS),
            }
        )
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-W", "ignore", "-m", "local"],
                cwd=ROOT,
                env={**environ, "PYTHONUNBUFFERED": "1"},
                stdout=out,
                stderr=out,
            )
        deadline = time.monotonic() + STARTUP_S
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"the runtime exited with {self.process.returncode} (see {self.log})")
            try:
                if self.api.call("GET", "/v1/overview")[0] == 200:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the runtime did not answer within {STARTUP_S} s (see {self.log})")
            time.sleep(0.1)  # wall: waiting for a process to start

    def stop(self) -> None:
        """As Ctrl-C does: moto writes its last snapshot of what it acknowledged, and every
        invocation under way ends where it stands (the process ends with them)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=240)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def restart(self) -> None:
        stopped = time.time()  # wall: to place the calls around it
        self.stop()
        self.start()
        self.restarts.append((stopped, time.time()))


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def to_ms(text: str) -> int:
    return round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


@dataclass
class Planned:
    spec: dict[str, Any]
    due: list[int]
    """The occurrences' times (ms), computed here, not asked of Sundial."""


def plan(occurrences: int, window: tuple[int, int], url: str, rng: random.Random) -> list[Planned]:
    """Tasks whose occurrences add up to ``occurrences``, due within ``window`` (ms): three in
    ten one-shots, half in tasks every 5 s (20 occurrences each), a fifth in cron tasks every
    10 s (seconds first: 10 occurrences each)."""
    low, high = window
    target = {"http": {"url": f"{url}/chaos", "timeout_seconds": TIMEOUT_S}}
    common = {"target": target, "retry": RETRY, "misfire": "fire_now"}
    planned: list[Planned] = []
    every = occurrences // 2 // 20
    cron = occurrences // 5 // 10
    one_shots = occurrences - every * 20 - cron * 10
    for _ in range(one_shots):
        at = rng.randrange(low, high)
        planned.append(Planned({"schedule": {"at": iso(at)}, **common}, [at]))
    for _ in range(every):
        first = rng.randrange(low, high - 100_000) // 1000 * 1000
        due = [first + k * 5_000 for k in range(20)]
        schedule = {"every_seconds": 5, "start": iso(first), "end": iso(first + 97_500)}
        planned.append(Planned({"schedule": schedule, **common}, due))
    for _ in range(cron):
        boundary = (rng.randrange(low, high - 110_000) // 10_000 + 1) * 10_000
        due = [boundary + k * 10_000 for k in range(10)]
        start = boundary - 5_000  # between two occurrences: whether start and end count does not matter
        schedule = {"cron": "*/10 * * * * *", "start": iso(start), "end": iso(start + 100_000)}
        planned.append(Planned({"schedule": schedule, **common}, due))
    rng.shuffle(planned)
    return planned


def register(api: Sundial, planned: list[Planned]) -> dict[str, Planned]:
    tasks: dict[str, Planned] = {}
    for start in range(0, len(planned), 100):
        chunk = planned[start : start + 100]
        status, answer = api.call("POST", "/v1/tasks:batch", {"tasks": [p.spec for p in chunk]})
        if status != 200:
            raise RuntimeError(f"registering answered {status}: {str(answer)[:500]}")
        for item, one in zip(answer["items"], chunk, strict=True):
            if "task" not in item:
                raise RuntimeError(f"a task was refused: {item}")
            tasks[item["task"]["id"]] = one
    return tasks


def settled(api: Sundial, tasks: dict[str, Planned], receiver: Receiver) -> dict[str, list[dict[str, Any]]]:
    """Every task's runs, once each of its occurrences has a run that ended (or, for the tasks
    that still have not, after :data:`SETTLE_S`: what is missing then is printed as lost). An
    occurrence whose trigger was stopped comes back after the delay queues' visibility timeout
    (local/settings.py), and a recurring task's next one is armed as the one before ends."""
    deadline = time.monotonic() + SETTLE_S
    while time.time() - max((call.at for call in receiver.calls), default=0.0) < QUIET_S:  # wall
        time.sleep(1)  # wall: the burst of calls is still on
    runs = {task_id: runs_of(api, task_id) for task_id in tasks}
    while time.monotonic() < deadline:
        open_ = [task_id for task_id, found in runs.items() if not _ended(tasks[task_id], found)]
        if not open_:
            break
        time.sleep(5)  # wall: runs still under way
        runs.update({task_id: runs_of(api, task_id) for task_id in open_})
    return runs


def _ended(planned: Planned, runs: list[dict[str, Any]]) -> bool:
    ended = {to_ms(run["scheduled_for"]) for run in runs if run["status"] in FINAL}
    return ended >= set(planned.due) and all(run["status"] in FINAL for run in runs)


def runs_of(api: Sundial, task_id: str) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = []
    cursor = ""
    while True:
        status, page = api.call("GET", f"/v1/tasks/{task_id}/runs?limit=100" + (f"&cursor={cursor}" if cursor else ""))
        if status != 200:
            raise RuntimeError(f"GET runs of {task_id} answered {status}: {page}")
        runs += page["items"]
        cursor = page.get("next_cursor") or ""
        if not cursor:
            return runs


def percentile(values: list[int], share: float) -> int | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


@dataclass
class Report:
    expected: int = 0
    lost: list[str] = field(default_factory=list)
    recorded_twice: list[str] = field(default_factory=list)
    unexpected_runs: list[str] = field(default_factory=list)
    states: Counter[str] = field(default_factory=Counter)
    lateness: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    """By kind of task (one-shot, recurring): a recurring task's occurrences fire one after another,
    so one held back (its trigger stopped: back after the visibility timeout) holds back the rest."""
    called_twice_stop: int = 0
    called_twice_failed: int = 0
    called_twice_timed_out: int = 0
    called_twice_restart: int = 0
    called_twice_unexplained: list[str] = field(default_factory=list)
    calls: int = 0
    answers: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.recorded_twice or self.unexpected_runs or self.called_twice_unexplained)


def judge(
    tasks: dict[str, Planned],
    runs: dict[str, list[dict[str, Any]]],
    calls: list[Call],
    faulted: Faulted,
    restarts: list[tuple[float, float]],
) -> Report:
    report = Report()
    for task_id, planned in tasks.items():
        _judge_runs(report, task_id, planned, runs[task_id])
    report.calls = len(calls)
    report.answers = Counter(call.answer for call in calls)
    _judge_calls(report, calls, faulted, restarts)
    return report


def _judge_runs(report: Report, task_id: str, planned: Planned, runs: list[dict[str, Any]]) -> None:
    by_time: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        by_time[to_ms(run["scheduled_for"])].append(run)
    for due in planned.due:
        report.expected += 1
        found = by_time.pop(due, [])
        name = f"task {task_id} at {iso(due)}"
        if len(found) > 1:
            report.recorded_twice.append(f"{name}: runs {[r['run_id'] for r in found]}")
        if not any(r["status"] in FINAL for r in found):
            report.lost.append(f"{name}: {[(r['run_id'], r['status']) for r in found] or 'no run'}")
        for run in found:
            report.states[run["status"]] += 1
            if run.get("lateness_ms") is not None:
                kind = "one-shot" if "at" in planned.spec["schedule"] else "recurring"
                report.lateness[kind].append(int(run["lateness_ms"]))
    for due, extra in by_time.items():
        report.unexpected_runs.append(f"task {task_id} at {iso(due)}: {[r['run_id'] for r in extra]}")


def _judge_calls(report: Report, calls: list[Call], faulted: Faulted, restarts: list[tuple[float, float]]) -> None:
    by_attempt: dict[tuple[str, int], list[Call]] = defaultdict(list)
    for call in calls:
        by_attempt[(call.run_id, call.attempt)].append(call)
    for (run_id, attempt), same in by_attempt.items():
        same.sort(key=lambda c: c.at)
        for first, second in pairwise(same):
            if (run_id, attempt) in faulted.stopped:
                report.called_twice_stop += 1
            elif (run_id, attempt) in faulted.timed_out:
                report.called_twice_timed_out += 1
            elif (run_id, attempt) in faulted.failed:
                report.called_twice_failed += 1
            elif any(first.at <= answered and stopped <= second.at for stopped, answered in restarts):
                # a restart came between them: the first call was made before the runtime was
                # back (while it was stopping, too: its invocations run on until they end there)
                report.called_twice_restart += 1
            else:
                keys = {first.key, second.key}
                report.called_twice_unexplained.append(f"run {run_id} attempt {attempt} (keys {sorted(keys)})")


@dataclass
class Faulted:
    """What local/faults.py wrote: how many of each fault, and the occurrences (run, attempt) of
    the invocations it stopped and of those that failed (an error escaped them)."""

    counts: Counter[str] = field(default_factory=Counter)
    stopped: set[tuple[str, int]] = field(default_factory=set)
    failed: set[tuple[str, int]] = field(default_factory=set)
    timed_out: set[tuple[str, int]] = field(default_factory=set)


def read_faults(data: Path) -> Faulted:
    faulted = Faulted()
    log = data / FAULTS_LOG
    for line in log.read_text().splitlines() if log.exists() else ():
        fault = json.loads(line)
        if fault["fault"] != "invocation":
            faulted.counts[fault["fault"]] += 1
            continue
        faulted.counts[f"invocation {fault['ended']}"] += 1
        runs = {(str(run_id), int(attempt)) for run_id, attempt in fault["runs"]}
        ended = {"stopped": faulted.stopped, "timed out": faulted.timed_out}.get(fault["ended"], faulted.failed)
        ended.update(runs)
    return faulted


def show(report: Report, restarts: list[tuple[float, float]], wall_s: float) -> None:
    def few(items: list[str]) -> str:
        return "".join(f"\n    {item}" for item in items[:10]) + (
            f"\n    ... {len(items) - 10} more" if len(items) > 10 else ""
        )

    twice = (
        report.called_twice_stop
        + report.called_twice_timed_out
        + report.called_twice_failed
        + report.called_twice_restart
        + len(report.called_twice_unexplained)
    )
    print(f"occurrences {report.expected}: lost {len(report.lost)}{few(report.lost)}")
    print(f"recorded twice {len(report.recorded_twice)}{few(report.recorded_twice)}")
    print(f"runs at no expected time {len(report.unexpected_runs)}{few(report.unexpected_runs)}")
    print(
        f"called twice (one attempt) {twice}: its invocation stopped (injected) {report.called_twice_stop}, timed "
        f"out {report.called_twice_timed_out}, failed {report.called_twice_failed}, across a restart "
        f"{report.called_twice_restart}, "
        f"unexplained {len(report.called_twice_unexplained)}"
        f"{few(report.called_twice_unexplained)}"
    )
    print(f"final states: {dict(sorted(report.states.items()))}")
    print(f"calls {report.calls}: answers {dict(sorted(report.answers.items()))}")
    down = ", ".join(f"{answered - stopped:.1f}" for stopped, answered in restarts)
    print(f"faults injected: {dict(sorted(report.faults.items()))}; restarts {len(restarts)} (down {down} s)")
    for kind, lateness in sorted(report.lateness.items()):
        p50, p99 = percentile(lateness, 0.5), percentile(lateness, 0.99)
        print(f"lateness of first attempts, {kind}: p50 {p50} ms, p99 {p99} ms, max {max(lateness)} ms")
    print(f"wall time {wall_s:.0f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m verify.chaos", description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=20_000, help="occurrences (of mixed tasks), default 20000")
    parser.add_argument("--seed", type=int, default=None, help="the run's seed (default: a fresh one, printed)")
    parser.add_argument("--rate", type=float, default=40.0, help="occurrences due a second (default 40)")
    parser.add_argument("--restarts", type=int, default=4, help="restarts at random moments of the window (default 4)")
    parser.add_argument("--throttle", type=float, default=0.05, help="per DynamoDB write (default 0.05)")
    parser.add_argument("--duplicate", type=float, default=0.02, help="per SQS message received (default 0.02)")
    parser.add_argument("--lapse", type=float, default=0.01, help="per SQS message received (default 0.01)")
    parser.add_argument("--stop", type=float, default=0.005, help="per target call (default 0.005)")
    parser.add_argument("--keep", action="store_true", help="keep the data folder and the runtime's log")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else secrets.randbelow(10**9)
    faults = Faults(seed, args.throttle, args.duplicate, args.lapse, args.stop)
    spec = ",".join(f"{name}={getattr(faults, name)}" for name in ("seed", "throttle", "duplicate", "lapse", "stop"))
    print(f"chaos: seed {seed}, {args.tasks} occurrences, faults {spec}, {args.restarts} restarts", flush=True)
    rng = random.Random(seed)
    folder = Path(tempfile.mkdtemp(prefix="sundial-chaos-"))
    data = folder / "data"
    started = time.monotonic()
    with receiving(Receiver(seed, Answers())) as receiver:
        runtime = Runtime(data, spec, folder / "runtime.log")
        runtime.start()
        try:
            window_s = max(MIN_WINDOW_S, args.tasks / args.rate)
            low = round(time.time() * 1000) + round((30 + args.tasks * REGISTER_S) * 1000)  # wall: due times
            window = (low, low + round(window_s * 1000))
            tasks = register(runtime.api, plan(args.tasks, window, receiver.url, rng))
            late = max(0, round(time.time() * 1000) - low)  # wall
            print(
                f"registered {len(tasks)} tasks in {time.monotonic() - started:.0f} s; due over {window_s:.0f} s "
                f"from {iso(low)}" + (f" ({late} ms after the first was due)" if late else ""),
                flush=True,
            )
            for at in sorted(rng.uniform(window[0], window[1]) / 1000 for _ in range(args.restarts)):
                time.sleep(max(0.0, at - time.time()))  # wall: a restart at a random moment of the window
                runtime.restart()
                print(f"  restarted at {iso(round(at * 1000))} ({len(receiver.calls)} calls so far)", flush=True)
            time.sleep(max(0.0, window[1] / 1000 - time.time()))  # wall: until the last occurrence is due
            runs = settled(runtime.api, tasks, receiver)
        finally:
            runtime.stop()
    faulted = read_faults(data)
    report = judge(tasks, runs, receiver.calls, faulted, runtime.restarts)
    report.faults = faulted.counts
    show(report, runtime.restarts, time.monotonic() - started)
    if args.keep or not report.ok:
        with (folder / "calls.jsonl").open("w") as out:
            out.writelines(json.dumps(dataclasses.asdict(call)) + "\n" for call in receiver.calls)
        (folder / "restarts.json").write_text(json.dumps(runtime.restarts))
        (folder / "runs.json").write_text(json.dumps(runs))
        print(f"kept: {folder} (the data folder, runtime.log, {FAULTS_LOG}, calls.jsonl, restarts.json, runs.json)")
    else:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"replay: python -m verify.chaos --tasks {args.tasks} --seed {seed}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
