"""The OpenAPI document is the whole contract: every answer has a schema, "exactly one of" is a
``oneOf``, and whatever the API answers for a schedule or a target it accepts back."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from shared.api.errors import from_pydantic
from shared.api.models.schedules import ScheduleIn, schedule_to_domain
from shared.api.models.targets import TargetIn, target_to_domain
from shared.api.models.task_patches import TaskPatchIn
from shared.api.models.tasks import TaskIn
from shared.api.views.forms import schedule_of, target_of
from shared.domain import schedules as sched
from shared.domain import tasks as t
from shared.domain.calendars import Level, Repeat

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def document() -> dict:
    from functions.api.handler import app

    return json.loads(app.get_openapi_json_schema())


def _operations(document: dict):
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            yield f"{method.upper()} {path}", operation


def test_every_success_answer_has_a_schema_and_every_error_the_error_format(document):
    for name, operation in _operations(document):
        for code, response in operation["responses"].items():
            if code == "204":
                continue
            schema = response["content"]["application/json"]["schema"]
            assert "$ref" in schema, f"{name} {code} has no model: {schema}"
            if int(code) >= 400:
                assert schema["$ref"].endswith("/ErrorOut"), f"{name} {code}"


def test_no_validation_answer_the_api_never_gives(document):
    schemas = document["components"]["schemas"]
    assert not {"HTTPValidationError", "ValidationError", "ResponseValidationError"} & set(schemas)
    for name, operation in _operations(document):
        assert "422" not in operation["responses"] or "Idempotency" in operation["responses"]["422"]["description"], (
            name
        )


def test_every_operation_that_takes_a_body_documents_the_413_of_one_over_the_limit(document):
    """The handler refuses a body over the limit before it knows the route (a fresh fuzzer seed
    found PATCH /v1/workflows/{id} answering a 413 its document did not list)."""
    taking = [(name, operation) for name, operation in _operations(document) if "requestBody" in operation]
    assert len(taking) >= 10
    for name, operation in taking:
        assert "413" in operation["responses"], name
    assert all("413" not in op["responses"] for _, op in _operations(document) if "requestBody" not in op)


def test_exactly_one_of_is_a_one_of(document):
    schemas = document["components"]["schemas"]
    schedule = schemas["TaskIn"]["properties"]["schedule"]
    assert [ref["$ref"].rsplit("/", 1)[1] for ref in schedule["oneOf"]] == [
        "AtSchedule",
        "AfterSchedule",
        "CronSchedule",
        "EverySchedule",
        "RepeatSchedule",
    ]
    assert {tuple(branch["required"]) for branch in schemas["TaskIn"]["anyOf"]} == {("target",), ("targets",)}
    assert [branch["required"] for branch in schemas["TaskIn"]["not"]["anyOf"]] == [["target", "targets"]]
    rules = schemas["RepeatSchedule"]["properties"]["repeat"]["oneOf"]
    assert [ref["$ref"].rsplit("/", 1)[1] for ref in rules] == [
        "HourRule",
        "DayRule",
        "WeekRule",
        "MonthRule",
        "YearRule",
        "WorkdayRule",
    ]
    assert "days" not in schemas["DayRule"]["properties"]
    assert "time" not in schemas["HourRule"]["properties"]
    patch = schemas["TaskPatchIn"]
    assert patch["minProperties"] == 1
    assert patch["not"] == {"required": ["target", "targets"]}
    assert "oneOf" in patch["properties"]["schedule"]
    for kind in ("AtSchedule", "CronSchedule", "HttpTarget", "TaskOut", "RunOut"):
        assert schemas[kind]["additionalProperties"] is False


def _errors(model, body) -> list[tuple[str, str]]:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(body)
    return [(d.field, d.message) for d in from_pydantic(caught.value.errors()).details]


HTTP = {"http": {"url": "http://127.0.0.1:9/x"}}


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"schedule": {}, "target": HTTP}, "schedule", "exactly one of at, after_seconds"),
        ({"schedule": {"at": "2030-01-01T00:00:00Z", "cron": "* * * * *"}, "target": HTTP}, "schedule", "exactly one"),
        ({"schedule": {"after_seconds": 5}}, "target", "exactly one of target or targets"),
        ({"schedule": {"after_seconds": 5}, "target": HTTP, "targets": [HTTP]}, "target", "exactly one"),
        (
            {
                "schedule": {"cron": "* * * * *", "start": "2030-01-02T00:00:00Z", "end": "2030-01-01T00:00:00Z"},
                "target": HTTP,
            },
            "schedule.end",
            "after start",
        ),
        ({"schedule": {"cron": "61 * * * *"}, "target": HTTP}, "schedule.cron", "minute field"),
        ({"schedule": {"cron": "* * * * *", "timezone": "Mars/Base"}, "target": HTTP}, "schedule.timezone", "Mars"),
        (
            {"schedule": {"repeat": {"level": "day", "days": [1]}}, "target": HTTP},
            "schedule.repeat.days",
            "of a day rule",
        ),
        (
            {"schedule": {"repeat": {"level": "hour", "time": "09:00"}}, "target": HTTP},
            "schedule.repeat.time",
            "of a hour rule",
        ),
        ({"schedule": {"repeat": {"level": "fortnight"}}, "target": HTTP}, "schedule.repeat.level", "is one of hour"),
        ({"schedule": {"repeat": {"level": "week", "days": [8]}}, "target": HTTP}, "schedule.repeat.days[0]", "7"),
        ({"schedule": {"after_seconds": 5}, "target": {"ftp": {}}}, "target", "exactly one of http"),
        (
            {"schedule": {"after_seconds": 5}, "targets": [HTTP, {"sqs": {"queue_url": "nope"}}]},
            "targets[1].sqs.queue_url",
            "pattern",
        ),
        (
            {"schedule": {"after_seconds": 5}, "target": {"job": {"processor": {"sqs": {"queue_url": "x"}}}}},
            "target.job.processor",
            "exactly one of http, lambda",
        ),
        ({"schedule": {"at": "0001-01-01T00:00:00+01:00"}, "target": HTTP}, "schedule.at", "out of range"),
    ],
)
def test_rules_across_fields_name_the_member(body, field, words):
    errors = _errors(TaskIn, body)
    assert any(name == field and words in message for name, message in errors), errors


def test_a_patch_refuses_nothing_given_both_targets_and_a_null_schedule():
    assert _errors(TaskPatchIn, {})[0][0] == "body"
    assert _errors(TaskPatchIn, {"target": HTTP, "targets": [HTTP]})[0][0] == "target"
    assert _errors(TaskPatchIn, {"schedule": None}) == [("schedule", "cannot be null")]


SCHEDULES = TypeAdapter(ScheduleIn)
TARGETS = TypeAdapter(TargetIn)
instants = st.datetimes(min_value=datetime(2001, 1, 1), max_value=datetime(2099, 1, 1), timezones=st.just(UTC)).map(
    lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)
)


@given(
    st.one_of(
        instants.map(sched.At),
        st.floats(min_value=0.001, max_value=86_400, allow_nan=False).map(sched.After),
        st.builds(
            sched.Cron,
            st.sampled_from(["*/5 * * * *", "0 8 * * 1-5", "0 0 1,15 * 5", "*/10 * * * * *"]),
            st.sampled_from(["UTC", "Asia/Shanghai", "America/New_York"]),
        ),
        st.builds(sched.Every, st.floats(min_value=1, max_value=86_400, allow_nan=False), instants),
        st.builds(
            Repeat,
            st.sampled_from([Level.DAY, Level.WORKDAY]),
            st.integers(1, 1000),
            st.just(()),
            st.none(),
            instants,
            st.sampled_from(["UTC", "Europe/Paris"]),
        ),
    )
)
def test_a_schedule_answered_is_accepted_back_as_the_same_schedule(schedule):
    answered = SCHEDULES.dump_python(schedule_of(schedule), mode="json", by_alias=True)
    again = schedule_to_domain(SCHEDULES.validate_python(answered))
    assert again == schedule


def test_a_cron_made_with_line_breaks_is_answered_on_one_line_and_accepted_back():
    """The EventBridge Scheduler API reads `cron(0 12\n* * ? *)` as the service does (any whitespace
    between fields); the native API refuses a line break, so its answer has the fields one space apart."""
    made = sched.Cron("0 12\n* * ?\t*", "UTC", None, None, sched.EVENTBRIDGE)
    answered = SCHEDULES.dump_python(schedule_of(made), mode="json", by_alias=True)
    assert answered == {"cron": "0 12 * * ? *", "timezone": "UTC", "dialect": "eventbridge"}
    assert SCHEDULES.validate_python(answered).cron == "0 12 * * ? *"


@pytest.mark.parametrize(
    "target",
    [
        t.HttpTarget("https://example.com/hook", "PUT", {"X-Team": "orders"}, 5.0),
        t.LambdaTarget("arn:aws:lambda:us-east-1:123456789012:function:f:live"),
        t.SqsTarget("https://sqs.us-east-1.amazonaws.com/123456789012/q.fifo"),
        t.SnsTarget("arn:aws:sns:us-east-1:123456789012:topic"),
        t.EventBridgeTarget("default", "orders", "OrderClosed"),
    ],
)
def test_a_target_answered_is_accepted_back_as_the_same_target(target):
    answered = TARGETS.dump_python(target_of(target), mode="json", by_alias=True)
    assert "lambda_" not in json.dumps(answered)
    assert target_to_domain(TARGETS.validate_python(answered)) == target


def test_a_time_before_the_year_1000_is_answered_as_iso_8601():
    """strftime("%Y") does not pad: a start in the year 309 was stored as "309-04-24T..." and
    every read of the task then failed to parse it (found by schemathesis)."""
    from shared.domain.times import iso

    early = datetime(309, 4, 24, 2, 54, 2, 163_000, tzinfo=UTC)
    assert iso(early) == "0309-04-24T02:54:02.163Z"
    assert datetime.fromisoformat(iso(early)) == early
    every = sched.Every(897_534, early)
    assert (
        schedule_to_domain(SCHEDULES.validate_python(SCHEDULES.dump_python(schedule_of(every), mode="json"))) == every
    )


def test_a_call_stored_before_a_rule_it_breaks_is_still_shown() -> None:
    """A URL ending in a line break was taken until the URL rule matched the whole value: a task or
    a job stored then is still answered (the call as stored), never a 500."""
    from shared.api.views.forms import processor_of, target_of
    from shared.domain import tasks as domain

    stored = domain.HttpTarget(url="https://example.com/hook\n")
    assert target_of(stored).model_dump(mode="json", by_alias=True)["http"]["url"] == "https://example.com/hook\n"
    assert processor_of(stored).model_dump(mode="json", by_alias=True)["http"]["url"] == "https://example.com/hook\n"
