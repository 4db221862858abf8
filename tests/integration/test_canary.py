"""The canary (shared/domain/canary.py): its custom resource registers the task on deploy and
cancels it when the stack goes, answering CloudFormation at the request's URL (here a real
loopback server standing in for S3's presigned URL), and its target times each fire."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared.domain import canary
from tests.support.events import FakeLambdaContext

pytestmark = pytest.mark.integration

FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:Sundial-CanaryFunction"


def _request(kind: str, receiver: Any, physical: str | None = None) -> dict[str, Any]:
    event = {
        "RequestType": kind,
        "ResponseURL": receiver.url + "/cloudformation",
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/Sundial/1",
        "RequestId": f"request-{kind}",
        "LogicalResourceId": "CanaryTask",
        "ResourceType": "Custom::SundialCanary",
        "ResourceProperties": {"ServiceToken": FUNCTION_ARN, "FunctionArn": FUNCTION_ARN},
    }
    if physical is not None:
        event["PhysicalResourceId"] = physical
    return event


@pytest.fixture
def handler(pipeline: Any) -> Any:
    from functions.canary import handler as module

    module.tasks.cache_clear()
    yield module.handler
    module.tasks.cache_clear()


def test_the_custom_resource_registers_the_canary_and_cancels_it_with_the_stack(
    handler: Any, api: Any, receiver: Any
) -> None:
    from functions.canary.handler import tasks

    handler(_request("Create", receiver), FakeLambdaContext())
    (created,) = receiver.calls_to("/cloudformation")
    assert created.method == "PUT"
    assert created.headers.get("Content-Type", "") == ""
    assert created.body["Status"] == "SUCCESS"
    assert created.body["RequestId"] == "request-Create"
    task_id = created.body["PhysicalResourceId"]
    task = tasks().get(canary.TENANT, task_id)
    assert task.status.value == "scheduled"
    assert task.schedule == canary.SCHEDULE
    assert [getattr(target, "function_arn", None) for target in task.targets] == [FUNCTION_ARN]
    # no tenant's key reaches it
    assert api("GET", f"/v1/tasks/{task_id}").status == 404

    handler(_request("Delete", receiver, physical=task_id), FakeLambdaContext())
    deleted = receiver.calls_to("/cloudformation")[-1]
    assert (deleted.body["Status"], deleted.body["PhysicalResourceId"]) == ("SUCCESS", task_id)
    assert tasks().get(canary.TENANT, task_id).status.value == "cancelled"


def test_an_update_registers_a_new_canary_and_cloudformation_deletes_the_old_one(handler: Any, receiver: Any) -> None:
    handler(_request("Create", receiver), FakeLambdaContext())
    first = receiver.calls_to("/cloudformation")[-1].body["PhysicalResourceId"]
    handler(_request("Update", receiver, physical=first), FakeLambdaContext())
    second = receiver.calls_to("/cloudformation")[-1].body["PhysicalResourceId"]
    assert second != first


def test_a_delete_never_fails_so_the_stack_can_always_go(handler: Any, receiver: Any) -> None:
    handler(_request("Delete", receiver, physical="01J0000000000000000000000Z"), FakeLambdaContext())
    assert receiver.calls_to("/cloudformation")[-1].body["Status"] == "SUCCESS"


def test_the_canarys_target_puts_how_late_its_fire_came(handler: Any, capsys: pytest.CaptureFixture[str]) -> None:
    fire = {
        "task_id": "T",
        "run_id": "R",
        "scheduled_for": "2026-11-26T10:00:00.000Z",
        "fired_at": "2026-11-26T10:00:00.042Z",
        "attempt": 1,
        "payload": None,
    }
    assert handler(fire, FakeLambdaContext()) == {"lateness_ms": 42}
    [line] = [json.loads(line) for line in capsys.readouterr().out.splitlines() if "CanaryLatenessMs" in line]
    assert line["CanaryLatenessMs"] == [42.0]
