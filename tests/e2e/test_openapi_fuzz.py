"""Schemathesis against the local runtime, every check on (server errors, status codes, content
types, response schemas, schema-valid data accepted, invalid data refused, undeclared methods...):
the API answers as its OpenAPI document says, to each caller: with no key (the local default
tenant) and with a tenant's key over the tenant routes, with the admin key over /v1/tenants (three
runs, tests/support/fuzz_run.py). The tenant's and the admin's runs use the fixed seed of
``schemathesis.toml``; the anonymous run a fresh one every time (printed, and replayed with
``FUZZ_SEED``), so the suite keeps looking where it has not looked before.

The fuzzer makes up target URLs and the runtime calls them, so both run inside a network namespace
that has nothing but loopback (``unshare -n``; tests/support/fuzz_run.py refuses to run anywhere
else). The configuration, the seed and the accepted exceptions with their reasons are
``schemathesis.toml`` and tests/support/fuzz_hooks.py."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
BUDGET_S = 900
"""A stall detector, not a speed test: past it the fuzzer is stopped and the test fails. The three
runs take about 1.5 min on a 2-core machine with nothing else running and 3 to 4 min beside the
rest of `make test`; CI's machines ran them 2 to 3 times slower (one run went past the 7 min this
was before)."""


def namespace_command() -> tuple[list[str], str]:
    """The command prefix that runs a program in a new network namespace (as root, or as root of a
    new user namespace when user namespaces are allowed), or why there is none."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return [], "`unshare` (util-linux) is not installed"
    problems = []
    for prefix in ([unshare, "-n"], [unshare, "-r", "-n"]):
        probe = subprocess.run([*prefix, "true"], check=False, capture_output=True, text=True, timeout=10)
        if probe.returncode == 0:
            return prefix, ""
        problems.append(f"`{' '.join(prefix[1:])}`: {probe.stderr.strip()}")
    return [], "unshare is not permitted here (needs root or user namespaces): " + "; ".join(problems)


RUNS = ("anonymous", "tenant", "admin")


def errors_of(log: Path) -> str:
    """What a run printed from its ERRORS (or FAILURES) section on: the message and traceback of
    what the JSON report only counts."""
    text = log.read_text(errors="replace") if log.exists() else f"(no {log.name})"
    starts = [text.find(marker) for marker in ("=== ERRORS", "=== FAILURES") if marker in text]
    return text[min(starts) :][-12000:] if starts else text[-12000:]


def test_schemathesis_finds_nothing_against_the_local_runtime(tmp_path) -> None:
    unshare, problem = namespace_command()
    if not unshare:
        pytest.skip(f"the fuzzer only runs in a loopback-only network namespace, and {problem}")
    reports, runtime_log = tmp_path / "reports", tmp_path / "runtime.log"
    env = {**os.environ, "FUZZ_RUNTIME_LOG": str(runtime_log)}
    started = time.monotonic()
    process = subprocess.Popen(
        [*unshare, sys.executable, "tests/support/fuzz_run.py", "--reports", str(reports), "--no-color"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: a timeout stops the runtime it started too
    )
    try:
        stdout, stderr = process.communicate(timeout=BUDGET_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        pytest.fail(f"the fuzzer ran past {BUDGET_S} s:\n{(stdout + stderr)[-6000:]}")
    done = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    elapsed = time.monotonic() - started
    output = done.stdout + done.stderr
    print(f"\nschemathesis: {elapsed:.0f} s for {len(RUNS)} runs against one local runtime")
    results = {}
    for run in RUNS:
        report = reports / f"{run}.json"
        assert report.exists(), (
            f"schemathesis wrote no report for run {run} (exit {done.returncode}):\n{output[-6000:]}"
        )
        results[run] = result = json.loads(report.read_text())
        refusals = reports / f"{run}.refusals.jsonl"
        entries = [json.loads(line) for line in refusals.read_text().splitlines()] if refusals.exists() else []
        accepted = Counter(entry["accepted"] for entry in entries if entry["accepted"])
        cases = result["test_cases"]
        print(
            f"run {run}: schemathesis {result['schemathesis_version']}, seed {result['seed']}: "
            f"{result['operations']['tested']} of {result['operations']['total']} operations, "
            f"{cases['generated']} cases in {result['running_time']:.0f} s, "
            f"{cases['unique_failures']} unique failures in {cases['with_failures']} cases, "
            f"{len(result['errors'])} errors, {result['filtered']} accepted refusals dropped"
        )
        for reason, count in accepted.items():
            print(f"  accepted {count}x: {reason}")
        for entry in entries:
            if not entry["accepted"]:
                print(f"  refused schema-valid data: {entry['operation']} {entry['status']}: {entry['error']}")
        for failure in result["failures"]:
            print(f"  {failure['code']} {failure['title']}: {', '.join(failure['operations'])}")
    for run, result in results.items():
        replay = f"replay: FUZZ_SEED={result['seed']} FUZZ_ONLY={run} (tests/support/fuzz_run.py)"
        assert (result["failures"], result["errors"]) == ([], []), (run, replay, errors_of(reports / f"{run}.log"))
        assert result["test_cases"]["unique_failures"] == 0, run
        assert result["complete"], (run, result["stop_reason"])
    assert done.returncode == 0, output[-6000:]
