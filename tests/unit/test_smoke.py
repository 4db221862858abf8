"""The smoke check's verdicts (sundial_cli/smoke.py) on answers made up here: a late run, a run
that is not what the check wanted, and an API that cannot be reached each fail it, and say why.
That it passes against a real runtime is tests/e2e/test_smoke.py's."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from sundial_cli import smoke
from sundial_cli.client import Client

pytestmark = pytest.mark.unit

BASE = "https://api.example.test/prod"


def _late_api(lateness_ms: int) -> httpx.MockTransport:
    """Every task registers; every task's history is three succeeded runs ``lateness_ms`` late."""
    registered: list[dict[str, Any]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix("/prod")
        if request.method == "POST" and path == "/v1/tasks":
            registered.append(json.loads(request.content))
            return httpx.Response(201, json={"id": f"task-{len(registered)}"})
        if request.method == "GET" and path.endswith("/runs"):
            runs = [
                {
                    "run_id": f"run-{i}",
                    "scheduled_for": f"2026-11-26T10:00:0{i}.000Z",
                    "fired_at": f"2026-11-26T10:00:0{i}.000Z",
                    "status": "succeeded",
                    "attempts": 1,
                    "lateness_ms": lateness_ms,
                    "last_error": None,
                }
                for i in range(3)
            ]
            return httpx.Response(200, json={"items": runs, "next_cursor": None})
        if request.method == "GET" and path == "/v1/dead-letters":
            return httpx.Response(200, json={"items": [], "next_cursor": None})
        if request.method == "DELETE":
            return httpx.Response(204)
        return httpx.Response(404, json={"error": {"code": "not_found", "message": path}})

    return httpx.MockTransport(answer)


def test_late_and_wrong_runs_fail_the_smoke_with_their_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(smoke, "POLL_S", 0.01)
    client = Client(BASE, "sk_test", transport=_late_api(lateness_ms=5000))
    said: list[str] = []
    verdicts = smoke.Smoke(client, smoke.ApiTargets(BASE), max_lateness_ms=1000).run(0.2, say=said.append)
    by_check = {verdict.check: verdict for verdict in verdicts}
    assert [verdict.check for verdict in verdicts] == ["one-shot", "recurring", "retry", "dead letter", "chain"]
    assert by_check["one-shot"].outcome == smoke.FAILED
    assert "run run-0 5000 ms late (bound 1000 ms)" in by_check["one-shot"].detail
    assert by_check["recurring"].outcome == smoke.FAILED
    assert "lateness [5000, 5000, 5000] ms" in by_check["recurring"].detail
    assert by_check["retry"].outcome == smoke.SKIPPED  # no target answers 500 then 200 on a deployed API
    assert by_check["dead letter"].outcome == smoke.FAILED
    assert "succeeded, not failed" in by_check["dead letter"].detail
    assert by_check["chain"].outcome == smoke.FAILED  # no child run names its parent
    assert by_check["chain"].detail == "no verdict within 0.2 s"
    assert sorted(said) == sorted(verdict.line() for verdict in verdicts)


def test_an_unreachable_api_fails_every_check_and_the_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    status = smoke.main(["--url", "http://127.0.0.1:9", "--timeout", "1"])
    out = capsys.readouterr().out
    assert status == 1, out
    failed = [line for line in out.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 5, out
    assert all("could not reach http://127.0.0.1:9" in line for line in failed), out
    assert out.splitlines()[-1] == "smoke: 0 ok, 5 failed, 0 skipped"


def test_the_stacks_api_url_output_is_taken_as_it_is_printed() -> None:
    assert smoke.base_url(f"{BASE}/v1") == BASE
    assert smoke.base_url(f"{BASE}/v1/") == BASE
    assert smoke.base_url("http://127.0.0.1:8080") == "http://127.0.0.1:8080"
