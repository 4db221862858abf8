"""The EventBridge Scheduler API's operations (shared/services/scheduler_api/operations.py) over
the in-memory task repository and schedules (tests/support/fakes.py): every operation of the
service's model has its typed request and use case in the table; a CreateSchedule walks group ->
task spec (refused before anything is written) -> name taken -> task registered -> task recorded
on the name; a retry with its ClientToken answers as the first; a name a crashed creation left is
taken again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.api.scheduler_protocol import service_model
from shared.domain.errors import SchedulerApiError
from shared.domain.schedule_names import NameRecord
from shared.domain.states import TaskStatus
from shared.domain.times import to_ms
from shared.services.scheduler_api import OPERATIONS, Place, SchedulerService
from shared.services.tasks import TaskService
from tests.support.fakes import InMemoryTaskRepository
from tests.support.schedules import InMemorySchedules

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
ARN = "arn:aws:scheduler:us-east-1:123456789012:schedule/default/nightly"
TARGET = {"Arn": "arn:aws:sqs:us-east-1:123456789012:orders", "RoleArn": "arn:aws:iam::123456789012:role/r"}


def _service() -> SchedulerService:
    tasks = TaskService(InMemoryTaskRepository(), bucket_shards=4, retention=timedelta(days=30), clock=lambda: NOW)
    return SchedulerService(tasks, InMemorySchedules(), Place("us-east-1", "123456789012"), lambda: NOW)


def _schedule(**members: Any) -> dict[str, Any]:
    return {
        "Name": "nightly",
        "ScheduleExpression": "cron(0 3 * * ? *)",
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "Target": TARGET,
        **members,
    }


def test_every_operation_of_the_model_has_its_request_and_use_case() -> None:
    assert set(OPERATIONS) == set(service_model().operation_names)


def test_a_create_schedule_makes_the_task_and_names_it() -> None:
    service = _service()
    assert service.call("acme", "CreateSchedule", _schedule(Description="d")) == {"ScheduleArn": ARN}
    record = service.store.name("acme", "default", "nightly")
    assert record is not None
    task = service.tasks.get("acme", record.task_id)
    assert task.name == "eventbridge:default/nightly"
    assert task.eventbridge is not None
    assert task.eventbridge.arn == ARN
    got = service.call("acme", "GetSchedule", {"Name": "nightly"})
    assert (got["Arn"], got["Description"], got["State"], got["ScheduleExpressionTimezone"]) == (
        ARN,
        "d",
        "ENABLED",
        "UTC",
    )
    assert got["Target"] == {**TARGET, "RetryPolicy": {"MaximumEventAgeInSeconds": 86_400, "MaximumRetryAttempts": 185}}
    listed = service.call("acme", "ListSchedules", {})["Schedules"]
    assert [(s["Name"], s["GroupName"], s["Target"]) for s in listed] == [
        ("nightly", "default", {"Arn": TARGET["Arn"]})
    ]


def test_a_refused_schedule_writes_nothing() -> None:
    service = _service()
    with pytest.raises(SchedulerApiError) as refused:
        service.call("acme", "CreateSchedule", _schedule(ScheduleExpression="cron(0 3 * * * *)"))
    assert refused.value.code == "ValidationException"
    assert refused.value.message.startswith("Invalid Schedule Expression cron(0 3 * * * *). ")
    assert service.store.name("acme", "default", "nightly") is None
    with pytest.raises(SchedulerApiError) as missing:
        service.call("acme", "CreateSchedule", _schedule(GroupName="nowhere"))
    assert (missing.value.code, missing.value.message) == (
        "ResourceNotFoundException",
        "Schedule group nowhere does not exist.",
    )


def test_a_retry_with_its_client_token_answers_as_the_first_and_another_request_conflicts() -> None:
    service = _service()
    first = service.call("acme", "CreateSchedule", _schedule(ClientToken="t1"))
    assert service.call("acme", "CreateSchedule", _schedule(ClientToken="t1")) == first
    with pytest.raises(SchedulerApiError) as changed:
        service.call("acme", "CreateSchedule", _schedule(ClientToken="t1", Description="other"))
    assert (changed.value.code, changed.value.message) == (
        "ConflictException",
        "The ClientToken was used with a different request.",
    )
    with pytest.raises(SchedulerApiError) as taken:
        service.call("acme", "CreateSchedule", _schedule())
    assert (taken.value.code, taken.value.message) == ("ConflictException", "Schedule nightly already exists.")


def test_a_name_a_crashed_creation_left_is_taken_again_but_not_one_being_created() -> None:
    service = _service()
    left = NameRecord("default", "nightly", "", to_ms(NOW) - 61_000, to_ms(NOW) - 61_000, {}, None)
    service.store.take_name("acme", left)
    assert service.call("acme", "CreateSchedule", _schedule()) == {"ScheduleArn": ARN}
    service.store.take_name("acme", NameRecord("default", "other", "", to_ms(NOW) - 1_000, 0, {}, None))
    with pytest.raises(SchedulerApiError) as taken:
        service.call("acme", "CreateSchedule", _schedule(Name="other"))
    assert taken.value.code == "ConflictException"


def test_state_pauses_and_resumes_the_task_and_delete_cancels_it() -> None:
    service = _service()
    service.call("acme", "CreateSchedule", _schedule(State="DISABLED"))
    record = service.store.name("acme", "default", "nightly")
    assert record is not None
    assert service.tasks.get("acme", record.task_id).status is TaskStatus.PAUSED
    service.call("acme", "UpdateSchedule", _schedule(State="ENABLED"))
    assert service.tasks.get("acme", record.task_id).status is TaskStatus.SCHEDULED
    assert service.call("acme", "DeleteSchedule", {"Name": "nightly"}) == {}
    assert service.tasks.get("acme", record.task_id).status is TaskStatus.CANCELLED
    with pytest.raises(SchedulerApiError) as gone:
        service.call("acme", "GetSchedule", {"Name": "nightly"})
    assert (gone.value.code, gone.value.message) == ("ResourceNotFoundException", "Schedule nightly does not exist.")


def test_groups_tags_and_a_group_s_deletion_with_its_schedules() -> None:
    service = _service()
    group_arn = service.call("acme", "CreateScheduleGroup", {"Name": "g", "Tags": [{"Key": "k", "Value": "v"}]})
    arn = group_arn["ScheduleGroupArn"]
    assert arn == "arn:aws:scheduler:us-east-1:123456789012:schedule-group/g"
    service.call("acme", "TagResource", {"ResourceArn": arn, "Tags": [{"Key": "k2", "Value": "v2"}]})
    service.call("acme", "UntagResource", {"ResourceArn": arn, "TagKeys": ["k"]})
    assert service.call("acme", "ListTagsForResource", {"ResourceArn": arn}) == {"Tags": [{"Key": "k2", "Value": "v2"}]}
    names = [g["Name"] for g in service.call("acme", "ListScheduleGroups", {})["ScheduleGroups"]]
    assert names == ["default", "g"]
    service.call("acme", "CreateSchedule", _schedule(GroupName="g"))
    service.call("acme", "DeleteScheduleGroup", {"Name": "g"})
    assert service.store.name("acme", "g", "nightly") is None
    with pytest.raises(SchedulerApiError) as refused:
        service.call("acme", "ListSchedules", {"NextToken": "not a token!"})
    assert (refused.value.code, refused.value.message) == ("ValidationException", "The NextToken is not valid.")
