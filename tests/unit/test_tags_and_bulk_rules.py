"""The pure rules of tags (shared/domain/tags.py) and bulk operations (shared/domain/bulk.py)."""

from __future__ import annotations

import pytest

from shared.domain.bulk import BulkAction, Selector, applies
from shared.domain.errors import ValidationFailed
from shared.domain.states import TaskFilter, TaskStatus
from shared.domain.tags import MAX_TAGS, check_tags, has_tag, key_problem, parse_filter, value_problem

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("key", ["team", "a", "k" * 128, "app.example/name", "a b", "x=y+z-w@v_u"])
def test_keys_of_the_rules_are_taken(key: str) -> None:
    assert key_problem(key) is None


@pytest.mark.parametrize(
    ("key", "says"),
    [
        ("", "1 to 128"),
        ("k" * 129, "1 to 128"),
        ("a:b", "separates a key from its value"),
        ("équipe", "ASCII"),
        ("a#b", "ASCII"),
        ("a\n", "ASCII"),
        ("a\tb", "ASCII"),
    ],
)
def test_keys_off_the_rules_say_why(key: str, says: str) -> None:
    problem = key_problem(key)
    assert problem is not None
    assert says in problem


@pytest.mark.parametrize("value", ["", "orders", "http://a.example:8080/x", "v" * 256])
def test_values_of_the_rules_are_taken(value: str) -> None:
    assert value_problem(value) is None


@pytest.mark.parametrize("value", ["v" * 257, "a#b", "ü", "line\n"])
def test_values_off_the_rules_are_refused(value: str) -> None:
    assert value_problem(value) is not None


def test_tags_are_kept_sorted_and_checked_whole() -> None:
    assert list(check_tags({"b": "2", "a": "1"})) == ["a", "b"]
    with pytest.raises(ValidationFailed) as too_many:
        check_tags({f"k{i}": "" for i in range(MAX_TAGS + 1)})
    assert too_many.value.details[0].field == "tags"
    with pytest.raises(ValidationFailed) as bad:
        check_tags({"ok": "1", "no:": "2"})
    assert bad.value.details[0].field == "tags.no:"


def test_a_filter_splits_at_the_first_colon_and_names_tag_when_it_cannot() -> None:
    assert parse_filter("team:orders") == ("team", "orders")
    assert parse_filter("url:http://x:1") == ("url", "http://x:1")
    assert parse_filter("team:") == ("team", "")
    for text in ("team", ":orders", "a#b:c"):
        with pytest.raises(ValidationFailed) as refused:
            parse_filter(text)
        assert refused.value.details[0].field == "tag"


def test_a_tag_is_held_by_its_exact_key_and_value() -> None:
    tags = {"team": "orders"}
    assert has_tag(tags, ("team", "orders"))
    assert not has_tag(tags, ("team", "Orders"))  # case-sensitive, as AWS's
    assert not has_tag(tags, ("Team", "orders"))
    assert not has_tag({}, ("team", ""))


@pytest.mark.parametrize(
    ("action", "moves"),
    [
        (BulkAction.PAUSE, {TaskStatus.SCHEDULED}),
        (BulkAction.RESUME, {TaskStatus.PAUSED}),
        (BulkAction.CANCEL, {TaskStatus.SCHEDULED, TaskStatus.PAUSED, TaskStatus.FAILED}),
    ],
)
def test_an_action_applies_to_the_statuses_the_state_machine_lets_it_move(action, moves) -> None:
    assert {status for status in TaskStatus if applies(action, status)} == moves


def test_a_selector_is_exactly_one_of_its_members() -> None:
    assert Selector(tag=("team", "orders")).tag == ("team", "orders")
    assert Selector(status=TaskFilter.PAUSED).status is TaskFilter.PAUSED
    with pytest.raises(ValueError, match="exactly one"):
        Selector()
    with pytest.raises(ValueError, match="exactly one"):
        Selector(name_prefix="a", status=TaskFilter.PAUSED)
