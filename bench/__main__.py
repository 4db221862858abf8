"""`make bench`: the firing benchmark on the local runtime.

Registers N one-shot tasks through the HTTP API, due over a window, receives every callback on
a local HTTP receiver, and prints: lost, duplicated and early fires (each must be 0), lateness
percentiles, the registration rate, and the AWS calls per fired task by function, service and
operation with the cost per million tasks (DynamoDB capacity from item sizes, public prices).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import threading
import time
import urllib.request
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench import bill, metering
from bench import capacity as cap
from bench.capacity import percentile
from local.moto_server import free_port
from shared.settings.context import DeploymentSettings


def _add_alone_flags(parser: argparse.ArgumentParser) -> None:
    """The figures measured on their own (:func:`_measured_alone`)."""
    parser.add_argument("--ceiling", action="store_true", help="only measure moto's claims per second")
    parser.add_argument("--chains", action="store_true", help="only count what one hop of a chain costs")
    parser.add_argument("--workflows", action="store_true", help="only count what one node of a workflow costs")
    parser.add_argument(
        "--progress", action="store_true", help="only count what one progress report of a job's shard costs"
    )
    parser.add_argument(
        "--registration",
        action="store_true",
        help="only measure registration: --tasks (at most 2000) one by one from one client, from --clients, in batches",
    )
    parser.add_argument(
        "--costs", action="store_true", help="only measure moto's CPU per kind of call (the local model's parameters)"
    )
    parser.add_argument(
        "--eventbridge",
        action="store_true",
        help="only measure fires through the EventBridge Scheduler API: --tasks (at most 500) at() schedules "
        "over --window seconds into an SQS queue",
    )
    parser.add_argument(
        "--peer",
        action="store_true",
        help="only Sundial's make run beside APScheduler (SQLAlchemy job store): --tasks (default 6000) over "
        "--window (default 60 s), then --hot (default 1000) due in one second, each by both",
    )
    parser.add_argument("--hot", type=int, default=1000, help="--peer: one-shot tasks due in one second (default 1000)")
    parser.add_argument(
        "--advance",
        action="store_true",
        help="only measure the virtual clock: --tasks (at most 60) hourly tasks over 7 days",
    )


def main() -> None:
    parser = _add_timer_flags(argparse.ArgumentParser(prog="make bench", description=__doc__.split("\n\n")[0]))
    parser.add_argument("--tasks", type=int, default=1000, help="one-shot tasks (default 1000)")
    parser.add_argument("--window", type=float, default=120, help="due times spread over this many seconds")
    parser.add_argument("--lead-in", type=float, default=None, help="seconds before the first due time")
    parser.add_argument("--delay-queues", type=int, default=1, help="local delay queues (default 1, as the stack)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent registration clients")
    parser.add_argument(
        "--batch", type=int, default=0, help="register through POST /v1/tasks:batch, this many per request (max 100)"
    )
    _add_alone_flags(parser)
    parser.add_argument(
        "--authorizer", action="store_true", help="only measure the authorizer's added latency (--calls per figure)"
    )
    parser.add_argument("--calls", type=int, default=500, help="calls per figure of --authorizer (default 500)")
    parser.add_argument(
        "--burst",
        action="store_true",
        help="only the burst scenario: --tasks (default 600) due in one second to a receiver limited to --per-second",
    )
    parser.add_argument(
        "--per-second",
        type=float,
        default=20,
        help="--burst: the limit's per_second (default 20; 0: no limit, a baseline)",
    )
    parser.add_argument("--burst-size", type=int, default=5, help="--burst: the limit's burst (default 5)")
    parser.add_argument(
        "--in-flight", type=int, default=5, help="--burst: the limit's max_in_flight (default 5; 0: none)"
    )
    parser.add_argument(
        "--latency",
        type=float,
        default=0.1,
        help="--burst: seconds the receiver takes per call (default 0.1; --retries: default 0)",
    )
    parser.add_argument(
        "--backpressure", action="store_true", help="only the backpressure scenario (429 Retry-After: 3, then 200)"
    )
    parser.add_argument(
        "--retries",
        action="store_true",
        help="only the retry scenario: --tasks (default 100) due over --window (default 10 s), each answered 500, "
        "500, 200 in --latency s, retried every --interval s (default 2): each attempt's lateness from its due time",
    )
    parser.add_argument("--interval", type=float, default=2.0, help="--retries: the fixed backoff (default 2 s)")
    parser.add_argument(
        "--priority",
        action="store_true",
        help="only the priority lane: --high high-priority tasks alone, then in a flood of --flood normal ones",
    )
    parser.add_argument("--high", type=int, default=20, help="high-priority tasks of --priority (default 20)")
    parser.add_argument("--flood", type=int, default=1500, help="normal tasks flooding --priority (default 1500)")
    parser.add_argument("--spread", type=float, default=5, help="seconds --priority's tasks are due over (default 5)")
    parser.add_argument(
        "--record", type=Path, help="append this run's lateness to a JSON list (docs/scale/bench-measured.json)"
    )
    parser.add_argument("--note", default=None, help="a note kept with the run --record appends")
    parser.add_argument("--samples", type=Path, help="write each task's due time and lateness (CSV)")
    args = parser.parse_args()
    if args.authorizer:
        from bench.authorizer import authorizer_bench

        authorizer_bench(max(args.calls, 1))
        return
    if args.burst or args.backpressure:
        from bench import receivers

        if args.burst:
            tasks = args.tasks if "--tasks" in " ".join(sys.argv) else 600
            lead_in = args.lead_in if args.lead_in is not None else 20.0
            receivers.burst(tasks, args.per_second, args.burst_size, args.in_flight, args.latency, lead_in)
        if args.backpressure:
            receivers.backpressure(args.lead_in if args.lead_in is not None else 10.0)
        return
    if args.retries:
        from bench.retries import retry_gaps

        given = " ".join(sys.argv)
        retry_gaps(
            args.tasks if "--tasks" in given else 100,
            args.window if "--window" in given else 10.0,
            max(args.interval, 1.0),
            args.latency if "--latency" in given else 0.0,
            args.lead_in if args.lead_in is not None else 10.0,
        )
        return
    if args.priority:
        from bench.priority import priority_bench

        priority_bench(max(args.high, 1), max(args.flood, 0), max(args.spread, 0.1), max(args.delay_queues, 1))
        return
    if _timers(args) or _measured_alone(args):
        return
    lead_in = args.lead_in if args.lead_in is not None else max(15.0, args.tasks / 30 + 10)
    keep = Keep(args.record, args.note, args.samples)
    run(args.tasks, args.window, lead_in, args.delay_queues, args.clients, min(max(args.batch, 0), 100), keep)


def _add_timer_flags(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The timers the test suite checks without a clock (bench/timers.py), a flag each."""
    parser.add_argument(
        "--batching-window", action="store_true", help="only how punctually the local batching window closes"
    )
    parser.add_argument(
        "--long-polls", action="store_true", help="only how promptly moto's patched SQS long polls return"
    )
    parser.add_argument(
        "--http-timeouts", action="store_true", help="only how punctually an HTTP call is cut at its timeout"
    )
    parser.add_argument("--rounds", type=int, default=5, help="samples per figure of the three above (default 5)")
    return parser


