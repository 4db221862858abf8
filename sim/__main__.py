"""``make simulate``: runs every scenario under each of its deployments, writes one chart per
scenario (docs/scale/<scenario>.png) and the table (docs/scale/results.md), and prints both; then
the local runtime's model against `make bench`'s measurements (docs/scale/local-check.md).
``make simulate ARGS=--local`` runs only that check."""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from sim.doc import blocks, source_hash, sync
from sim.local import LocalRuntime, MotoCosts, checked_workloads, claim_sweep, comparison, read_measured, run_local
from sim.metrics import Summary, hottest_over_time, lateness_over_time, summarize
from sim.pipeline import Model
from sim.scenarios import (
    FRESH,
    NINE,
    SCENARIOS,
    Scenario,
    bench_check,
    holds_every_fire,
    holds_p99,
    largest_steady_rate,
    stored,
)
from sim.search import report

OUT = Path(__file__).resolve().parents[1] / "docs" / "scale"
MEASURED = OUT / "bench-measured.json"
RESULTS = OUT / "results.json"
DOC = OUT.parent / "scale.md"


def chart(scenario: Scenario, runs: list[tuple[str, Model]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(12, 7.5))
    (late_ax, conc_ax), (depth_ax, hot_ax) = axes
    burst = all(len(lateness_over_time(model, 10)) <= 1 for _, model in runs)
    for name, model in runs:
        if burst:  # one due time: how many had fired by each lateness
            ordered = sorted((lateness, w) for _, lateness, w in model.lateness)
            total = sum(w for _, w in ordered) or 1
            running, xs, ys = 0, [], []
            for lateness, w in ordered:
                running += w
                xs.append(max(lateness, 1) / 1000)
                ys.append(running / total)
            late_ax.plot(xs, ys, label=name)
        else:
            rows = lateness_over_time(model, 10)
            x = [r[0] for r in rows]
            (line,) = late_ax.plot(x, [max(r[2], 1) / 1000 for r in rows], label=f"{name} p99")
            late_ax.plot(x, [max(r[1], 1) / 1000 for r in rows], ls=":", color=line.get_color(), label=f"{name} p50")
        t0 = NINE / 1000
        conc_ax.plot([s[0] / 1000 - t0 for s in model.samples], [s[3] for s in model.samples], label=name)
        depth_ax.plot([s[0] / 1000 - t0 for s in model.samples], [s[1] for s in model.samples], label=name)
        hot = hottest_over_time(model, NINE)
        hot_ax.plot([h[0] for h in hot], [h[1] for h in hot], label=name)
    if burst:
        late_ax.set(xscale="log", xlabel="lateness (s)", ylabel="fraction fired", title="fired by lateness")
        late_ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    else:
        late_ax.set(
            yscale="log", xlabel="due time (s from the first)", ylabel="lateness (s)", title="lateness p50 / p99"
        )
        late_ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    conc_ax.set(xlabel="time (s from 09:00:00)", ylabel="trigger executions", title="trigger concurrency")
    depth_ax.set(xlabel="time (s from 09:00:00)", ylabel="messages", title="receivable, not yet received")
    hot_ax.set(xlabel="time (s from 09:00:00)", ylabel="WCU in the second", title="hottest partition")
    hot_ax.axhline(1000, color="grey", lw=0.8, ls="--")
    for ax in axes.flat:
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.suptitle(f"{scenario.title} (model output, make simulate)")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def row(scenario: Scenario, name: str, note: str, s: Summary, seconds: float) -> str:
    verdict = "yes" if s.p99_ms < 1000 and s.fired == s.tasks else "no"
    return (
        f"| {scenario.key} | {name}: {note} | {s.fired:,} / {s.tasks:,} | {s.p50_ms / 1000:.2f} | "
        f"{s.p99_ms / 1000:.2f} | {s.max_ms / 1000:.2f} | {verdict} | {s.peak_concurrency:,} | "
        f"{s.hottest_partition_wcu:,} | {s.throttled_wcu:,} | {s.peak_queue_depth:,} | {s.peak_in_flight:,} | "
        f"{s.drain_s:.0f} | {s.fire_rate_per_s:,.0f} | {s.invocation_s:.2f} | {s.partitions:,} ({s.splits:,}) | "
        f"${s.cost_per_million:.2f} | ${s.cost_provisioned:.2f} | {seconds:.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", help="one scenario's key, or fresh (the fresh account's largest rate)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--local", action="store_true", help="only the local runtime's model against make bench")
    parser.add_argument(
        "--moto-ms",
        action="append",
        default=[],
        metavar="KIND=MS",
        help="moto's service time of a kind of call (Claim, UpdateItem, PutItem, Query, SendMessageBatch, "
        "ReceiveMessage, DeleteMessageBatch, or a MotoCosts field), repeatable; defaults in sim/local.py MotoCosts",
    )
    parser.add_argument("--measured", type=Path, default=MEASURED, help="make bench's figures (JSON)")
    parser.add_argument("--no-search", action="store_true", help="skip the settings search (sim/search.py)")
    parser.add_argument(
        "--render", action="store_true", help="only render docs/scale.md's tables and figures from results.json"
    )
    args = parser.parse_args()
    if args.render:
        DOC.write_text(sync(DOC.read_text(), json.loads(RESULTS.read_text())))
        print(f"rendered {DOC} from {RESULTS}")
        return
    OUT.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    costs = MotoCosts().with_overrides(dict(_kind_ms(item) for item in args.moto_ms))
    if args.local:
        local_check(costs, args.measured, args.seed)
        return
    complete = not args.only and not args.no_search
    results: dict[str, Any] = {"seed": args.seed, "source": source_hash(), "scenarios": []}
    timings: list[str] = []
    for scenario in SCENARIOS:
        if args.only and scenario.key != args.only:
            continue
        runs: list[tuple[str, Model]] = []
        cases = []
        for case in scenario.cases:
            started = time.monotonic()
            model = scenario.build(case.deployment, args.seed)
            summary = summarize(model, scenario.sustained)
            seconds = time.monotonic() - started
            print(row(scenario, case.name, case.note, summary, seconds), flush=True)
            timings.append(f"{scenario.key} {case.name} {seconds:.1f} s")
            cases.append({"name": case.name, "note": case.note, "summary": asdict(summary)})
            runs.append((case.name, model))
        results["scenarios"].append({"key": scenario.key, "title": scenario.title, "cases": cases})
        chart(scenario, runs, OUT / f"{scenario.key}.png")
    results["storage"] = storage_figures()
    results["bench"] = bench_figures(args.seed)
    print(STORAGE.format(**results["storage"]))
    print(BENCH.format(**results["bench"]))
    results["fresh"] = fresh_account(args.seed, timings) if not args.only or args.only == "fresh" else {}
    if complete:
        started = time.monotonic()
        results["search_tables"] = report(SCENARIOS, args.seed)
        timings.append(f"the settings search {time.monotonic() - started:.0f} s")
        local_check(costs, args.measured, args.seed)
    total = time.monotonic() - began
    if complete:
        write_results(results, timings, total)
    print(f"make simulate: {total:.0f} s; wrote {OUT}")


def fresh_account(seed: int, timings: list[str]) -> dict[str, Any]:
    """The largest steady rate the default stack holds in a fresh account, by each criterion."""
    found_by: dict[str, Any] = {}
    for criterion, holds in (("p99", holds_p99), ("every", holds_every_fire)):
        started = time.monotonic()
        found = largest_steady_rate(FRESH, seed, holds)
        found_by[criterion] = {
            "rate": found.rate,
            "above_rate": found.above_rate,
            "held": None if found.held is None else asdict(found.held),
            "above": None if found.above is None else asdict(found.above),
        }
        timings.append(f"fresh account, {criterion}: {found.runs} runs, {time.monotonic() - started:.0f} s")
        print(f"fresh account ({criterion}): {found.rate:,} a second hold, {found.above_rate:,} not", flush=True)
    return found_by


STORAGE = (
    "10 billion stored tasks (arithmetic): {gb} GB, {per_month} a month ({per_month_ia} Standard-IA); "
    "{scans} scans a month over 64 shards, {rru} RRU, {scan_cost} a month, whatever is stored."
)
BENCH = (
    "`make bench`'s workload in the model (1,000 tasks over 2 minutes, 2 shards): {fired} fired, batches of "
    "{batch}, {invocation_s} s per invocation, per task {claim_wru} claim WRU + {log_wru} run-log WRU, "
    "{sqs_requests} SQS requests, {trigger_gb_s} trigger GB-s; p99 {p99_ms} ms; {cost} per million."
)


def storage_figures() -> dict[str, str]:
    storage = stored()
    return {
        "gb": f"{storage.gb:,.0f}",
        "per_month": f"${storage.per_month:,.0f}",
        "per_month_ia": f"${storage.per_month_ia:,.0f}",
        "scans": f"{storage.scans_per_month:,}",
        "rru": f"{storage.scan_rru_per_month:,.0f}",
        "scan_cost": f"${storage.scan_cost_per_month:.2f}",
    }


def bench_figures(seed: int) -> dict[str, str]:
    bench = bench_check(seed)
    return {
        "fired": f"{bench.fired:,}",
        "batch": f"{bench.batch:.1f}",
        "invocation_s": f"{bench.invocation_s:.1f}",
        "claim_wru": f"{bench.claim_wru:.2f}",
        "log_wru": f"{bench.log_wru:.2f}",
        "sqs_requests": f"{bench.sqs_requests:.2f}",
        "trigger_gb_s": f"{bench.trigger_gb_s:.3f}",
        "p99_ms": f"{bench.p99_ms:.0f}",
        "cost": f"${bench.cost_per_million:.2f}",
    }


def write_results(results: dict[str, Any], timings: list[str], total: float) -> None:
    """docs/scale/results.json (every figure), results.md (every table, and how long each run
    took) and docs/scale.md's tables and cited figures, rendered from results.json (sim/doc.py)."""
    RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    tables = blocks(results)
    lines = [f"# `make simulate`'s output (seed {results['seed']}): docs/scale/results.json rendered", ""]
    for scenario in results["scenarios"]:
        lines += [f"## {scenario['title']}", "", tables[f"scenario/{scenario['key']}"], ""]
    lines += ["## The largest steady rate of the default stack in a fresh account", "", tables["fresh"], ""]
    lines += [STORAGE.format(**results["storage"]), "", BENCH.format(**results["bench"]), ""]
    for name, title in SEARCH_TITLES.items():
        lines += [f"## {title}", "", tables[f"search/{name}"], ""]
    lines += ["## How long each run took", "", *(f"* {t}" for t in timings), ""]
    lines.append(f"`make simulate` (seed {results['seed']}) took {total:.0f} s.")
    (OUT / "results.md").write_text("\n".join(lines) + "\n")
    DOC.write_text(sync(DOC.read_text(), results))


SEARCH_TITLES = {
    "chosen": "The settings search (sim/search.py): the cheapest settings found, run again on the full scenario",
    "by_line": "What the chosen settings cost, by line (full runs; sim/cost.py)",
    "per_batch": "Steady 1,000,000 a minute, the cheapest that held for each trigger batch size (2-minute runs)",
    "tried": "Every candidate run (best-first, cheapest estimate first; shortened runs)",
}


def _kind_ms(item: str) -> tuple[str, float]:
    kind, _, value = item.partition("=")
    return kind, float(value)


def local_check(costs: MotoCosts, measured_path: Path, seed: int) -> None:
    """The local runtime's model at 10, 50 and 100 fires a second and at every measured run's
    workload, against the measured figures: docs/scale/local-check.md."""
    started = time.monotonic()
    measured = read_measured(measured_path)
    results = [
        (run_local(workload, costs.with_overrides(m.moto_ms if m else {}), seed=seed), m)
        for workload, m in checked_workloads(measured)
    ]
    fastest = max((r.workload for r, _ in results), key=lambda w: w.rate_per_s)
    text = comparison(results, costs, LocalRuntime())
    claims = tuple(sorted({costs.claim_ms, 5.0, 7.0, 7.5, 8.0, 8.5, 9.0, 9.5, 10.0, 11.0}))
    text += "\n" + claim_sweep(fastest, costs, claims, seed)
    text += f"\n`make simulate ARGS=--local` (seed {seed}) took {time.monotonic() - started:.1f} s.\n"
    (OUT / "local-check.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
