"""A job's HTTP processor over a real HTTP server (shared/delivery/processor.py)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from shared.delivery.processor import HttpProcessor, http_client
from shared.domain.jobs import ANSWER_EXCERPT_CHARS, JobSpec, ProcessorFailed, ProcessorRetryable, ReportedError
from shared.domain.sharding import Sharding
from shared.domain.tasks import HttpTarget
from shared.services.jobs import JobSteps, levels_key
from tests.support.fakes import InMemoryBlobs, InMemoryJobStore
from tests.support.processor import Answer, running_processor

pytestmark = pytest.mark.integration


@pytest.fixture
def server() -> Iterator[tuple[str, list[tuple[dict[str, str], Any]], Callable[[Callable[[Any], Answer]], None]]]:
    answer: list[Callable[[Any], Answer]] = [lambda body: (200, b"{}")]

    def answering(how: Callable[[Any], Answer]) -> None:
        answer[0] = how

    with running_processor(lambda body: answer[0](body)) as (url, seen):  # noqa: PLW0108 - read at each call
        yield url, seen, answering


def _processor(url: str) -> HttpProcessor:
    return HttpProcessor(HttpTarget(url, timeout_seconds=5), http_client(allow_loopback=True, allow_private=False))


def _counting(body: dict[str, Any]) -> Answer:
    if body["phase"] == "pre":
        return 200, json.dumps({"data": [list(range(1, 11)), [100]]}).encode()
    if body["phase"] == "shard":
        return 200, json.dumps({"result": sum(body["items"])}).encode()
    if body["phase"] == "post":
        return 200, json.dumps({"result": {"sum": sum(body["results"])}}).encode()
    return 200, b""


def test_a_job_runs_against_an_http_processor(server: Any) -> None:
    url, seen, answering = server
    answering(_counting)
    store, blobs = InMemoryJobStore(), InMemoryBlobs()
    store.add(JobSpec("job-9", Sharding(5, 5, 10), 50))
    blobs.put(levels_key("job-9"), [["a reference"]])
    steps = JobSteps(store, blobs, _processor(url))
    planned = steps.pre("job-9")
    for level in planned["levels"]:
        for shard in level["shards"]:
            steps.shard("job-9", level["level"], shard, level["shard_count"])
    steps.post("job-9")
    assert store.jobs["job-9"].result == {"sum": 155}
    phases = [body["phase"] for _, body in seen]
    assert phases == ["pre", "shard", "shard", "notify", "shard", "notify", "post"]
    headers, first_shard = seen[1]
    assert first_shard == {"job_id": "job-9", "phase": "shard", "level": 0, "shard": 0, "shard_count": 2,
                           "items": [1, 2, 3, 4, 5]}  # fmt: skip
    assert headers["Idempotency-Key"] == "job-9:shard:0:0"
    assert headers["Sundial-Job-Id"] == "job-9"
    assert headers["Content-Type"] == "application/json"


@pytest.mark.parametrize(
    ("status", "payload", "error"),
    [
        (503, b"{}", ProcessorRetryable),
        (429, b"{}", ProcessorRetryable),
        (400, b'{"why": "bad"}', ProcessorFailed),
        (200, b"not json", ProcessorFailed),
        (200, b"[1, 2]", ProcessorFailed),
    ],
)
def test_failures_are_told_apart(server: Any, status: int, payload: bytes, error: type[Exception]) -> None:
    """Each failure says which step it was, what the processor answered and the start of it."""
    url, _, answering = server
    answering(lambda body: (status, payload))
    with pytest.raises(error) as raised:
        _processor(url).call("job-1", {"job_id": "job-1", "phase": "shard", "level": 0, "shard": 1, "items": []})
    failure = raised.value.failure  # type: ignore[attr-defined]
    assert (failure.step, failure.level, failure.shard, failure.status) == ("shard", 0, 1, status)
    assert failure.answer == payload.decode()
    assert failure.where() == "shard 1 of level 0"
    assert failure.error is None  # an answer that reports no error: kept as it is
    if status != 200:
        assert failure.reason == f"the processor answered HTTP {status}"
    assert failure.retryable is (error is ProcessorRetryable)


def test_a_failure_keeps_only_the_start_of_a_long_answer_on_one_line(server: Any) -> None:
    url, _, answering = server
    answering(lambda body: (500, b"Internal error\n" + b"x" * 100_000))
    with pytest.raises(ProcessorRetryable) as raised:
        _processor(url).call("job-1", {"job_id": "job-1", "phase": "pre", "data": []})
    failure = raised.value.failure
    assert failure is not None
    assert failure.answer is not None
    assert failure.answer.startswith("Internal error xxx")
    assert len(failure.answer) == ANSWER_EXCERPT_CHARS
    assert failure.answer.endswith("…")
    assert failure.sentence().startswith("the pre step failed: the processor answered HTTP 500: Internal error xxx")


@pytest.mark.parametrize(
    ("status", "error"), [(500, ProcessorRetryable), (503, ProcessorRetryable), (422, ProcessorFailed)]
)
def test_an_answer_that_says_what_the_processor_raised_is_read(
    server: Any, status: int, error: type[Exception]
) -> None:
    """``{"error": {"type", "message"}}`` (the receiver kit's answer for a method that raised): the
    failure keeps the error it reports and says it; the status still decides the retry."""
    url, _, answering = server
    answering(lambda body: (status, {"error": {"type": "KeyError", "message": "'user_id'"}, "key": "job-1:pre"}))
    with pytest.raises(error) as raised:
        _processor(url).call("job-1", {"job_id": "job-1", "phase": "pre", "data": []})
    failure = raised.value.failure  # type: ignore[attr-defined]
    assert failure.error == ReportedError("KeyError", "'user_id'")
    assert failure.sentence() == f"the pre step failed: KeyError: 'user_id' (the processor answered HTTP {status})"
    assert failure.status == status


def test_a_processor_at_a_loopback_address_is_refused_unless_allowed(server: Any) -> None:
    url, seen, _ = server
    refusing = HttpProcessor(HttpTarget(url, timeout_seconds=5), http_client(allow_loopback=False, allow_private=False))
    with pytest.raises(ProcessorFailed, match="refused"):
        refusing.call("job-1", {"job_id": "job-1", "phase": "pre", "data": []})
    assert seen == []


def test_an_unreachable_processor_is_retryable() -> None:
    with pytest.raises(ProcessorRetryable) as raised:
        _processor("http://127.0.0.1:9/x").call("job-1", {"job_id": "job-1", "phase": "pre", "data": []})
    failure = raised.value.failure
    assert failure is not None
    assert (failure.step, failure.status, failure.answer) == ("pre", None, None)  # no answer: the connection's error
    assert failure.reason.startswith("the processor could not be called: "), failure.reason