def _timers(args: argparse.Namespace) -> bool:
    """The timers the test suite checks by their effect, timed (bench/timers.py): True when one
    of ``--batching-window``, ``--long-polls``, ``--http-timeouts`` was asked for, and measured."""
    from bench.timers import TIMERS

    asked = [name for name in TIMERS if getattr(args, name)]
    for name in asked:
        TIMERS[name](max(args.rounds, 1))
    return bool(asked)


def _measured_alone(args: argparse.Namespace) -> bool:
    """The figures measured on their own (``--chains``, ``--workflows``, ``--registration``, ``--advance``, ``--costs``,
    ``--ceiling``): True when one of them was asked for, and measured."""
    if args.chains:
        from bench.chains import chain_costs

        chain_costs(min(args.tasks, 500))
    elif args.workflows:
        from bench.workflows import workflow_costs

        workflow_costs()
    elif args.progress:
        from bench.progress import progress_costs

        progress_costs(min(args.tasks, 500))
    elif args.registration:
        from bench.registration import registration_bench

        registration_bench(min(args.tasks, 2000), max(args.clients, 1))
    elif args.eventbridge:
        from bench.eventbridge import eventbridge_bench

        eventbridge_bench(max(1, min(args.tasks, 500)), args.window)
    elif args.peer:
        from bench.peer import peer_bench

        given = " ".join(sys.argv)
        peer_bench(
            max(1, args.tasks if "--tasks" in given else 6000),
            max(1.0, args.window if "--window" in given else 60.0),
            max(1, args.hot),
            args.lead_in,
        )
    elif args.advance:
        from bench.advance import advance_bench

        advance_bench(max(1, min(args.tasks, 60)))
    elif args.costs:
        from bench.costs import costs

        costs(min(args.tasks, 500))
    elif args.ceiling:
        from bench.ceiling import ceiling

        ceiling(min(args.tasks, 500))
    else:
        return False
    return True


