"""docs/scale.md held to the model's output. `make simulate` writes every figure it computes to
docs/scale/results.json and renders, from that file alone, each table of docs/scale.md (between
``<!-- gen:NAME -->`` and ``<!-- /gen -->``) and each figure its text cites (``<!-- f:NAME -->``
value ``<!-- /f -->``), in place. tests/unit/test_scale_doc.py renders them again from the file and
fails where the document differs (a number edited by hand), where the file is older than the model's
code, or where a fresh run of the quick scenarios gives other figures than the file."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SOURCES = (
    *sorted(p for p in (ROOT / "sim").glob("*.py") if p.name not in {"__main__.py", "doc.py"}),
    ROOT / "bench" / "prices.py",
)
"""What the figures depend on, besides Sundial's domain code: the model and the prices (not how
they are rendered: sim/__main__.py and this module)."""

BLOCK = re.compile(r"(<!-- gen:(?P<name>[^<>]+?) -->\n)(?P<body>.*?)(<!-- /gen -->)", re.DOTALL)
FIGURE = re.compile(r"(<!-- f:(?P<name>[^<>]+?) -->)(?P<body>.*?)(<!-- /f -->)", re.DOTALL)


def source_hash() -> str:
    digest = hashlib.sha256()
    for path in SOURCES:
        digest.update(path.relative_to(ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def seconds(ms: float) -> str:
    return f"{ms / 1000:.2f}"


def summary_figures(prefix: str, s: Mapping[str, Any]) -> dict[str, str]:
    """The named figures of one run (a :class:`sim.metrics.Summary` as a dict)."""
    return {
        f"{prefix}/fired": f"{s['fired']:,} / {s['tasks']:,}",
        f"{prefix}/p50": seconds(s["p50_ms"]),
        f"{prefix}/p99": seconds(s["p99_ms"]),
        f"{prefix}/max": seconds(s["max_ms"]),
        f"{prefix}/p99_ms": f"{s['p99_ms']:.0f}",
        f"{prefix}/holds": "yes" if s["p99_ms"] < 1000 and s["fired"] == s["tasks"] else "no",
        f"{prefix}/concurrency": f"{s['peak_concurrency']:,}",
        f"{prefix}/hottest": f"{s['hottest_partition_wcu']:,}",
        f"{prefix}/throttled": f"{s['throttled_wcu']:,}",
        f"{prefix}/depth": f"{s['peak_queue_depth']:,}",
        f"{prefix}/in_flight": f"{s['peak_in_flight']:,}",
        f"{prefix}/drain": f"{s['drain_s']:,.0f}",
        f"{prefix}/rate": f"{s['fire_rate_per_s']:,.0f}",
        f"{prefix}/invocation": f"{s['invocation_s']:.2f}",
        f"{prefix}/partitions": f"{s['partitions']:,}",
        f"{prefix}/splits": f"{s['splits']:,}",
        f"{prefix}/on_demand": f"${s['cost_per_million']:.2f}",
        f"{prefix}/provisioned": f"${s['cost_provisioned']:.2f}",
    }


def figures(results: Mapping[str, Any]) -> dict[str, str]:
    """Every figure the text may cite, by name: ``steady/defaults/p99``, ``fresh/p99/rate``, ..."""
    named: dict[str, str] = {"seed": str(results["seed"])}
    for scenario in results["scenarios"]:
        for case in scenario["cases"]:
            named |= summary_figures(f"{scenario['key']}/{case['name']}", case["summary"])
    for criterion, found in results["fresh"].items():
        named[f"fresh/{criterion}/rate"] = f"{found['rate']:,}"
        named[f"fresh/{criterion}/above_rate"] = f"{found['above_rate']:,}"
        if found["held"]:
            named |= summary_figures(f"fresh/{criterion}/held", found["held"])
        if found["above"]:
            named |= summary_figures(f"fresh/{criterion}/above", found["above"])
    for name, value in results["bench"].items():
        named[f"bench/{name}"] = value
    for name, value in results["storage"].items():
        named[f"storage/{name}"] = value
    for name, value in results.get("search_figures", {}).items():
        named[f"search/{name}"] = value
    return named


SCENARIO_HEADER = (
    "| scenario | deployment | fired / due | p50 (s) | p99 (s) | max (s) | p99 < 1 s | peak trigger concurrency "
    "| hottest partition (WCU/s) | throttled WCU | peak queue depth | peak in flight, one queue | drain (s) "
    "| fires a second | trigger invocation (s) | partitions (splits) | $ per million on-demand "
    "| $ per million provisioned |"
)


def blocks(results: Mapping[str, Any]) -> dict[str, str]:
    """Every table of docs/scale.md the model's output gives, by name."""
    f = figures(results)
    out: dict[str, str] = {}
    for scenario in results["scenarios"]:
        rows = [SCENARIO_HEADER, "|" + "---|" * 18]
        for case in scenario["cases"]:
            p = f"{scenario['key']}/{case['name']}"
            rows.append(
                f"| {scenario['key']} | {case['name']}: {case['note']} | {f[p + '/fired']} | {f[p + '/p50']} | "
                f"{f[p + '/p99']} | {f[p + '/max']} | {f[p + '/holds']} | {f[p + '/concurrency']} | "
                f"{f[p + '/hottest']} | {f[p + '/throttled']} | {f[p + '/depth']} | {f[p + '/in_flight']} | "
                f"{f[p + '/drain']} | {f[p + '/rate']} | {f[p + '/invocation']} | {f[p + '/partitions']} "
                f"({f[p + '/splits']}) | {f[p + '/on_demand']} | {f[p + '/provisioned']} |"
            )
        out[f"scenario/{scenario['key']}"] = "\n".join(rows)
    rows = [
        "| criterion | largest rate held (fires/s) | its p50 / p99 / max (s) | its hottest partition (WCU/s), "
        "throttled WCU | the next rate (fires/s) | its p50 / p99 / max (s) | its throttled WCU |",
        "|---|---|---|---|---|---|---|",
    ]
    labels = {"p99": "p99 under 1 s, all fired", "every": "every fire under 1 s"}
    for criterion in ("p99", "every"):
        if criterion not in results["fresh"]:
            continue
        found = results["fresh"][criterion]
        held, above = f"fresh/{criterion}/held", f"fresh/{criterion}/above"
        late = f"{f[held + '/p50']} / {f[held + '/p99']} / {f[held + '/max']}" if found["held"] else "—"
        heat = f"{f[held + '/hottest']}, {f[held + '/throttled']}" if found["held"] else "—"
        over = f"{f[above + '/p50']} / {f[above + '/p99']} / {f[above + '/max']}" if found["above"] else "—"
        over_throttled = f[above + "/throttled"] if found["above"] else "—"
        rows.append(
            f"| {labels[criterion]} | {f[f'fresh/{criterion}/rate']} | {late} | {heat} | "
            f"{f[f'fresh/{criterion}/above_rate']} | {over} | {over_throttled} |"
        )
    out["fresh"] = "\n".join(rows)
    for name, lines in results.get("search_tables", {}).items():
        out[f"search/{name}"] = "\n".join(lines)
    return out


def sync(document: str, results: Mapping[str, Any]) -> str:
    """``document`` with every generated table and cited figure rendered from ``results``."""
    tables, named = blocks(results), figures(results)

    def table(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in tables:
            raise KeyError(f"docs/scale.md cites a table the model does not give: {name}")
        return f"{match[1]}{tables[name]}\n{match[4]}"

    def figure(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in named:
            raise KeyError(f"docs/scale.md cites a figure the model does not give: {name}")
        return f"{match[1]}{named[name]}{match[4]}"

    return FIGURE.sub(figure, BLOCK.sub(table, document))


def differences(document: str, results: Mapping[str, Any]) -> list[str]:
    """Where ``document`` differs from what ``results`` render (empty: it is the model's output)."""
    rendered = sync(document, results)
    if rendered == document:
        return []
    mine, theirs = document.splitlines(), rendered.splitlines()
    return [
        f"line {i + 1}: {a!r} should be {b!r}" for i, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b
    ] or ["the documents differ in length"]
