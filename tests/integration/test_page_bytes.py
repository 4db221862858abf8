"""A list page is bounded by bytes as well as by count: Lambda's answer is at most 6 MB ("Lambda
quotas"), and 100 large items pass it. A page stops before the item that would take it past
``page_bytes`` and answers the cursor after its last item. Through the API, whose local gateway
fails an answer over 6 MB as Lambda does (local/apigw.py): without the bound, such a page is 502."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from local.apigw import response_bytes
from shared.api.models.tasks import MAX_PAGE
from shared.api.paging import answer_bytes
from shared.api.responses import TaskOut
from shared.domain import tasks as t
from shared.domain.retry import RetryPolicy
from shared.domain.tasks import DeadLetter, HttpTarget
from shared.store.dead_letters import DynamoDeadLetters
from shared.topology import LAMBDA_RESPONSE_MAX_BYTES, PAGE_BYTES
from tests.integration.conftest import use_settings
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration

WIDE = "é"
"""Two bytes in a request, seven in the answer (``\\u00e9`` in the body, its backslash escaped
again in the proxy result): the character that grows most from what the API accepts."""


def largest_spec(n: int) -> dict[str, Any]:
    """A task as large in the answer as the API accepts one: its headers as long as the request's
    131,072 bytes allow, in characters that grow most."""
    spec: dict[str, Any] = {
        "name": f"{n:03d}" + WIDE * (t.MAX_NAME_LENGTH - 3),
        "schedule": {"after_seconds": 3600},
        "targets": [],
        "payload": '"' * (t.MAX_PAYLOAD_BYTES // 2 - 1),  # two bytes as JSON, four in the answer
    }
    room = t.MAX_BODY_BYTES - len(json.dumps(spec, ensure_ascii=False).encode()) - 1024
    for target in range(t.MAX_TARGETS):
        headers = {}
        for header in range(t.MAX_HEADERS):
            value = min(t.MAX_HEADER_VALUE, room // 2 - 64)
            if value <= 0:
                break
            headers[f"X-H{target}-{header}"] = WIDE * value
            room -= 2 * value + 64
        spec["targets"].append({"http": {"url": f"https://example.com/{target}", "headers": headers}})
    assert len(json.dumps(spec, ensure_ascii=False).encode()) <= t.MAX_BODY_BYTES
    return spec


def register(api: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """Sent as UTF-8, as a client may: the request's limit counts bytes."""
    answer = api("POST", "/v1/tasks", json.dumps(spec, ensure_ascii=False))
    assert answer.status == 201, answer.body
    return dict(answer.body)


def follow(api: Any, path: str) -> list[Any]:
    """Every page of a list, each checked to fit Lambda's answer."""
    answers, cursor = [], None
    while True:
        answer = api("GET", path + (f"&cursor={cursor}" if cursor else ""))
        assert answer.status == 200, answer.body
        answers.append(answer)
        cursor = answer.body["next_cursor"]
        if cursor is None:
            return answers


def test_a_page_of_the_largest_tasks_stops_below_lambdas_answer_and_goes_on_from_there(api):
    item = answer_bytes(TaskOut.model_validate(register(api, largest_spec(0))))
    assert MAX_PAGE * item > LAMBDA_RESPONSE_MAX_BYTES, "a full page of them would not fit"
    count = PAGE_BYTES // item + 5  # more than one page holds: over 6 MB together
    ids = [register(api, largest_spec(n))["id"] for n in range(1, count)]

    def every_one_listed() -> list[Any]:
        pages = follow(api, f"/v1/tasks?limit={MAX_PAGE}")
        assert sum(len(page.body["items"]) for page in pages) == count
        return pages

    pages = eventually(every_one_listed)
    sizes = [len(page.body["items"]) for page in pages]
    assert len(pages) >= 2, sizes
    assert sizes[0] < count, sizes
    listed = [task["id"] for page in pages for task in page.body["items"]]
    assert len(listed) == count
    assert set(ids) <= set(listed)
    for page in pages:  # what Lambda would send back: under its 6 MB
        result = {"statusCode": 200, "headers": page.headers, "body": json.dumps(page.body, separators=(",", ":"))}
        assert response_bytes(result) <= LAMBDA_RESPONSE_MAX_BYTES


def test_the_worst_case_page_at_the_real_budget_fits_lambdas_answer(api):
    """Computed: the page the real budget allows of the largest tasks, with the answer's own
    members and headers, and one item's margin (a page stops before the item that passes it)."""
    item = answer_bytes(TaskOut.model_validate(register(api, largest_spec(0))))
    print(f"largest task: {item} bytes in Lambda's answer; a page of {MAX_PAGE}: {MAX_PAGE * item}")
    assert item < PAGE_BYTES // 10, "a page always has room for its first item"
    assert PAGE_BYTES + 4096 < LAMBDA_RESPONSE_MAX_BYTES


def test_dead_letters_pages_stop_at_page_bytes(api, monkeypatch):
    use_settings(monkeypatch, page_bytes=100_000)
    letters = DynamoDeadLetters(retention_ms=86_400_000)
    now = datetime.now(UTC)
    for n in range(12):
        run_id = f"01KA{n:022d}"
        letters.record(
            DeadLetter(
                run_id, "default", f"01KB{n:022d}", run_id, now - timedelta(minutes=1), now, 3, "failed",
                (HttpTarget("https://example.com/hook"),), False, {"blob": "x" * 30_000}, RetryPolicy(),
            )
        )  # fmt: skip
    pages = follow(api, "/v1/dead-letters?limit=100")
    assert [len(page.body["items"]) for page in pages] == [3, 3, 3, 3]
    listed = [letter["id"] for page in pages for letter in page.body["items"]]
    assert listed == [f"01KA{n:022d}" for n in reversed(range(12))]
