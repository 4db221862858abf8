"""The canary (shared/domain/canary.py): its custom resource registers the task on deploy and
cancels it when the stack goes, answering CloudFormation at the request's URL (here a real
loopback server standing in for S3's presigned URL) in every case, once; and its target times each
fire. The requests are CloudFormation's as AWS documents them (tests/data/aws/cloudformation/),
pointed at the loopback server and at a function of the test's."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from shared.adapters import custom_resource
from shared.domain import canary
from shared.domain.errors import StorageUnavailable
from shared.settings.environment import env_name
from tests.support.cloudformation import check_response, documented_request
from tests.support.events import FakeLambdaContext

pytestmark = pytest.mark.integration

FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:Sundial-CanaryFunction"
OTHER_ARN = "arn:aws:lambda:us-east-1:123456789012:function:Sundial-CanaryFunction-2"
STACK_ID = "arn:aws:cloudformation:us-east-1:123456789012:stack/Sundial/5b918d10-cd98-11ea-90d5-0a9cd3354c9c"
KEY = canary.resource_key(STACK_ID, "CanaryTaskAB3265C5")


def _request(
    kind: str, receiver: Any, physical: str | None = None, function_arn: str = FUNCTION_ARN, **members: Any
) -> dict[str, Any]:
    properties = {"ServiceToken": FUNCTION_ARN, "FunctionArn": function_arn, "ServiceTimeout": "300"}
    event = documented_request(
        kind,
        ResponseURL=receiver.url + "/cloudformation",
        StackId=STACK_ID,
        RequestId=f"request-{kind}-{len(receiver.calls)}",
        PhysicalResourceId=physical,
        ResourceProperties=properties,
        **members,
    )
    if kind == "Update":
        event["OldResourceProperties"] = {**properties, "FunctionArn": members.get("old_arn", function_arn)}
    return event


def _answers(receiver: Any) -> list[dict[str, Any]]:
    """Every answer the loopback server took, each held to the documented shape."""
    answers = []
    for call in receiver.calls_to("/cloudformation"):
        assert call.method == "PUT"
        assert call.headers.get("Content-Type", "") == ""
        check_response(call.body, call.raw)
        answers.append(call.body)
    return answers


@pytest.fixture
def handler(pipeline: Any) -> Any:
    from functions.canary import handler as module

    module.tasks.cache_clear()
    module.resources.cache_clear()
    yield module.handler
    module.tasks.cache_clear()
    module.resources.cache_clear()


def _live(task_id: str) -> bool:
    from functions.canary.handler import tasks

    return tasks().get(canary.TENANT, task_id).status.value == "scheduled"


def test_the_custom_resource_registers_the_canary_and_cancels_it_with_the_stack(
    handler: Any, api: Any, receiver: Any
) -> None:
    from functions.canary.handler import tasks

    handler(_request("Create", receiver), FakeLambdaContext())
    [created] = _answers(receiver)
    assert (created["Status"], created["RequestId"]) == ("SUCCESS", "request-Create-0")
    assert created["PhysicalResourceId"] == KEY  # the resource's name: its stack's and logical ids
    task_id = created["Data"]["TaskId"]
    task = tasks().get(canary.TENANT, task_id)
    assert task.status.value == "scheduled"
    assert task.schedule == canary.SCHEDULE
    assert [getattr(target, "function_arn", None) for target in task.targets] == [FUNCTION_ARN]
    # no tenant's key reaches it
    assert api("GET", f"/v1/tasks/{task_id}").status == 404

    handler(_request("Delete", receiver, physical=KEY), FakeLambdaContext())
    deleted = _answers(receiver)[-1]
    assert (deleted["Status"], deleted["PhysicalResourceId"]) == ("SUCCESS", KEY)
    assert tasks().get(canary.TENANT, task_id).status.value == "cancelled"


def test_a_create_made_again_reuses_the_canary_and_an_update_and_its_rollback_keep_it(
    handler: Any, receiver: Any
) -> None:
    """A retried invocation, or a create CloudFormation sends again, names the same resource: one
    canary. An update that keeps the function (a ServiceTimeout changed) and its rollback keep the
    canary and the physical id (no replacement, so no delete behind them)."""
    handler(_request("Create", receiver), FakeLambdaContext())
    handler(_request("Create", receiver), FakeLambdaContext())
    first, again = _answers(receiver)
    assert first["Data"]["TaskId"] == again["Data"]["TaskId"]
    task_id = first["Data"]["TaskId"]

    handler(_request("Update", receiver, physical=KEY), FakeLambdaContext())
    handler(_request("Update", receiver, physical=KEY), FakeLambdaContext())  # the rollback's
    for answer in _answers(receiver)[2:]:
        assert (answer["Status"], answer["PhysicalResourceId"], answer["Data"]["TaskId"]) == ("SUCCESS", KEY, task_id)
    assert _live(task_id)


def test_an_update_to_another_function_replaces_the_canary_under_the_same_physical_id(
    handler: Any, receiver: Any
) -> None:
    handler(_request("Create", receiver), FakeLambdaContext())
    first = _answers(receiver)[-1]["Data"]["TaskId"]
    handler(_request("Update", receiver, physical=KEY, function_arn=OTHER_ARN), FakeLambdaContext())
    updated = _answers(receiver)[-1]
    assert (updated["Status"], updated["PhysicalResourceId"]) == ("SUCCESS", KEY)
    second = updated["Data"]["TaskId"]
    assert second != first
    assert not _live(first)
    assert _live(second)
    # the rollback: back to the first function, still one canary
    handler(_request("Update", receiver, physical=KEY), FakeLambdaContext())
    third = _answers(receiver)[-1]["Data"]["TaskId"]
    assert (_live(second), _live(third)) == (False, True)


def test_a_stack_made_before_the_resource_had_its_name_keeps_its_canary(handler: Any, receiver: Any) -> None:
    """Its physical id is the first canary task's id: an update adopts that task and keeps the id,
    the delete cancels it."""
    from functions.canary.handler import tasks

    old = tasks().register(canary.TENANT, canary.spec(FUNCTION_ARN), own_target=True)
    handler(_request("Update", receiver, physical=old.id), FakeLambdaContext())
    adopted = _answers(receiver)[-1]
    assert (adopted["Status"], adopted["PhysicalResourceId"], adopted["Data"]["TaskId"]) == ("SUCCESS", old.id, old.id)
    handler(_request("Delete", receiver, physical=old.id), FakeLambdaContext())
    assert _answers(receiver)[-1]["Status"] == "SUCCESS"
    assert not _live(old.id)


def test_a_create_after_the_delete_registers_a_new_canary(handler: Any, receiver: Any) -> None:
    handler(_request("Create", receiver), FakeLambdaContext())
    first = _answers(receiver)[-1]["Data"]["TaskId"]
    handler(_request("Delete", receiver, physical=KEY), FakeLambdaContext())
    handler(_request("Create", receiver), FakeLambdaContext())
    second = _answers(receiver)[-1]["Data"]["TaskId"]
    assert second != first
    assert _live(second)


def test_a_delete_never_fails_so_the_stack_can_always_go(handler: Any, receiver: Any) -> None:
    handler(_request("Delete", receiver, physical="01J0000000000000000000000Z"), FakeLambdaContext())
    assert _answers(receiver)[-1]["Status"] == "SUCCESS"
    # a create CloudFormation gave up on, whose physical id it made up
    handler(_request("Delete", receiver, physical="Sundial-CanaryTask-1ABCDEF"), FakeLambdaContext())
    assert _answers(receiver)[-1]["Status"] == "SUCCESS"


# --- every path answers ---------------------------------------------------------------------


def test_settings_that_do_not_load_are_a_failed_create(
    handler: Any, receiver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(env_name("bucket_shards"), "0")
    handler(_request("Create", receiver), FakeLambdaContext())
    [answer] = _answers(receiver)
    assert (answer["Status"], answer["PhysicalResourceId"]) == ("FAILED", KEY)
    assert env_name("bucket_shards") in answer["Reason"]


def test_a_request_that_is_not_the_documented_object_is_a_failed_create_naming_the_member(
    handler: Any, receiver: Any
) -> None:
    event = _request("Create", receiver)
    del event["ResourceProperties"]["FunctionArn"]
    handler(event, FakeLambdaContext())
    [answer] = _answers(receiver)
    assert answer["Status"] == "FAILED"
    assert "ResourceProperties.FunctionArn" in answer["Reason"]
    assert (answer["StackId"], answer["RequestId"], answer["LogicalResourceId"]) == (
        event["StackId"],
        event["RequestId"],
        event["LogicalResourceId"],
    )


def test_storage_that_fails_is_a_failed_create_and_a_delete_that_says_so(
    handler: Any, receiver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shared.store.canary import DynamoCanaryResources

    def unavailable(self: Any, key: str) -> str | None:
        raise StorageUnavailable("the canary's resource: throttled")

    monkeypatch.setattr(DynamoCanaryResources, "task_of", unavailable)
    handler(_request("Create", receiver), FakeLambdaContext())
    handler(_request("Delete", receiver, physical=KEY), FakeLambdaContext())
    created, deleted = _answers(receiver)
    assert created["Status"] == "FAILED"
    assert "StorageUnavailable: the canary's resource: throttled" in created["Reason"]
    assert deleted["Status"] == "SUCCESS"
    assert "throttled" in deleted["Reason"]


def test_any_exception_is_a_failed_update(handler: Any, receiver: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from functions.canary import handler as module

    def broken(*args: Any) -> Any:
        raise KeyError("the unexpected")

    monkeypatch.setattr(module, "handle_resource", broken)
    result = handler(_request("Update", receiver, physical=KEY), FakeLambdaContext())
    [answer] = _answers(receiver)
    assert (answer["Status"], answer["PhysicalResourceId"]) == ("FAILED", KEY)
    assert answer["Reason"] == "KeyError: 'the unexpected'"
    assert result["status"] == "FAILED"


def test_work_still_running_near_the_timeout_is_answered_failed_once(
    handler: Any, receiver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The timer answers before the function's own timeout (here a context with little time
    left); the work that ends afterwards sends nothing more."""
    from functions.canary import handler as module

    release = threading.Event()
    real = module.work

    def slow(request: Any) -> Any:
        release.wait(10)
        return real(request)

    monkeypatch.setattr(module, "work", slow)
    context = FakeLambdaContext(timeout_s=(custom_resource.ANSWER_MARGIN_MS + 100) / 1000)
    thread = threading.Thread(target=handler, args=(_request("Create", receiver), context))
    thread.start()
    assert receiver.wait_for("/cloudformation", 1, timeout=10)  # before the work ends
    release.set()
    thread.join(10)
    [answer] = _answers(receiver)
    assert (answer["Status"], answer["PhysicalResourceId"]) == ("FAILED", KEY)
    assert "about to time out" in answer["Reason"]


def test_a_long_failure_is_answered_within_4096_bytes(
    handler: Any, receiver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from functions.canary import handler as module

    def verbose(*args: Any) -> Any:
        raise RuntimeError("why " * 5_000)

    monkeypatch.setattr(module, "handle_resource", verbose)
    handler(_request("Create", receiver), FakeLambdaContext())
    [call] = receiver.calls_to("/cloudformation")
    assert len(call.raw) <= 4_096
    assert call.body["Reason"].startswith("RuntimeError: why why")


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