@dataclass(frozen=True)
class Keep:
    """Where a run's figures go besides the terminal."""

    record: Path | None = None
    note: str | None = None
    samples: Path | None = None

    def write(
        self,
        count: int,
        window: float,
        delay_queues: int,
        lateness: dict[str, float],
        woke: dict[str, float],
        moto_cores: float | None = None,
    ) -> None:
        values = list(lateness.values())
        if self.record is not None and values:
            runs = json.loads(self.record.read_text()) if self.record.exists() else []
            runs.append(
                {
                    "rate_per_s": round(count / window, 3),
                    "tasks": count,
                    "window_s": window,
                    "delay_queues": delay_queues,
                    **{f"p{p}_ms": round(percentile(values, p), 1) for p in (50, 95, 99)},
                    "max_ms": round(max(values), 1),
                    "command": "make bench ARGS=" + json.dumps(" ".join(_replayed(sys.argv[1:]))),
                    "date": datetime.now(UTC).date().isoformat(),
                    **({"note": self.note} if self.note else {}),
                    **({"moto_cores": round(moto_cores, 2)} if moto_cores is not None else {}),
                }
            )
            self.record.write_text(json.dumps(runs, indent=2) + "\n")
        if self.samples is not None:
            rows = ["task_id,lateness_ms,woke_ms"]
            rows += [f"{task},{late:.3f},{woke.get(task, float('nan')):.3f}" for task, late in lateness.items()]
            self.samples.write_text("\n".join(rows) + "\n")


class CpuShare:
    """Each process's CPU over a span of wall time, in cores (user + system time from /proc)."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.shares: dict[str, float] = {}

    def over(self, start: float, end: float) -> None:
        """Measure from ``start`` to ``end`` (epoch seconds), on a thread of its own."""
        from bench.costs import cpu_s

        def measure() -> None:
            time.sleep(max(0.0, start - time.time()))
            before = {name: cpu_s(pid) for name, pid in self.pids.items()}
            began = time.time()
            time.sleep(max(0.0, end - began))
            took = time.time() - began
            self.shares = {name: (cpu_s(pid) - before[name]) / took for name, pid in self.pids.items()}

        threading.Thread(target=measure, name="cpu-share", daemon=True).start()


def _replayed(argv: list[str]) -> list[str]:
    """The command line without the options that only say where figures go."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--record", "--note", "--samples"):
            skip = True
        elif not arg.startswith(("--record=", "--note=", "--samples=")):
            kept.append(arg)
    return kept


