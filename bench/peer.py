"""`make bench ARGS="--peer"`: Sundial's `make run` beside a peer, APScheduler, through the same
load in the same session (docs/measured.md, "Beside APScheduler"). Machines differ from session to
session; the ratio of the two is the figure, not either absolute time.

Two loads, each run by both, one after the other, on one receiver process:

* **steady**: ``--tasks`` one-shot tasks (default 6,000) due evenly over ``--window`` seconds
  (default 60: 100 a second);
* **hot second**: ``--hot`` one-shot tasks (default 1,000) all due within one second.

Sundial is `make run` as a user starts it (``python -m local``, its own process, moto in another,
a data folder kept), its tasks registered through ``POST /v1/tasks:batch`` before the load's
lead-in ends, each calling the receiver with its own ``task_id``. APScheduler 3 is a
``BackgroundScheduler`` with a ``SQLAlchemyJobStore`` (SQLite in a temporary file: jobs kept, as
Sundial keeps its tasks) and a thread pool of 20, each job a ``date`` trigger whose function posts
the same body to the same receiver (``misfire_grace_time=None``: a late job still runs). Both are
measured alike: a task's lateness is when its first call reached the receiver minus its due time;
lost are tasks never called within 30 s of the load's end, duplicated are second calls, and the
CPU a fire is every process of the scheduler's (Sundial's runtime and its moto; APScheduler's the
bench's own, where it runs) from the first due time until the last call arrived, over the fires:
less moved by a slower hour than lateness, which grows without bound once a scheduler falls behind.
"""

from __future__ import annotations

import json
import os
import resource
import tempfile
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.capacity import percentile
from bench.priority import measure
from bench.receiver import RemoteReceiver, receiver_process
from local.moto_server import free_port

PATH = "/peer"
SETTLE_S = 30.0
"""How long after a load's last due time its calls may still arrive."""
PEER_WORKERS = 20


@dataclass(frozen=True)
class Load:
    name: str
    due: list[float]
    """Each task's due time (epoch seconds)."""


@dataclass(frozen=True)
class Figures:
    fired: int
    lost: int
    duplicated: int
    early: int
    lateness_ms: list[float]
    cpu_s: float = 0.0
    """The scheduler's CPU from the first due time until the last call arrived (every process of it)."""

    def line(self, who: str) -> str:
        if not self.lateness_ms:
            return f"  {who:11} fired 0, lost {self.lost}"
        p50, p99 = (percentile(self.lateness_ms, p) for p in (50, 99))
        return (
            f"  {who:11} fired {self.fired}  lost {self.lost}  duplicated {self.duplicated}  early {self.early}"
            f"   lateness ms p50 {p50:.1f}  p99 {p99:.1f}  max {max(self.lateness_ms):.1f}"
            f"   CPU {1000 * self.cpu_s / max(self.fired, 1):.2f} ms a fire"
        )


def post(url: str, task_id: str) -> None:
    """The peer's job: the call Sundial makes, a JSON POST with the task's id."""
    data = json.dumps({"task_id": task_id}).encode()
    headers = {"Content-Type": "application/json"}
    request = urllib.request.Request(url, data=data, method="POST", headers=headers)  # noqa: S310 - loopback
    with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 - the bench's own receiver on loopback
        answer.read()


def figures(due: dict[str, float], calls: list[Any], cpu_s: float = 0.0) -> Figures:
    """The calls judged as the priority bench judges them (bench/priority.py ``measure``)."""
    judged = measure(due, calls)
    return Figures(len(judged.values), judged.lost, judged.duplicated, judged.early, judged.values, cpu_s)


def wait_called(receiver: RemoteReceiver, count: int, until: float, start: float, cpu: Callable[[], float]) -> float:
    """Wait for ``count`` tasks' calls (at most until ``until``); the CPU ``cpu`` counted from
    ``start`` (the first due time) until then."""
    time.sleep(max(0.0, start - time.time()))
    before = cpu()
    while time.time() < until and receiver.tasks_called() < count:
        time.sleep(0.1)
    return cpu() - before


def tree_cpu_s(pid: int) -> float:
    """A process's CPU and its children's (the runtime and its moto), in seconds."""
    from bench.costs import cpu_s

    total = cpu_s(pid)
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except FileNotFoundError:  # a thread that ended since the listing (its CPU is the process's)
            continue
        for child in children:
            total += tree_cpu_s(int(child))
    return total


