"""The EventBridge Scheduler API's groups and names on DynamoDB (shared/store/scheduler_api.py)
and in memory (tests/support/schedules.py) held to the same contract, the
``Schedules`` port's (shared/services/ports/): a name is taken once, a completed one goes only
while it points at its task, pages come in order, ``count`` at most, a token leading on until
there is none (DynamoDB may answer one with the last full page, moto does not: either is read
alike), a token that is not the store's is a ValueError."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from shared.domain.schedule_names import GroupRecord, NameRecord, NameTaken

Read = Callable[[str, str, int, str | None], tuple[list[Any], str | None]]

pytestmark = pytest.mark.integration


@pytest.fixture(params=["memory", "dynamo"])
def store(request: pytest.FixtureRequest) -> Any:
    if request.param == "memory":
        from tests.support.schedules import InMemorySchedules

        return InMemorySchedules()
    request.getfixturevalue("aws")
    from shared.settings.environment import from_env
    from shared.store.scheduler_api import DynamoSchedules
    from shared.store.table import bind_table

    bind_table(from_env().table_name)
    return DynamoSchedules()


def _all(read: Read, prefix: str, count: int) -> list[list[Any]]:
    """Every page of ``read`` under ``prefix``, from the first to the one without a token."""
    pages, token = [], None
    while True:
        page, token = read("acme", prefix, count, token)
        assert len(page) <= count
        pages.append(page)
        if token is None:
            return [p for p in pages if p]


def _name(group: str, name: str, task_id: str = "01KA0000000000000000000000") -> NameRecord:
    return NameRecord(group, name, task_id, 1, 2, {"State": "ENABLED", "Target": {"Arn": "a"}}, "token")


def test_a_name_is_taken_once_and_read_back_as_kept(store: Any) -> None:
    store.take_name("acme", _name("g", "n", ""))
    with pytest.raises(NameTaken):
        store.take_name("acme", _name("g", "n"))
    store.take_name("other", _name("g", "n"))  # another tenant's
    store.put_name("acme", _name("g", "n"))
    assert store.name("acme", "g", "n") == _name("g", "n")
    store.drop_name("acme", "g", "n")
    assert store.name("acme", "g", "n") is None
    assert store.name("other", "g", "n") is not None


def test_a_completed_name_goes_only_while_it_points_at_its_task(store: Any) -> None:
    store.take_name("acme", _name("g", "n", "01KA0000000000000000000001"))
    assert not store.drop_completed("acme", "g", "n", "01KA0000000000000000000002")  # made again since
    assert store.name("acme", "g", "n") is not None
    assert store.drop_completed("acme", "g", "n", "01KA0000000000000000000001")
    assert store.name("acme", "g", "n") is None


def test_groups_are_created_once_kept_and_paged_in_order(store: Any) -> None:
    created = store.create_group("acme", "b", [{"Key": "k", "Value": "v"}], 5, "t")
    assert created == GroupRecord("b", 5, 5, [{"Key": "k", "Value": "v"}], "t")
    with pytest.raises(NameTaken):
        store.create_group("acme", "b", [], 6)
    for group in ("a", "c", "ba"):
        store.create_group("acme", group, [], 7)
    store.put_group("acme", GroupRecord("a", 7, 9, [{"Key": "x", "Value": "y"}]))
    assert store.group("acme", "a") == GroupRecord("a", 7, 9, [{"Key": "x", "Value": "y"}])
    assert [[g.name for g in page] for page in _all(store.groups, "", 2)] == [["a", "b"], ["ba", "c"]]
    assert [g.name for g in store.groups("acme", "b", 10, None)[0]] == ["b", "ba"]
    store.delete_group("acme", "b")
    assert store.group("acme", "b") is None


def test_names_are_paged_in_order_under_a_prefix_and_a_foreign_token_is_a_value_error(store: Any) -> None:
    for group, name in (("g", "b"), ("g", "a"), ("h", "a"), ("gg", "a")):
        store.take_name("acme", _name(group, name))
    assert [[(r.group, r.name) for r in page] for page in _all(store.names, "g/", 1)] == [[("g", "a")], [("g", "b")]]
    assert [(r.group, r.name) for r in store.names("acme", "", 10, None)[0]] == [
        ("g", "a"),
        ("g", "b"),
        ("gg", "a"),
        ("h", "a"),
    ]
    with pytest.raises(ValueError):  # noqa: PT011 - whatever the decoding says: the service answers one message
        store.names("acme", "", 10, "not a token!")