def run(
    count: int, window: float, lead_in: float, delay_queues: int, clients: int, batch: int = 0, keep: Keep = Keep()
) -> None:
    from bench.receiver import receiver_process
    from local.attribution import invocations
    from local.runtime import Runtime
    from local.settings import LocalSettings

    os.environ["POWERTOOLS_LOG_LEVEL"] = "ERROR"
    # The bench registers as the default tenant, faster than its default limit (100 requests a
    # second, burst 200): a setting, raised for this run only unless set, and printed.
    from shared.domain.tenants import MAX_BURST, MAX_REQUESTS_PER_SECOND
    from shared.settings.environment import env_name

    rate, burst = env_name("tenant_requests_per_second"), env_name("tenant_burst")
    os.environ.setdefault(rate, str(MAX_REQUESTS_PER_SECOND))
    os.environ.setdefault(burst, str(MAX_BURST))
    print(f"default tenant's rate limit: {os.environ[rate]} requests/s, burst {os.environ[burst]} ({rate}, {burst})")
    counter = cap.CallCounter()
    woke: dict[str, float] = {}  # the trigger's own lateness: when it stopped waiting, before the HTTP call

    def on_fire(fired: Any) -> None:
        if fired.lateness_ms is not None and fired.staged.attempt == 1:
            woke.setdefault(fired.staged.task_id, float(fired.lateness_ms))

    with counter.active(), receiver_process() as receiver:
        runtime = Runtime(LocalSettings.from_env(port=free_port(), delay_queues=delay_queues), on_fire=on_fire)
        runtime.start()
        share = CpuShare({"moto": runtime.moto.pid, "runtime": os.getpid(), "receiver": receiver.pid})
        try:
            url = receiver.url + "/hook"
            # The whole bill's other parts (bench/bill.py), before the run: the idle stack, then a
            # registration one by one and in batches (tasks due tomorrow, which the run leaves be).
            idle = metering.idle(counter, IDLE_SECONDS, runtime.function_settings.bucket_shards)
            registering = {
                size: metering.registration(
                    counter, lambda times, size: register_all(runtime.port, url, times, 1, size), n, size
                )
                for size, n in ((0, BILL_REGISTRATIONS), (100, 2 * 100))
            }
            setup_calls = cap.Usage(
                counter.usage.calls.copy(), defaultdict(float, counter.usage.wru), defaultdict(float, counter.usage.rru)
            )
            table = runtime.function_settings.table_name
            table_before = metering.table_bytes(table)
            start = datetime.now(UTC) + timedelta(seconds=lead_in)
            due = [start + timedelta(seconds=window * i / count) for i in range(count)]
            share.over(start.timestamp(), start.timestamp() + window)
            registered, reg_seconds = register_all(runtime.port, url, due, clients, batch)
            deadline = time.time() + lead_in + window + 30
            while time.time() < deadline and receiver.tasks_called() < count:
                time.sleep(0.5)
            time.sleep(3)  # late duplicates, if any, arrive now
            kept_bytes, kept_items = metering.kept(table_before, metering.table_bytes(table), len(registered))
        finally:
            runtime.stop()
            calls = receiver.calls()
    first, fire = report(
        count, registered, reg_seconds, calls, counter, setup_calls, invocations, window, delay_queues, woke
    )
    if share.shares:
        print("  CPU over the due window, in cores: " + ", ".join(f"{k} {v:.2f}" for k, v in share.shares.items()))
    bill.print_bill(
        bill.registration(registering[0], "register one by one"),
        bill.registration(registering[100], "register in batches of 100"),
        fire,
        bill.keeping(kept_bytes, kept_items, AWS.run_retention_days),
        bill.idle(metering.template(), idle, AWS_SHARDS),
        bill.status_index(bill.status_entry_bytes(AWS.list_shards), AWS.run_retention_days),
    )
    keep.write(count, window, delay_queues, first, woke, share.shares.get("moto"))


IDLE_SECONDS = 4.0
"""How long the bench counts the idle runtime (a local tick a second)."""
BILL_REGISTRATIONS = 100
"""Tasks registered one by one (and twice as many in batches) to price a registration."""


def register_all(
    port: int, url: str, due: list[datetime], clients: int, batch: int = 0
) -> tuple[dict[str, datetime], float]:
    """Register a one-shot task per due time: one request each, or ``batch`` per request."""
    from shared.domain.times import iso

    registered: dict[str, datetime] = {}
    lock = threading.Lock()

    def spec(at: datetime) -> dict[str, Any]:
        return {
            "schedule": {"at": iso(at)},
            "target": {"http": {"url": url, "timeout_seconds": 5}},
            "payload": {"bench": True},
        }

    def post(path: str, body: Any) -> Any:
        data = json.dumps(body).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method="POST")
        request.add_header("Content-Type", "application/json")  # a keyless write to make run is JSON
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - loopback
            return json.loads(answer.read())

    def record(tasks: list[dict[str, Any]]) -> None:
        with lock:
            for task in tasks:
                registered[task["id"]] = datetime.fromisoformat(task["next_fire_at"].replace("Z", "+00:00"))

    def one(at: datetime) -> None:
        record([post("/v1/tasks", spec(at))])

    def many(times: list[datetime]) -> None:
        items = post("/v1/tasks:batch", {"tasks": [spec(at) for at in times]})["items"]
        if any("error" in item for item in items):
            raise RuntimeError(f"the batch refused specs: {[i for i in items if 'error' in i][:3]}")
        record([item["task"] for item in items])

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        if batch:
            list(pool.map(many, [due[i : i + batch] for i in range(0, len(due), batch)]))
        else:
            list(pool.map(one, due))
    return registered, time.perf_counter() - started


