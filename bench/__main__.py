"""`make bench`: the firing benchmark on the local runtime.

Registers N one-shot tasks through the HTTP API, due over a window, receives every callback on
a local HTTP receiver, and prints: lost, duplicated and early fires (each must be 0), lateness
percentiles, the registration rate, and the AWS calls per fired task by function, service and
operation with the cost per million tasks (DynamoDB capacity from item sizes, public prices).
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
import urllib.request
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

from bench import capacity as cap
from local.moto_server import free_port


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


def main() -> None:
    parser = argparse.ArgumentParser(prog="make bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=1000, help="one-shot tasks (default 1000)")
    parser.add_argument("--window", type=float, default=120, help="due times spread over this many seconds")
    parser.add_argument("--lead-in", type=float, default=None, help="seconds before the first due time")
    parser.add_argument("--delay-queues", type=int, default=4, help="local delay queues (default 4)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent registration clients")
    args = parser.parse_args()
    lead_in = args.lead_in if args.lead_in is not None else max(15.0, args.tasks / 30 + 10)
    run(args.tasks, args.window, lead_in, args.delay_queues, args.clients)


def run(count: int, window: float, lead_in: float, delay_queues: int, clients: int) -> None:
    from local.attribution import invocations
    from local.receiver import running_receiver
    from local.runtime import Runtime

    os.environ["POWERTOOLS_LOG_LEVEL"] = "ERROR"
    counter = cap.CallCounter()
    woke: dict[str, float] = {}  # the trigger's own lateness: when it stopped waiting, before the HTTP call

    def on_fire(fired: Any) -> None:
        if fired.lateness_ms is not None and fired.staged.attempt == 1:
            woke.setdefault(fired.staged.task_id, float(fired.lateness_ms))

    with counter.active(), running_receiver() as receiver:
        runtime = Runtime(port=free_port(), delay_queues=delay_queues, on_fire=on_fire)
        runtime.start()
        setup_calls = cap.Usage(
            counter.usage.calls.copy(), defaultdict(float, counter.usage.wru), defaultdict(float, counter.usage.rru)
        )
        try:
            url = receiver.script("/hook", 200)
            start = datetime.now(UTC) + timedelta(seconds=lead_in)
            due = [start + timedelta(seconds=window * i / count) for i in range(count)]
            registered, reg_seconds = register_all(runtime.port, url, due, clients)
            deadline = time.time() + lead_in + window + 30
            while time.time() < deadline and len({c.body["task_id"] for c in receiver.calls}) < count:
                time.sleep(0.5)
            time.sleep(3)  # late duplicates, if any, arrive now
        finally:
            runtime.stop()
    report(
        count, registered, reg_seconds, receiver.calls, counter, setup_calls, invocations, window, delay_queues, woke
    )


def register_all(port: int, url: str, due: list[datetime], clients: int) -> tuple[dict[str, datetime], float]:
    from shared.domain.times import iso

    registered: dict[str, datetime] = {}
    lock = threading.Lock()

    def one(at: datetime) -> None:
        body = json.dumps(
            {
                "schedule": {"at": iso(at)},
                "target": {"http": {"url": url, "timeout_seconds": 5}},
                "payload": {"bench": True},
            }
        ).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/tasks", data=body, method="POST")
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - loopback
            task = json.loads(answer.read())
        with lock:
            registered[task["id"]] = datetime.fromisoformat(task["next_fire_at"].replace("Z", "+00:00"))

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
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
) -> None:
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
        print(f"    {function:8} {service:9} {operation:22} {n / max(fired, 1):7.3f}")
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
    memory_gb = 0.25
    lambda_requests = {f: len(invocations.get(f, [])) / max(fired, 1) for f in firing}
    gb_seconds = {f: sum(invocations.get(f, [])) * memory_gb / max(fired, 1) for f in firing}
    print(
        "  Lambda per fired task: "
        + ", ".join(f"{f} {lambda_requests[f]:.3f} invocations / {gb_seconds[f]:.4f} GB-s" for f in firing)
    )

    aws_cost(count, window, fired, net_calls, wru, rru, sqs, lambda_requests, gb_seconds, memory_gb)
    if lost or duplicated or early:
        raise SystemExit(f"FAILED: lost {lost}, duplicated {duplicated}, early {early}")


def aws_cost(
    count: int,
    window: float,
    fired: int,
    net_calls: Counter[tuple[str, str, str]],
    wru: dict[str, float],
    rru: dict[str, float],
    sqs: dict[str, float],
    lambda_requests: dict[str, float],
    gb_seconds: dict[str, float],
    memory_gb: float,
) -> None:
    # AWS's cost model: the tick and the scanners' watermark work are fixed per minute (one tick,
    # one scan per shard), the rest scales with the tasks. Locally the tick runs every second over
    # 2 shards, so the measured fixed part is replaced by AWS's, spread over the benchmark's rate.
    per_minute = count / window * 60
    aws_shards = 16
    scan_fixed = {  # one scan in AWS: watermark read + write, ~2 bucket queries, one 256 MB invocation of ~100 ms
        "wru": 1.0,
        "rru": 1.0 + 2 * 0.5,
        "requests": 1.0,
        "gb_s": 0.1 * memory_gb,
    }
    tick_fixed = {"sqs": aws_shards / 10, "requests": 1.0, "gb_s": 0.1 * memory_gb}
    fixed_wru = aws_shards * scan_fixed["wru"] / per_minute
    fixed_rru = aws_shards * scan_fixed["rru"] / per_minute
    fixed_sqs = (tick_fixed["sqs"] + aws_shards) / per_minute  # scan requests out and received
    fixed_requests = (aws_shards * scan_fixed["requests"] + tick_fixed["requests"]) / per_minute
    fixed_gb_s = (aws_shards * scan_fixed["gb_s"] + tick_fixed["gb_s"]) / per_minute
    scanner_variable_sqs = sum(
        n for (fn, s, op), n in net_calls.items() if fn == "scanner" and op == "SendMessageBatch"
    )
    # the trigger's measured wall time includes the local lead; AWS's may differ
    from local.runtime import LOCAL_ENV
    from shared.domain.firing import Timing

    lead_difference_s = (int(LOCAL_ENV["SUNDIAL_LEAD_MS"]) - Timing().lead_ms) / 1000
    trigger_gb_s_aws = max(0.0, gb_seconds["trigger"] - lambda_requests["trigger"] * lead_difference_s * memory_gb)
    # Lambda's event source polls (ReceiveMessage) and deletes (DeleteMessageBatch): measured locally
    poll_sqs = sum(n for (fn, s, _), n in net_calls.items() if fn == "runtime" and s == "sqs") / max(fired, 1)
    variable = {
        "wru": wru["trigger"],
        "rru": rru["trigger"],
        "sqs": sqs["trigger"] + scanner_variable_sqs / max(fired, 1) + poll_sqs,
        "requests": lambda_requests["trigger"],
        "gb_s": trigger_gb_s_aws,
    }
    total = {
        "wru": variable["wru"] + fixed_wru,
        "rru": variable["rru"] + fixed_rru + 0.08,  # the scanners' reads of the task items themselves
        "sqs": variable["sqs"] + fixed_sqs,
        "requests": variable["requests"] + fixed_requests,
        "gb_s": variable["gb_s"] + fixed_gb_s,
    }

    def dollars(t: dict[str, float], provisioned: bool) -> float:
        if provisioned:
            ddb = t["wru"] * cap.provisioned_per_million_writes() + t["rru"] * cap.provisioned_per_million_reads()
        else:
            ddb = t["wru"] * cap.ON_DEMAND_PER_MILLION_WRU + t["rru"] * cap.ON_DEMAND_PER_MILLION_RRU
        return (
            ddb
            + t["sqs"] * cap.SQS_PER_MILLION
            + t["requests"] * cap.LAMBDA_PER_MILLION
            + (t["gb_s"] * cap.LAMBDA_GB_SECOND * 1e6)
        )

    registration = {"wru": wru["api"], "rru": rru["api"], "sqs": sqs["api"], "requests": 0.0, "gb_s": 0.0}
    print(
        f"\n  AWS estimate at this rate ({per_minute:.0f} tasks/min; 16 shards, 1 tick/min, "
        f"{Timing().lead_ms / 1000:.0f} s lead),"
    )
    print(
        f"  per task: {total['wru']:.2f} WRU, {total['rru']:.2f} RRU, {total['sqs']:.2f} SQS requests, "
        f"{total['requests']:.3f} invocations, {total['gb_s']:.4f} GB-s"
    )
    print("  cost per million one-shot tasks (us-east-1 public prices, Lambda 256 MB arm64):")
    print(
        f"    scheduler overhead (PRODUCT.md's definition):  on-demand ${dollars(total, False):.2f}   "
        f"provisioned ${dollars(total, True):.2f}"
    )
    both = {k: total[k] + registration[k] for k in total}
    print(
        f"    plus the registration's writes ({registration['wru']:.2f} WRU):      on-demand "
        f"${dollars(both, False):.2f}   provisioned ${dollars(both, True):.2f}"
    )
    print(f"    EventBridge Scheduler, for comparison:          ${cap.EVENTBRIDGE_SCHEDULER_PER_MILLION:.2f}")


if __name__ == "__main__":
    main()
