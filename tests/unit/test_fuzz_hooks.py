"""The fuzzer's accepted refusals (tests/support/fuzz_hooks.py): a refusal of schema-valid data is
dropped only when it is a 400 validation error whose every detail is an accepted rule of that
operation; anything else stays a failure."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pydantic import BaseModel, ValidationError

from shared.api.errors import from_pydantic
from shared.api.models.calls import HttpTaskCall
from shared.api.models.limits import DestinationLimitIn
from shared.api.models.schedules import CronSchedule
from tests.support.fuzz_hooks import ACCEPTED, accepted_reason

pytestmark = pytest.mark.unit


def refusal(*details: tuple[str, str], code: str = "validation_error") -> dict[str, object]:
    return {"error": {"code": code, "message": "x", "details": [{"field": f, "message": m} for f, m in details]}}


CURSOR = ("cursor", "is not a cursor this API returned")
PAST = ("schedule.at", "2000-01-01T00:00:00Z is more than 24 hours in the past")


def test_every_accepted_rule_says_why() -> None:
    assert all(len(rule.reason) > 40 for rule in ACCEPTED)


def test_an_accepted_rule_is_dropped_with_its_reason() -> None:
    assert "opaque token" in str(accepted_reason("GET /v1/tasks", 400, refusal(CURSOR)))
    assert "clock" in str(accepted_reason("POST /v1/tasks", 400, refusal(PAST)))
    assert accepted_reason("GET /v1/tasks/{task_id}/runs", 400, refusal(CURSOR))


@pytest.mark.parametrize(
    ("operation", "status", "body"),
    [
        ("GET /v1/tasks", 400, refusal(CURSOR, ("limit", "must be at most 100"))),  # one detail not accepted
        ("POST /v1/tasks", 400, refusal(CURSOR)),  # a rule of another operation
        ("GET /v1/tasks", 422, refusal(CURSOR)),
        ("GET /v1/tasks", 400, refusal(CURSOR, code="invalid_state")),
        ("POST /v1/tasks", 400, refusal(("schedule", "give exactly one of at, after_seconds, cron"))),
        ("POST /v1/tasks", 400, {"message": "not the error format"}),
        ("POST /v1/tasks", 400, None),
    ],
)
def test_anything_else_stays_a_failure(operation: str, status: int, body: object) -> None:
    assert accepted_reason(operation, status, body) is None


def test_a_target_naming_a_limit_the_tenant_has_not_is_an_accepted_refusal_of_a_task_route_only() -> None:
    unknown = ("targets[1].http.limit", "names the limit 'x', which this tenant does not have (PUT it first)")
    assert "stored" in str(accepted_reason("POST /v1/tasks", 400, refusal(unknown)))
    assert accepted_reason("PATCH /v1/tasks/{task_id}", 400, refusal(unknown))
    assert accepted_reason("POST /v1/jobs", 400, refusal(unknown)) is None
    assert accepted_reason("POST /v1/tasks", 400, refusal(("target.http.limit", "does not have the form"))) is None
    bracket = ("origin", "has no valid host (Invalid IPv6 URL)")
    assert accepted_reason("PUT /v1/limits/{name}", 400, refusal(bracket))
    assert accepted_reason("PUT /v1/limits/{name}", 400, refusal(("origin", "an origin is scheme://host"))) is None


def test_a_pattern_refusal_of_a_value_ending_in_a_newline_is_accepted_and_no_other() -> None:
    """Python's $ matches before a final newline (the fuzzer generates with it); JSON Schema's and
    the API's do not: such a value was never schema-valid."""
    from tests.support.fuzz_hooks import TRAILING_NEWLINE, trailing_newline_reason

    refusal = {
        "error": {
            "code": "validation_error",
            "details": [{"field": "targets[0].sqs.queue_url", "message": "does not have the form (the pattern ^x$)"}],
        }
    }
    sent = {"targets": [{"sqs": {"queue_url": "https://h/123456789012/q\n"}}]}
    assert trailing_newline_reason(sent, refusal) == TRAILING_NEWLINE
    assert trailing_newline_reason({"targets": [{"sqs": {"queue_url": "https://h/1/q"}}]}, refusal) is None
    other = {"error": {"code": "validation_error", "details": [{"field": "targets[0].sqs.queue_url", "message": "x"}]}}
    assert trailing_newline_reason(sent, other) is None


def _message(model: type[BaseModel], member: str, value: str, **others: object) -> str:
    """The API's message refusing ``value`` as ``model``'s ``member``."""
    with pytest.raises(ValidationError) as refused:
        model.model_validate({member: value, **others})
    return from_pydantic(refused.value.errors()).details[0].message


URL, ORIGIN, CRON = "https://example.com/hook\n", "https://api.example.com\n", "0 0 * * *\n"


@pytest.mark.parametrize(
    ("field", "message", "sent"),
    [
        ("target.http.url", lambda: _message(HttpTaskCall, "url", URL), {"target": {"http": {"url": URL}}}),
        ("origin", lambda: _message(DestinationLimitIn, "origin", ORIGIN, per_second=1), {"origin": ORIGIN}),
        ("schedule.cron", lambda: _message(CronSchedule, "cron", CRON), {"schedule": {"cron": CRON}}),
    ],
)
def test_a_validator_that_checks_the_pattern_itself_refuses_a_final_newline_in_words_the_hook_knows(
    field: str, message: Callable[[], str], sent: dict[str, object]
) -> None:
    """The URL, the origin and the cron expression are checked against the document's pattern by
    validators that say why; their refusal of a value the fuzzer's $ let through is accepted too."""
    from tests.support.fuzz_hooks import TRAILING_NEWLINE, trailing_newline_reason

    assert trailing_newline_reason(sent, refusal((field, message()))) == TRAILING_NEWLINE


def test_a_delete_of_a_seeded_workflow_or_limit_is_sent_for_a_made_up_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stateful phase follows a link from a read of the seed to a DELETE: it must not remove
    what every later read reads (tests/support/fuzz_hooks.py ``before_call``)."""
    from types import SimpleNamespace

    from tests.support.fuzz_hooks import SEEDED_LIMIT, before_call

    monkeypatch.setenv("FUZZ_WORKFLOW_ID", "01SEEDEDWORKFLOW")
    cases = [
        SimpleNamespace(method="DELETE", path_parameters={"workflow_id": "01SEEDEDWORKFLOW"}),
        SimpleNamespace(method="delete", path_parameters={"name": SEEDED_LIMIT}),
        SimpleNamespace(method="DELETE", path_parameters={"workflow_id": "01ANOTHER"}),
        SimpleNamespace(method="GET", path_parameters={"workflow_id": "01SEEDEDWORKFLOW"}),
    ]
    for case in cases:
        before_call(None, case, {})
    assert [case.path_parameters for case in cases] == [
        {"workflow_id": "01SEEDEDWORKFLOW-not-seeded"},
        {"name": f"{SEEDED_LIMIT}-not-seeded"},
        {"workflow_id": "01ANOTHER"},
        {"workflow_id": "01SEEDEDWORKFLOW"},
    ]
