"""The lane travels with a staged occurrence: in its message (absent: normal, as messages staged
before priorities were), to its next attempt, and to the queue a stager picks."""

from __future__ import annotations

from typing import Any

import pytest

from shared.adapters.queues import SqsStager
from shared.domain.firing import staged_for
from shared.domain.ids import new_task_id
from shared.domain.tasks import Priority
from shared.messages import StagedMessage, staged_message

pytestmark = pytest.mark.unit

TASK = new_task_id(1_000, 0)


def test_a_high_occurrence_says_so_in_its_message_and_a_normal_one_says_nothing():
    high = staged_for(TASK, 1_000, one_shot=True, priority=Priority.HIGH)
    normal = staged_for(TASK, 1_000, one_shot=True)
    assert staged_message(high)["p"] == "high"
    assert "p" not in staged_message(normal)
    assert StagedMessage.model_validate(staged_message(high)).staged() == high
    assert StagedMessage.model_validate(staged_message(normal)).staged() == normal


def test_a_message_without_a_lane_or_with_an_unknown_one_is_normal():
    assert StagedMessage.model_validate({"t": "01TASK", "d": 1, "r": "01RUN"}).staged().priority is Priority.NORMAL
    urgent = {"t": "01TASK", "d": 1, "r": "01RUN", "p": "urgent"}
    assert StagedMessage.model_validate(urgent).staged().priority is Priority.NORMAL


def test_the_next_attempt_keeps_the_lane():
    high = staged_for(TASK, 1_000, one_shot=False, priority=Priority.HIGH)
    retry = high.next_attempt()
    assert (retry.attempt, retry.priority, retry.run_id) == (2, Priority.HIGH, high.run_id)


class Sent:
    def __init__(self) -> None:
        self.queues: list[str] = []

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.queues += [QueueUrl] * len(Entries)
        return {}


def test_a_stager_sends_high_occurrences_to_the_high_queue_and_the_others_across_the_delay_queues():
    sent = Sent()
    stager = SqsStager(["q0", "q1"], "dlq", 1000, client=lambda: sent, high_priority_queue_url="qhigh")
    high = [staged_for(new_task_id(10_000, i % 2), 10_000, True, Priority.HIGH) for i in range(20)]
    normal = [staged_for(new_task_id(10_000, i % 2), 10_000, True) for i in range(20)]
    stager.stage([*high, *normal], 0)
    stager.send([(h.next_attempt(), 5) for h in high])
    assert sent.queues.count("qhigh") == 40
    assert {q for q in sent.queues if q != "qhigh"} == {"q0", "q1"}
    assert len(sent.queues) == 60


def test_without_a_high_queue_high_occurrences_share_the_delay_queues():
    sent = Sent()
    stager = SqsStager(["q0"], "dlq", 1000, client=lambda: sent)
    stager.stage([staged_for(TASK, 10_000, True, Priority.HIGH)], 0)
    assert sent.queues == ["q0"]


def test_a_stager_sends_the_high_occurrences_before_the_others():
    """A scan staging a flood computed every delay when it began: the high lane's go out first."""
    sent = Sent()
    stager = SqsStager(["q0", "q1"], "dlq", 1000, client=lambda: sent, high_priority_queue_url="qhigh")
    normal = [staged_for(new_task_id(10_000, i % 2), 10_000, True) for i in range(30)]
    high = [staged_for(new_task_id(10_000, 0), 10_000, True, Priority.HIGH) for _ in range(3)]
    stager.stage([*normal, *high], 0)
    assert sent.queues[:3] == ["qhigh"] * 3
