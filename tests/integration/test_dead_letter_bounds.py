"""Listing and redriving dead letters is bounded work per request (the API function has 10 s,
API Gateway 29 s). The letters waiting for a redrive are read through the status index
(docs/status-index.md): full pages, whatever the tenant's redriven letters. A list of the redriven
ones reads at most READ_BUDGET letters whatever its filter keeps, and a redrive of all of them goes
a step at a time, each answer's ``next_cursor`` the next call's ``cursor``. Through the API, on
moto."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.domain.retry import RetryPolicy
from shared.domain.tasks import DeadLetter, HttpTarget
from shared.services.tasks import MAX_REDRIVE
from shared.settings.environment import from_env
from shared.store.dead_letters import READ_BUDGET, DynamoDeadLetters
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration

DAY_MS = 86_400_000


def record(first: int, count: int, *, redriven: bool, failed_at: datetime | None = None) -> list[str]:
    """``count`` letters of the default tenant, ids ``first`` on (a higher one is newer)."""
    letters = DynamoDeadLetters(retention_ms=DAY_MS, list_shards=from_env().list_shards)
    now = failed_at or datetime.now(UTC)
    ids = []
    for n in range(first, first + count):
        run_id = f"01KA{n:022d}"
        letters.record(
            DeadLetter(
                run_id, "default", f"01KB{n:022d}", run_id, now - timedelta(minutes=1), now, 3, "retries exhausted",
                (HttpTarget("https://example.com/hook"),), False, {"n": n}, RetryPolicy(),
                redriven_run_id=f"01KC{n:022d}" if redriven else None,
            )
        )  # fmt: skip
        ids.append(run_id)
    return ids


def pages(api: Any, path: str) -> list[dict[str, Any]]:
    answers, cursor = [], None
    while True:
        answer = api("GET", path + (f"&cursor={cursor}" if cursor else ""))
        assert answer.status == 200
        answers.append(answer.body)
        cursor = answer.body["next_cursor"]
        if cursor is None:
            return answers


def test_waiting_letters_come_in_full_pages_and_the_other_filter_reads_a_bounded_number(api):
    waiting = record(0, 3, redriven=False)
    redriven = record(100, READ_BUDGET + 50, redriven=True)  # newer: read first by the table's order

    def waiting_on_the_first_page() -> None:  # the status index, which a write reaches a moment later
        first = api("GET", "/v1/dead-letters?status=dead_lettered&limit=50").body
        assert ([letter["id"] for letter in first["items"]], first["next_cursor"]) == (waiting[::-1], None)

    eventually(waiting_on_the_first_page)
    newer_waiting = record(1000, READ_BUDGET + 50, redriven=False)
    first = api("GET", "/v1/dead-letters?status=redriven&limit=50").body
    assert first["items"] == [], "the budget ran out among letters waiting for a redrive"
    assert first["next_cursor"] is not None
    answers = pages(api, "/v1/dead-letters?status=redriven&limit=50")
    assert [letter["id"] for page in answers for letter in page["items"]] == redriven[::-1]
    # unfiltered, a full page is read as before
    full = api("GET", "/v1/dead-letters?limit=100").body
    assert [letter["id"] for letter in full["items"]] == newer_waiting[:-101:-1]
    assert full["next_cursor"] is not None


def redrive_all(api: Any) -> list[int]:
    """``{"all": true}`` until its cursor is null, as a client does: how many each step redrove."""
    steps, cursor = [], None
    while True:
        body: dict[str, Any] = {"all": True, **({"cursor": cursor} if cursor else {})}
        answer = api("POST", "/v1/dead-letters/redrive", body)
        assert answer.status == 200, answer.body
        assert answer.body["redriven"] == len(answer.body["runs"]) <= MAX_REDRIVE
        steps.append(answer.body["redriven"])
        cursor = answer.body["next_cursor"]
        if cursor is None:
            return steps


def test_redrive_all_goes_a_step_at_a_time_until_its_cursor_is_null(api):
    waiting = record(0, MAX_REDRIVE + 30, redriven=False)
    record(1000, READ_BUDGET + 30, redriven=True)

    def listed() -> None:  # the status index, which a write reaches a moment later
        answers = pages(api, "/v1/dead-letters?status=dead_lettered&limit=100")
        assert len([letter for page in answers for letter in page["items"]]) == len(waiting)

    eventually(listed)
    steps = redrive_all(api)
    assert steps == [MAX_REDRIVE, 30], "full steps: the waiting letters only, whatever the redriven ones"
    left = pages(api, "/v1/dead-letters?status=dead_lettered&limit=100")
    assert [letter for page in left for letter in page["items"]] == []
    assert sum(redrive_all(api)) == 0, "each letter fires once"


def test_a_redrive_of_ids_answers_no_cursor_and_a_cursor_goes_with_all_only(api):
    (letter,) = record(0, 1, redriven=False)
    answer = api("POST", "/v1/dead-letters/redrive", {"ids": [letter]})
    assert answer.status == 200
    assert answer.body["redriven"] == 1
    assert answer.body["next_cursor"] is None
    refused = api("POST", "/v1/dead-letters/redrive", {"ids": [letter], "cursor": "abc"})
    assert refused.status == 400
    assert refused.body["error"]["details"][0]["field"] == "cursor"
    bad = api("POST", "/v1/dead-letters/redrive", {"all": True, "cursor": "not a cursor!"})
    assert bad.status == 400
    assert bad.body["error"]["details"][0]["field"] == "cursor"


def test_a_letter_past_its_retention_is_gone_from_the_api_before_ttl_deletes_it(api):
    """DynamoDB's TTL deletes an expired item eventually, typically within days: the item is still
    there, the API shows it no more."""
    (old,) = record(0, 1, redriven=False, failed_at=datetime.now(UTC) - timedelta(days=2))
    (fresh,) = record(1, 1, redriven=False)
    assert [letter["id"] for letter in api("GET", "/v1/dead-letters").body["items"]] == [fresh]
    assert api("GET", f"/v1/dead-letters/{old}").status == 404
    assert api("POST", "/v1/dead-letters/redrive", {"ids": [old]}).status == 404
