"""docs/scale.md held to the model's output (sim/doc.py): its tables and the figures its text
cites are rendered from docs/scale/results.json, which `make simulate` writes. A number edited by
hand in a table or a cited figure fails here; so does a results file older than the model's code
(sim/*.py, bench/prices.py), and one whose quick scenarios a fresh run no longer reproduces."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from sim.__main__ import bench_figures, storage_figures
from sim.doc import BLOCK, FIGURE, differences, source_hash
from sim.metrics import summarize
from sim.scenarios import FRESH, SCENARIOS, steady

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "scale.md"
RESULTS = ROOT / "docs" / "scale" / "results.json"


def results() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(RESULTS.read_text())
    return loaded


def same(a: object, b: object) -> bool:
    """Equal as JSON writes them (NaN included)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_the_document_s_tables_and_cited_figures_are_the_model_s_output() -> None:
    problems = differences(DOC.read_text(), results())
    assert not problems, "docs/scale.md is not docs/scale/results.json rendered (make simulate):\n" + "\n".join(
        problems[:10]
    )


def test_the_document_cites_the_model_throughout() -> None:
    """Every scenario's table, the fresh account's, the search's, and the figures of its text."""
    text = DOC.read_text()
    tables = {m["name"] for m in BLOCK.finditer(text)}
    assert {f"scenario/{s.key}" for s in SCENARIOS} | {"fresh", "search/chosen", "search/per_batch"} <= tables
    assert len({m["name"] for m in FIGURE.finditer(text)}) >= 40


def test_a_number_edited_by_hand_is_caught() -> None:
    text = DOC.read_text()
    figure = next(FIGURE.finditer(text))
    edited = text[: figure.start("body")] + figure["body"] + "1" + text[figure.end("body") :]
    assert differences(edited, results())
    table = next(BLOCK.finditer(text))
    body = table["body"]
    row = body.splitlines()[2]
    changed = row.replace("|", "| 9", 3)
    edited = text[: table.start("body")] + body.replace(row, changed) + text[table.end("body") :]
    assert differences(edited, results())


def test_the_results_are_the_current_model_s() -> None:
    """The model's code and prices are what produced docs/scale/results.json (else: make simulate)."""
    assert results()["source"] == source_hash(), "sim/ or bench/prices.py changed since make simulate wrote the figures"


def test_a_fresh_run_reproduces_the_recorded_figures() -> None:
    """The quick parts, run again with the recorded seed: the hot second at the defaults, the
    fresh account at its largest rate, the bench workload and the storage arithmetic."""
    recorded = results()
    seed = recorded["seed"]
    hot = next(s for s in SCENARIOS if s.key == "hot-second")
    case = next(c for c in hot.cases if c.name == "defaults")
    [stored] = [
        c for s in recorded["scenarios"] if s["key"] == "hot-second" for c in s["cases"] if c["name"] == "defaults"
    ]
    assert same(asdict(summarize(hot.build(case.deployment, seed), hot.sustained)), stored["summary"])
    fresh = recorded["fresh"]["p99"]
    again = summarize(steady(fresh["rate"] * 60, 10, weight=10, warm=True)(FRESH, seed))
    assert same(asdict(again), fresh["held"])
    assert bench_figures(seed) == recorded["bench"]
    assert storage_figures() == recorded["storage"]
