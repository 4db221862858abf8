"""Hostile request bodies (shared/api/hostile.py): valid or nearly valid JSON built to break the
parsers behind the API is refused as a validation error naming the problem, and any other text
is either accepted or refused, never an unexpected exception (which the API would answer 5xx)."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.api.hostile import MAX_DEPTH, MAX_INTEGER_DIGITS, check_json_body, refusal
from shared.domain.errors import ValidationFailed

pytestmark = pytest.mark.unit

TASK = {
    "name": "nightly [report] {v2}",
    "schedule": {"cron": "0 3 * * *", "timezone": "Europe/Paris"},
    "target": {"http": {"url": "https://example.com/hook", "headers": {"X-Quote": 'say "hi" \\ [ {'}}},
    "payload": {"emoji": "\U0001f600", "n": -12345678901234567890, "x": 1.5e-300, "list": [[[]]], "none": None},
}


def refused(text: str) -> ValidationFailed:
    with pytest.raises(ValidationFailed) as caught:
        check_json_body(text)
    return caught.value


def nested(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


def test_an_ordinary_body_and_no_body_pass() -> None:
    check_json_body(json.dumps(TASK))
    check_json_body(json.dumps(TASK, ensure_ascii=False))
    check_json_body(None)
    check_json_body("")


def test_nesting_is_allowed_to_the_limit_and_refused_past_it() -> None:
    check_json_body(nested(MAX_DEPTH))
    check_json_body('{"a":' * (MAX_DEPTH - 1) + "[]" + "}" * (MAX_DEPTH - 1))
    error = refused(nested(MAX_DEPTH + 1))
    assert error.details[0].field == "body"
    assert f"more than {MAX_DEPTH} levels deep" in error.details[0].message
    assert "levels deep" in refused(nested(50_000)).message


def test_brackets_and_escaped_quotes_inside_strings_do_not_count_as_nesting() -> None:
    check_json_body(json.dumps({"s": "[" * 1000 + '\\"' + "{" * 1000}))
    check_json_body(json.dumps(["\\", "[[[[" * 100]))
    # an escaped quote does not end the string: the brackets after it are still inside it
    check_json_body('["\\"' + "[" * 500 + '"]')


def test_integers_are_allowed_to_the_digit_limit_and_refused_past_it() -> None:
    check_json_body(json.dumps({"n": int("9" * MAX_INTEGER_DIGITS)}))
    check_json_body(json.dumps({"n": -int("9" * MAX_INTEGER_DIGITS)}))
    error = refused(json.dumps({"payload": int("9" * (MAX_INTEGER_DIGITS + 1))}))
    assert f"more than {MAX_INTEGER_DIGITS} digits" in error.message
    assert "digits" in refused('{"payload": ' + "7" * 5000 + "}").message


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400", "-1E+999"])
def test_numbers_json_has_not_are_refused(literal: str) -> None:
    error = refused('{"payload": ' + literal + "}")
    assert error.details[0].field == "body"
    assert "number" in error.details[0].message


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('{"name": "\\udfff"}', "name"),
        ('{"payload": {"a": ["ok", "x\\ud800y"]}}', "payload.a[1]"),
        ('{"payload": {"\\udc00": 1}}', "payload.\udc00"),
        ('{"targets": [{"http": {"headers": {"X": "\\ud83d"}}}]}', "targets[0].http.headers.X"),
        ('"\\ude00"', "body"),
    ],
)
def test_a_lone_surrogate_is_refused_where_it_is(body: str, field: str) -> None:
    error = refused(body)
    assert error.details[0].field == field
    assert "lone UTF-16 surrogate" in error.details[0].message


def test_a_surrogate_pair_is_one_character_and_passes() -> None:
    check_json_body('{"name": "\\ud83d\\ude00"}')


@pytest.mark.parametrize("text", ["{", '{"a": }', "[1,]", "nul", "{'a': 1}", '"unterminated', '{"a": 1} x'])
def test_text_that_is_not_json_is_refused_as_such(text: str) -> None:
    error = refused(text)
    assert error.details[0].field == "body"
    assert error.details[0].message.startswith("is not valid JSON")


def test_the_scan_is_linear_on_pathological_strings() -> None:
    started = time.perf_counter()
    for text in ('"' + '\\"' * 60_000, '["' + "\\\\" * 60_000, '"' * 120_000, "[" * 120_000):
        with pytest.raises(ValidationFailed):
            check_json_body(text)
    assert time.perf_counter() - started < 2


def test_refusal_is_a_400_in_the_api_error_format() -> None:
    answer = refusal(nested(MAX_DEPTH + 1))
    assert answer is not None
    assert answer["statusCode"] == 400
    assert answer["headers"]["Content-Type"] == "application/json"
    error = json.loads(answer["body"])["error"]
    assert error["code"] == "validation_error"
    assert error["details"][0]["field"] == "body"
    assert refusal(json.dumps(TASK)) is None
    assert refusal(None) is None


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**MAX_INTEGER_DIGITS) + 1, max_value=10**MAX_INTEGER_DIGITS - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=["Cs"])),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(st.characters(exclude_categories=["Cs"]), max_size=5), children, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(json_values, st.booleans())
def test_any_json_without_hostile_parts_passes(value: object, ascii_only: bool) -> None:
    check_json_body(json.dumps(value, ensure_ascii=ascii_only))


@settings(max_examples=500, deadline=None)
@given(st.text() | st.builds(json.dumps, json_values).map(lambda text: text[: len(text) // 2]))
def test_any_text_is_accepted_or_refused_never_an_unexpected_error(text: str) -> None:
    refusal_details = None
    try:
        check_json_body(text)
    except ValidationFailed as error:
        refusal_details = error.details
    assert refusal_details is None or refusal_details[0].field


@pytest.mark.parametrize("body", ["[{}]", '[{"previous_expires_in_seconds": 0}]', "[]", "null", "1", '"text"', "true"])
def test_a_body_that_is_not_a_json_object_is_refused_naming_the_body(body: str) -> None:
    """Every request body is an object: an array whose first member is one is not read as it."""
    answer = refusal(body)
    assert answer is not None
    assert answer["statusCode"] == 400
    error = json.loads(answer["body"])["error"]
    assert (error["code"], error["details"][0]["field"], error["details"][0]["message"]) == (
        "validation_error",
        "body",
        "must be a JSON object",
    )
    assert refusal("{}") is None