def own_cpu_s() -> float:
    """This process's CPU (APScheduler runs in it), in seconds."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def sundial(load: Load, receiver: RemoteReceiver, lead_in: float) -> tuple[dict[str, float], float]:
    """The load through `make run`; the tasks' due times by id, and its CPU (:func:`wait_called`)."""
    from bench.restart import Running
    from shared.domain.tenants import MAX_BURST, MAX_REQUESTS_PER_SECOND
    from shared.domain.times import from_ms, iso
    from shared.settings.environment import env_name

    os.environ.setdefault(env_name("tenant_requests_per_second"), str(MAX_REQUESTS_PER_SECOND))
    os.environ.setdefault(env_name("tenant_burst"), str(MAX_BURST))
    url = receiver.url + PATH
    with tempfile.TemporaryDirectory(prefix="sundial-peer-") as folder:
        runtime = Running(Path(folder), free_port())
        try:
            start = time.time() + lead_in
            # whole milliseconds: a task's `at` is written to the millisecond, and a due time
            # judged with the microseconds it lost would make a call on time look early
            due_at = [int((start + offset) * 1000) / 1000 for offset in load.due]

            def batch(times: list[float]) -> list[tuple[str, float]]:
                specs = [
                    {"schedule": {"at": iso(from_ms(round(at * 1000)))}, "target": {"http": {"url": url}}}
                    for at in times
                ]
                status, answer = runtime.call("POST", "/v1/tasks:batch", {"tasks": specs})
                if status != 200 or any("error" in item for item in answer["items"]):
                    raise RuntimeError(f"the batch was refused: {status} {str(answer)[:300]}")
                return [(item["task"]["id"], at) for item, at in zip(answer["items"], times, strict=True)]

            chunks = [due_at[i : i + 100] for i in range(0, len(due_at), 100)]
            with ThreadPoolExecutor(max_workers=4) as pool:
                due = {task: at for done in pool.map(batch, chunks) for task, at in done}
            if time.time() > start:
                raise RuntimeError(f"registering took longer than the lead-in ({lead_in} s): give a longer one")
            pid = runtime.process.pid
            used = wait_called(receiver, len(due), max(due_at) + SETTLE_S, start, lambda: tree_cpu_s(pid))
            time.sleep(2)  # late duplicates, if any
        finally:
            runtime.stop()
    return due, used


def apscheduler(load: Load, receiver: RemoteReceiver, lead_in: float) -> tuple[dict[str, float], float]:
    """The load through APScheduler; the jobs' due times by id, and its CPU (:func:`wait_called`)."""
    from apscheduler.executors.pool import ThreadPoolExecutor as Workers
    from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
    from apscheduler.schedulers.background import BackgroundScheduler

    url = receiver.url + PATH
    with tempfile.TemporaryDirectory(prefix="apscheduler-peer-") as folder:
        store = SQLAlchemyJobStore(url=f"sqlite:///{folder}/jobs.sqlite")
        scheduler = BackgroundScheduler(
            jobstores={"default": store},
            executors={"default": Workers(PEER_WORKERS)},
            job_defaults={"misfire_grace_time": None, "coalesce": False},
            timezone="UTC",
        )
        scheduler.start()
        try:
            start = time.time() + lead_in
            due: dict[str, float] = {}
            for index, offset in enumerate(load.due):
                at = start + offset
                task_id = f"peer-{load.name}-{index}"
                run_date = datetime.fromtimestamp(at, UTC)
                scheduler.add_job(post, "date", run_date=run_date, args=(url, task_id), id=task_id)
                due[task_id] = at
            if time.time() > start:
                raise RuntimeError(f"adding the jobs took longer than the lead-in ({lead_in} s): give a longer one")
            used = wait_called(receiver, len(due), start + max(load.due) + SETTLE_S, start, own_cpu_s)
            time.sleep(2)
        finally:
            scheduler.shutdown(wait=False)
    return due, used


def peer_bench(tasks: int, window: float, hot: int, lead_in: float | None) -> None:
    loads = [
        Load("steady", [window * i / tasks for i in range(tasks)]),
        Load("hot", [i / hot for i in range(hot)]),
    ]
    runners: list[tuple[str, Callable[[Load, RemoteReceiver, float], tuple[dict[str, float], float]]]] = [
        ("Sundial", sundial),
        ("APScheduler", apscheduler),
    ]
    results: dict[tuple[str, str], Figures] = {}
    for load in loads:
        lead = lead_in if lead_in is not None else max(15.0, len(load.due) / 300 + 10)
        for who, runner in runners:
            with receiver_process() as receiver:
                try:
                    due, used = runner(load, receiver, lead)
                finally:
                    calls = receiver.calls()
            results[(load.name, who)] = figures(due, calls, used)
            print(f"{load.name}: {who} done", flush=True)
    print(f"\nSundial beside APScheduler {_version()}, same loads, same session, same receiver")
    for load in loads:
        span = max(load.due) or 1.0
        rate = len(load.due) / span
        print(f"{load.name}: {len(load.due)} one-shot tasks due over {span:.0f} s ({rate:.0f} a second)")
        for who, _ in runners:
            print(results[(load.name, who)].line(who))
        ours, theirs = results[(load.name, "Sundial")], results[(load.name, "APScheduler")]
        if ours.lateness_ms and theirs.lateness_ms:
            ratio = percentile(ours.lateness_ms, 99) / max(percentile(theirs.lateness_ms, 99), 0.001)
            print(f"  p99 ratio Sundial / APScheduler: {ratio:.2f}")


def _version() -> str:
    from importlib.metadata import version

    return f"{version('apscheduler')} (SQLAlchemy job store {version('sqlalchemy')}, SQLite, {PEER_WORKERS} threads)"
