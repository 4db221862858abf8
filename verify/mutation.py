"""``make mutation``'s score: what mutmut's run left in mutants/ (each mutated file's ``.meta``:
every mutant's exit code), per file and in all, with the survivors' names (``mutmut show NAME``
shows one's change). Killed counts timeouts (the tests never finished: they noticed); the score
is killed over the mutants that had tests."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

KILLED = {1, 3, 36, -24, 24, 152, 255}
"""Exit codes mutmut reads as killed: the tests failed (1), pytest's internal error (3), or a
timeout (mutmut's stats.py, ``status_by_exit_code``)."""
SURVIVED = 0
NO_TESTS = {5, 33}


def tally(root: Path) -> tuple[dict[str, Counter[str]], list[str]]:
    """Per mutated file: killed, survived, no tests, other; and the survivors' names."""
    per_file: dict[str, Counter[str]] = {}
    survivors: list[str] = []
    for meta in sorted(root.rglob("*.py.meta")):
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        counts: Counter[str] = Counter()
        for name, code in codes.items():
            if code in KILLED:
                counts["killed"] += 1
            elif code == SURVIVED:
                counts["survived"] += 1
                survivors.append(name)
            elif code in NO_TESTS:
                counts["no tests"] += 1
            else:
                counts["not checked" if code is None else "other"] += 1
        per_file[str(meta.relative_to(root)).removesuffix(".meta")] = counts
    return per_file, survivors


def main(argv: list[str] | None = None) -> int:
    root = Path((argv or sys.argv[1:] or ["mutants"])[0])
    per_file, survivors = tally(root)
    if not per_file:
        print(f"no mutmut results under {root}/: run `make mutation`")
        return 1
    total: Counter[str] = Counter()
    for path, counts in per_file.items():
        total.update(counts)
        tested = counts["killed"] + counts["survived"]
        score = 100 * counts["killed"] / tested if tested else 0.0
        print(f"{path:<40} {counts['killed']:>5} killed {counts['survived']:>4} survived {score:6.1f} %")
    tested = total["killed"] + total["survived"]
    print(
        f"score: {100 * total['killed'] / tested:.1f} % ({total['killed']} of {tested} mutants with tests killed; "
        f"{total['no tests']} reached by no test, {total['not checked']} not checked)"
    )
    for name in survivors:
        print(f"  survived: {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
