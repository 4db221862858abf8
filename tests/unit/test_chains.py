"""The pure rules of chains (shared/domain/chains.py): which list an ending starts, the hop's
derived item id, the parent's answer as the child receives it, and what registration refuses."""

from __future__ import annotations

import json

import pytest

from shared.domain.chains import (
    MAX_RESPONSE_BYTES,
    Branch,
    ChainLink,
    ParentRun,
    branch_of,
    chained_item_id,
    check_children,
    response_of,
)
from shared.domain.errors import ValidationFailed
from shared.domain.ids import new_run_id, parse_task_id
from shared.domain.states import RunStatus

pytestmark = pytest.mark.unit

RUN = new_run_id(1_800_000_000_123)
CHILD = "01J0000000000000000000000A"


@pytest.mark.parametrize(
    ("status", "branch"),
    [
        (RunStatus.SUCCEEDED, Branch.SUCCESS),
        (RunStatus.FAILED, Branch.FAILURE),
        (RunStatus.DEAD_LETTERED, Branch.FAILURE),
        (RunStatus.SKIPPED, None),
        (RunStatus.RETRYING, None),
    ],
)
def test_a_success_starts_on_success_a_final_failure_on_failure_and_nothing_else_starts_any(status, branch):
    assert branch_of(status) is branch


def test_a_hops_item_id_is_the_same_for_every_start_and_differs_by_parent_child_and_branch():
    first = chained_item_id(RUN, CHILD, Branch.SUCCESS, 16)
    assert chained_item_id(RUN, CHILD, Branch.SUCCESS, 16) == first
    others = {
        chained_item_id(new_run_id(1_800_000_000_123), CHILD, Branch.SUCCESS, 16),
        chained_item_id(RUN, "01J0000000000000000000000B", Branch.SUCCESS, 16),
        chained_item_id(RUN, CHILD, Branch.FAILURE, 16),
    }
    assert first not in others
    assert len(others) == 3
    home = parse_task_id(first)
    assert home.due_ms == 1_800_000_000_123  # the parent run's time: its bucket
    assert 0 <= home.shard < 16


def test_hops_spread_over_every_shard():
    shards = {
        parse_task_id(chained_item_id(new_run_id(1_800_000_000_000 + i), CHILD, Branch.SUCCESS, 8)).shard
        for i in range(400)
    }
    assert shards == set(range(8))


def test_the_parents_answer_is_json_when_it_parses_else_text_and_cut_at_4_kib():
    assert response_of(b"") is None
    assert response_of(b'{"file": "a.csv", "rows": 7}') == {"file": "a.csv", "rows": 7}
    assert response_of(b"[1, 2]") == [1, 2]
    assert response_of(b"plain words") == "plain words"
    assert response_of("caf\u00e9".encode()) == "caf\u00e9"
    assert response_of(b"\xff\xfe") == "\ufffd\ufffd"  # not UTF-8: replaced, never an error
    long = json.dumps({"blob": "x" * 5000}).encode()
    cut = response_of(long)
    assert isinstance(cut, str)  # cut JSON does not parse: the text, as received
    assert cut.encode() == long[:MAX_RESPONSE_BYTES]


def test_a_link_is_kept_and_read_back_whole_and_the_body_leaves_out_the_hop():
    link = ChainLink(ParentRun("01J0000000000000000000000P", RUN, RunStatus.DEAD_LETTERED), 3, {"a": 1}, "HTTP 500")
    assert ChainLink.from_dict(json.loads(json.dumps(link.to_dict()))) == link
    assert link.body() == {
        "task_id": "01J0000000000000000000000P",
        "run_id": RUN,
        "status": "dead_lettered",
        "response": {"a": 1},
        "error": "HTTP 500",
    }
    assert "error" not in ChainLink(ParentRun("p", RUN, RunStatus.SUCCEEDED), 1).body()


def test_registration_refuses_a_sixth_id_an_id_twice_and_what_is_not_an_id():
    assert check_children("on_success", [CHILD.lower()]) == (CHILD,)
    with pytest.raises(ValidationFailed) as six:
        check_children("on_success", [CHILD] * 6)
    assert six.value.details[0].field == "on_success"
    with pytest.raises(ValidationFailed) as twice:
        check_children("on_failure", [CHILD, "01J0000000000000000000000B", CHILD.lower()])
    assert twice.value.details[0].field == "on_failure[2]"
    assert "on_failure[0]" in twice.value.details[0].message
    with pytest.raises(ValidationFailed) as bad:
        check_children("on_success", [CHILD, "01J000000000000000000000U!"])
    assert bad.value.details[0].field == "on_success[1]"