def report(
    count: int,
    registered: dict[str, datetime],
    reg_seconds: float,
    calls: list[Any],
    counter: cap.CallCounter,
    setup: cap.Usage,
    invocations: dict[str, list[float]],
    window: float,
    delay_queues: int,
    woke: dict[str, float],
) -> tuple[dict[str, float], bill.Section]:
    """Print the run's figures; returns each fired task's lateness (ms) and what firing cost."""
    first: dict[str, float] = {}
    per_task: dict[str, int] = {}
    early = 0
    for call in calls:
        task_id = call.body["task_id"]
        per_task[task_id] = per_task.get(task_id, 0) + 1
        due = registered[task_id].timestamp()
        if call.at < due:
            early += 1
        first.setdefault(task_id, (call.at - due) * 1000)
    fired = len(per_task)
    lost = len(registered) - fired
    duplicated = sum(n - 1 for n in per_task.values())
    lateness = list(first.values())
    print(f"\nSundial firing benchmark: {count} one-shot tasks due over {window:.0f} s, {delay_queues} delay queues")
    print(f"  registered {len(registered)} in {reg_seconds:.1f} s: {len(registered) / reg_seconds:.0f} registrations/s")
    print(f"  fired {fired}   lost (not fired by the end of the run) {lost}   duplicated {duplicated}   early {early}")
    if lateness:
        p50, p95, p99 = (percentile(lateness, p) for p in (50, 95, 99))
        print(f"  lateness ms: p50 {p50:.1f}  p95 {p95:.1f}  p99 {p99:.1f}  max {max(lateness):.1f}")
    if woke:
        waking = list(woke.values())
        calling = [first[t] - w for t, w in woke.items() if t in first]
        print(
            f"    the trigger's wake-up (due to the call): p50 {percentile(waking, 50):.0f}  "
            f"p99 {percentile(waking, 99):.0f}  max {max(waking):.0f};  the call (to the receiver): "
            f"p50 {percentile(calling, 50):.0f}  p99 {percentile(calling, 99):.0f}  max {max(calling):.0f}"
        )
    usage = counter.usage
    net_calls = usage.calls - setup.calls
    print(f"\n  AWS calls per fired task (n = {fired}), by function:")
    for (function, service, operation), n in sorted(net_calls.items()):
        print(f"    {function:22} {service:9} {operation:22} {n / max(fired, 1):7.3f}")
    firing = ("tick", "scanner", "trigger")
    wru = {f: (usage.wru[f] - setup.wru[f]) / max(fired, 1) for f in (*firing, "api")}
    rru = {f: (usage.rru[f] - setup.rru[f]) / max(fired, 1) for f in (*firing, "api")}
    sqs = {
        f: sum(n for (fn, s, _), n in net_calls.items() if fn == f and s == "sqs") / max(fired, 1)
        for f in (*firing, "api")
    }
    print("\n  DynamoDB capacity per fired task (from item sizes):")
    for f in (*firing, "api"):
        print(f"    {f:8} {wru[f]:.3f} WRU  {rru[f]:.3f} RRU  | SQS requests {sqs[f]:.3f}")
    from shared.topology import TRIGGER_MEMORY_MB

    memory_gb = {"tick": 0.25, "scanner": 0.25, "trigger": TRIGGER_MEMORY_MB / 1024}  # infra/pipeline.py
    lambda_requests = {f: len(invocations.get(f, [])) / max(fired, 1) for f in firing}
    seconds = {f: sum(invocations.get(f, [])) / max(fired, 1) for f in firing}
    print(
        "  Lambda per fired task: "
        + ", ".join(f"{f} {lambda_requests[f]:.3f} invocations / {seconds[f]:.3f} s" for f in firing)
    )
    trigger_sqs = sqs["trigger"]
    poll_sqs = sum(n for (fn, s, _), n in net_calls.items() if fn == "trigger event source") / max(fired, 1)
    measured = Measured(
        wru["trigger"],
        rru["trigger"],
        trigger_sqs + poll_sqs,
        lambda_requests["trigger"],
        seconds["trigger"],
        memory_gb,
    )
    fire = fire_section(count / window * 60, measured)
    if lost or duplicated or early:
        raise SystemExit(f"FAILED: lost {lost}, duplicated {duplicated}, early {early}")
    return first, fire


