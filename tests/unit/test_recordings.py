"""The loader of AWS's recordings and its shape comparison (tests/support/recordings.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.recordings import DATA, recording, same_shape, source, with_values

pytestmark = pytest.mark.unit

RECORDED = {
    "id": "<uuid:1>",
    "count": 0,
    "flag": True,
    "nothing": None,
    "items": [{"name": "a"}],
    "empty": [],
    "nested": {"arn": "arn:<partition>:sqs:<region>:111111111111:<resource:1>"},
}


def test_the_same_shape_with_other_values_has_no_difference() -> None:
    actual = {
        "id": "3f0c",
        "count": 12.5,
        "flag": False,
        "nothing": None,
        "items": [{"name": "b"}, {"name": "c"}],
        "empty": [1, "x"],
        "nested": {"arn": "arn:aws:sqs:us-east-1:123456789012:q"},
    }
    assert same_shape(actual, RECORDED) == []


def test_each_difference_is_a_line_naming_its_path() -> None:
    actual = {
        "id": 7,
        "count": "0",
        "flag": 1,
        "nothing": "",
        "items": [{"name": "a", "extra": 1}, {}],
        "empty": {},
        "nested": {},
        "more": 1,
    }
    assert same_shape(actual, RECORDED) == [
        "(the whole): 'more', which AWS did not record",
        "id: number where AWS recorded string",
        "count: string where AWS recorded number",
        "flag: number where AWS recorded boolean",
        "nothing: string where AWS recorded null",
        "items[0]: 'extra', which AWS did not record",
        "items[1]: no 'name', which AWS recorded",
        "empty: object where AWS recorded array",
        "nested: no 'arn', which AWS recorded",
    ]


def test_ignored_paths_keep_their_keys_but_not_their_types() -> None:
    actual = {**RECORDED, "count": "now", "items": [{"name": 1}, {"name": 2}], "nested": {"arn": None}}
    assert same_shape(actual, RECORDED, ignore=("count", "items[*].name", "nested.*")) == []
    del actual["count"]
    assert same_shape(actual, RECORDED, ignore=("count", "items[*].name", "nested.*")) == [
        "(the whole): no 'count', which AWS recorded"
    ]


def test_a_string_of_json_matches_the_object_the_snapshot_library_parsed_it_into() -> None:
    recorded = {"detail": {"input": {"job_id": "<resource:1>"}}}
    assert same_shape({"detail": {"input": json.dumps({"job_id": "j"})}}, recorded) == []
    assert same_shape({"detail": {"input": json.dumps({"job": "j"})}}, recorded) == [
        "detail.input: no 'job_id', which AWS recorded",
        "detail.input: 'job', which AWS did not record",
    ]
    assert same_shape({"detail": {"input": "not json"}}, recorded) == ["detail.input: string where AWS recorded object"]


def test_placeholders_are_filled_with_values_of_the_type_they_stand_for() -> None:
    filled = with_values({"a": ["start-date", {"b": "start-date"}], "c": "start"}, {"start-date": 1})
    assert filled == {"a": [1, {"b": 1}], "c": "start"}


@pytest.mark.parametrize("path", sorted(DATA.glob("*.json")), ids=lambda p: p.stem)
def test_every_recording_says_where_it_comes_from(path: Path) -> None:
    origin = source(path.stem)
    if "page" in origin:  # a sample of AWS's documentation (its page, and the docs' repository at a commit)
        assert set(origin) >= {"page", "repository", "commit", "path", "at"}
        assert origin["page"].startswith("https://docs.aws.amazon.com/")
    else:  # a LocalStack snapshot recorded against AWS
        assert set(origin) >= {"repository", "commit", "path", "test", "recorded", "at"}
        assert origin["test"].startswith(origin["path"].removesuffix(".snapshot.json") + ".py::")
    assert "_source" not in recording(path.stem)
    assert recording(path.stem)  # the recorded JSON itself
