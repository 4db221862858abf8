"""Listing and redriving dead letters is bounded work per request (the API function has 10 s,
API Gateway 29 s): a list reads at most READ_BUDGET letters whatever its filter keeps, and a
redrive of all of them goes a step at a time, each answer's ``next_cursor`` the next call's
``cursor``. Through the API, on moto."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.domain.retry import RetryPolicy
from shared.domain.tasks import DeadLetter, HttpTarget
from shared.services.tasks import MAX_REDRIVE
from shared.store.dead_letters import READ_BUDGET, DynamoDeadLetters

pytestmark = pytest.mark.integration

DAY_MS = 86_400_000


def record(first: int, count: int, *, redriven: bool, failed_at: datetime | None = None) -> list[str]:
    """``count`` letters of the default tenant, ids ``first`` on (a higher one is newer)."""
    letters = DynamoDeadLetters(retention_ms=DAY_MS)
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


def test_a_filtered_list_reads_a_bounded_number_of_letters_and_hands_a_cursor_on_a_short_page(api):
    waiting = record(0, 3, redriven=False)
    record(100, READ_BUDGET + 50, redriven=True)  # newer: read first
    first = api("GET", "/v1/dead-letters?status=dead_lettered&limit=50").body
    assert first["items"] == [], "the budget ran out among redriven letters"
    assert first["next_cursor"] is not None
    answers = pages(api, "/v1/dead-letters?status=dead_lettered&limit=50")
    assert [letter["id"] for page in answers for letter in page["items"]] == waiting[::-1]
    assert len(answers) == 2
    # unfiltered, a full page is read as before
    full = api("GET", "/v1/dead-letters?limit=100").body
    assert len(full["items"]) == 100
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
    steps = redrive_all(api)
    assert steps[0] == 0, "the first step read only redriven letters, and said where to go on"
    assert sum(steps) == len(waiting)
    assert len(steps) >= 3
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