@dataclass(frozen=True)
class Measured:
    """What the benchmark counted per fired task on the firing path's variable part."""

    trigger_wru: float
    trigger_rru: float
    sqs_requests: float
    """The trigger's own (retries, dead letters) and its event source's (receive, delete)."""
    trigger_invocations: float
    trigger_seconds: float
    memory_gb: dict[str, float]


AWS = DeploymentSettings()
"""The stack's defaults."""
AWS_SHARDS = AWS.bucket_shards
AWS_DELAY_QUEUES = AWS.delay_queues
SCAN_SECONDS = 0.1
SCAN_RRU = 1.0 + 2 * 0.5
"""One scan in AWS: read the shard's mark (1 RRU, strongly consistent) and ~2 bucket queries."""


def fire_section(per_minute: float, m: Measured) -> bill.Section:
    """The firing path per task in AWS at this rate: the trigger's calls as measured; the tick and
    the scans as AWS runs them (one tick a minute, one scan per shard a minute, the shard's minute
    staged in batches of 10), because locally they run every second over 2 shards."""
    from local.settings import LocalSettings

    # The trigger's measured time includes the local lead; AWS's may differ.
    lead_difference_s = (LocalSettings.from_env().functions.lead_ms - AWS.lead_ms) / 1000
    trigger_gb_s = max(0.0, m.trigger_seconds - m.trigger_invocations * lead_difference_s) * m.memory_gb["trigger"]
    per_shard_queue = per_minute / AWS_SHARDS / AWS_DELAY_QUEUES
    scanner_sends = AWS_SHARDS * AWS_DELAY_QUEUES * math.ceil(per_shard_queue / 10) / per_minute
    scans = AWS_SHARDS / per_minute  # per task
    # the tick invokes the scanner asynchronously, its shards dealt into at most this many
    # invocations (shared/adapters/scans.py): no queue between them
    scan_invocations = min(AWS_SHARDS, AWS.scanner_max_concurrency) / per_minute
    invocations = m.trigger_invocations + scan_invocations + 1 / per_minute
    rows = [
        (
            "DynamoDB writes",
            m.trigger_wru + scans * 2.0,
            "WRU",
            bill.WRU,
            bill.WRU_PROVISIONED,
            "claim + run log; the scans' lease and mark",
        ),
        (
            "DynamoDB reads",
            m.trigger_rru + scans * SCAN_RRU + 0.08,
            "RRU",
            bill.RRU,
            bill.RRU_PROVISIONED,
            "the scans' mark and queries",
        ),
        (
            "SQS",
            m.sqs_requests + scanner_sends,
            "requests",
            bill.SQS,
            None,
            "staging, receive, delete",
        ),
        ("Lambda requests", invocations, "invocations", bill.LAMBDA, None, "trigger, scans, tick"),
        (
            "Lambda time",
            trigger_gb_s + (scans + 1 / per_minute) * SCAN_SECONDS * m.memory_gb["scanner"],
            "GB-s",
            bill.GB_S,
            None,
            f"the trigger at {m.memory_gb['trigger'] * 1024:.0f} MB waits out the lead",
        ),
    ]
    print(
        f"\n  AWS at this rate: {per_minute:.0f} tasks/min; {AWS_SHARDS} shards, {AWS_DELAY_QUEUES} delay "
        f"queue, 1 tick/min, {AWS.lead_ms / 1000:.0f} s lead"
    )
    return bill.firing(rows, invocations)


if __name__ == "__main__":
    main()
