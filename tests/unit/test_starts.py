"""The targets that start something (``stepfunctions``, ``ecs``): their pure rules
(shared/domain/starts.py), how their calls' answers are read (shared/delivery/starts.py) with
AWS-shaped answers, and what a run keeps of what they started (shared/services/firing/settle.py).
Against moto: tests/integration/test_delivery_starts.py; through `make run`: tests/e2e/test_starts.py."""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import replace
from typing import Any

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from shared.delivery import AwsDelivery, Envelope, Outcome
from shared.domain import starts
from shared.domain.claims import Claimed
from shared.domain.codec import target_from_dict, target_to_dict
from shared.domain.firing import Timing, staged_for
from shared.domain.registration import new_task
from shared.domain.retry import Backoff, RetryPolicy
from shared.domain.schedules import At
from shared.domain.states import RunStatus
from shared.domain.tasks import EcsTarget, HttpTarget, Run, StepFunctionsTarget, TaskSpec
from shared.domain.times import to_ms
from shared.services.firing.call import Ran
from shared.services.firing.claim import Claim
from shared.services.firing.settle import Ended, Retrying, Succeeded, settle

pytestmark = pytest.mark.unit

MACHINE = "arn:aws:states:eu-west-1:123456789012:stateMachine:orders"
CLUSTER = "arn:aws:ecs:eu-west-1:123456789012:cluster/jobs"
DEFINITION = "arn:aws:ecs:eu-west-1:123456789012:task-definition/report:3"
RUN_ID = "01JD90ZZZZZZZZZZZZZZZZZZZZ"
TASK_ID = "01JD8ZZZZZZZZZZZZZZZZZZZZZ"
OVERRIDES = json.dumps(
    {"containers": [{"name": "app", "command": ["report", "--daily"], "environment": {"B": "2", "A": "1"}}]}
)
CONTAINER = EcsTarget(CLUSTER, DEFINITION, ("subnet-0123456789abcdef0",), ("sg-01234567",), "DISABLED", OVERRIDES)
SCHEDULED = dt.datetime(2026, 11, 22, 10, 0, 0, 250_000, tzinfo=dt.UTC)


def envelope(attempt: int = 1) -> Envelope:
    return Envelope(TASK_ID, RUN_ID, SCHEDULED, SCHEDULED + dt.timedelta(milliseconds=40), attempt, {"n": 1})


# --- names and tokens -------------------------------------------------------------------


def test_an_execution_is_named_after_the_occurrence_and_the_target() -> None:
    first = StepFunctionsTarget(MACHINE)
    name = starts.execution_name(RUN_ID, first)
    assert name == starts.execution_name(RUN_ID, StepFunctionsTarget(MACHINE))  # every attempt and copy
    assert name.startswith(RUN_ID + "-")
    assert name != starts.execution_name(RUN_ID, StepFunctionsTarget(MACHINE, '{"other":1}'))  # a second target
    assert name != starts.execution_name("01JD91ZZZZZZZZZZZZZZZZZZZZ", first)  # another occurrence
    # StartExecution's rules for a name: 1 to 80 characters, none of these
    assert 1 <= len(name) <= 80
    assert not re.search(r"[\s<>{}\[\]?*\"#%\\^|~`$&,;:/\x00-\x1f\x7f-\x9f]", name)


@pytest.mark.parametrize(
    "machine",
    [MACHINE, MACHINE + ":7", MACHINE + ":live"],
    ids=["state machine", "version", "alias"],
)
def test_an_executions_arn_is_its_state_machines_whatever_version_or_alias_started_it(machine: str) -> None:
    assert starts.execution_arn(machine, "n-1") == "arn:aws:states:eu-west-1:123456789012:execution:orders:n-1"


def test_a_container_task_is_looked_for_by_one_started_by_and_asked_for_with_a_token_per_attempt() -> None:
    by = starts.started_by(RUN_ID, CONTAINER)
    assert re.fullmatch(r"[A-Za-z0-9_/-]{1,128}", by)  # RunTask's startedBy
    tokens = [starts.client_token(RUN_ID, CONTAINER, attempt) for attempt in (1, 2, 99)]
    assert len(set(tokens)) == 3
    for token in tokens:
        assert len(token) <= 64
        assert all(33 <= ord(c) <= 126 for c in token)
    other = replace(CONTAINER, subnets=("subnet-0123456789abcdef1",))
    assert starts.started_by(RUN_ID, other) != by


def test_run_task_overrides_add_the_occurrence_to_each_container_named() -> None:
    occurrence = starts.Occurrence(TASK_ID, RUN_ID, "2026-11-22T10:00:00.250Z")
    overrides = json.dumps({**json.loads(OVERRIDES), "cpu": "1024", "memory": "2048"})
    assert starts.run_task_overrides(overrides, occurrence) == {
        "containerOverrides": [
            {
                "name": "app",
                "command": ["report", "--daily"],
                "environment": [
                    {"name": "A", "value": "1"},
                    {"name": "B", "value": "2"},
                    {"name": starts.TASK_ID_VARIABLE, "value": TASK_ID},
                    {"name": starts.RUN_ID_VARIABLE, "value": RUN_ID},
                    {"name": starts.SCHEDULED_FOR_VARIABLE, "value": "2026-11-22T10:00:00.250Z"},
                ],
            }
        ],
        "cpu": "1024",
        "memory": "2048",
    }
    assert starts.run_task_overrides(None, occurrence) == {"containerOverrides": []}


def test_overrides_are_measured_as_runtask_takes_them_at_their_longest() -> None:
    occurrence = starts.Occurrence(TASK_ID, RUN_ID, "2026-11-22T10:00:00.250Z")
    sent = json.dumps(starts.run_task_overrides(OVERRIDES, occurrence))
    assert starts.overrides_chars(OVERRIDES) == len(sent)  # the real values are as long as the longest
    fits = json.dumps({"containers": [{"name": "app", "environment": {"V": "x" * 7_800}}]})
    assert starts.overrides_problem(fits) is None
    too_long = json.dumps({"containers": [{"name": "app", "environment": {"V": "x" * 8_100}}]})
    member, why = starts.overrides_problem(too_long) or ("", "")
    assert member == ""
    assert f"the limit is {starts.MAX_OVERRIDES_CHARS}" in why


@pytest.mark.parametrize(
    ("overrides", "member"),
    [
        ({"containers": [{"name": "app"}, {"name": "app"}]}, "containers[1].name"),
        ({"containers": [{"name": "app", "environment": {"OCCURRENCE_RUN_ID": "x"}}]}, "containers[0].environment"),
    ],
)
def test_overrides_that_break_a_rule_name_the_member(overrides: dict[str, Any], member: str) -> None:
    found = starts.overrides_problem(json.dumps(overrides))
    assert found is not None
    assert found[0] == member


def test_the_targets_are_stored_in_the_apis_form_and_read_back() -> None:
    for target in (StepFunctionsTarget(MACHINE, '{"a":1}'), StepFunctionsTarget(MACHINE), CONTAINER):
        assert target_from_dict(json.loads(json.dumps(target_to_dict(target)))) == replace(
            target, **({"overrides": json.dumps(json.loads(OVERRIDES), sort_keys=True, separators=(",", ":"))}
                       if isinstance(target, EcsTarget) else {})
        )  # fmt: skip
    assert target_to_dict(StepFunctionsTarget(MACHINE)) == {"stepfunctions": {"state_machine_arn": MACHINE}}


# --- the calls, with AWS-shaped answers ---------------------------------------------------


class Client:
    """Answers each operation from ``answers`` (a dict, or an exception to raise); remembers the calls."""

    def __init__(self, **answers: Any) -> None:
        self.answers = answers
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __getattr__(self, operation: str) -> Any:
        def call(**params: Any) -> Any:
            self.calls.append((operation, params))
            answer = self.answers[operation]
            answer = answer(params) if callable(answer) else answer
            if isinstance(answer, Exception):
                raise answer
            return answer

        return call


def error(code: str, status: int) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "no"}, "ResponseMetadata": {"HTTPStatusCode": status}}, "X")


def call(target: Any, client: Client, attempt: int = 1) -> Outcome:
    return AwsDelivery(lambda service: client).call(target, envelope(attempt))


def test_start_execution_sends_the_envelope_under_the_occurrences_name_and_answers_its_arn() -> None:
    arn = "arn:aws:states:eu-west-1:123456789012:execution:orders:x"
    client = Client(start_execution={"executionArn": arn, "ResponseMetadata": {"HTTPStatusCode": 200}})
    outcome = call(StepFunctionsTarget(MACHINE), client)
    assert (outcome.ok, outcome.started) == (True, arn)
    [(operation, params)] = client.calls
    assert operation == "start_execution"
    assert params["name"] == starts.execution_name(RUN_ID, StepFunctionsTarget(MACHINE))
    assert json.loads(params["input"]) == envelope().to_dict()
    given = StepFunctionsTarget(MACHINE, '{"report":"daily"}')
    call(given, client)
    assert client.calls[-1][1]["input"] == '{"report":"daily"}'


def test_an_execution_of_the_occurrences_name_already_there_is_a_success() -> None:
    target = StepFunctionsTarget(MACHINE)
    outcome = call(target, Client(start_execution=error("ExecutionAlreadyExists", 400)), attempt=2)
    assert outcome.ok
    assert outcome.started == starts.execution_arn(MACHINE, starts.execution_name(RUN_ID, target))


@pytest.mark.parametrize(
    ("code", "status", "retryable"),
    [
        ("ExecutionLimitExceeded", 400, True),
        ("ThrottlingException", 400, True),
        ("KmsThrottlingException", 400, True),
        ("InternalServerError", 500, True),
        ("StateMachineDoesNotExist", 400, False),
        ("StateMachineDeleting", 400, False),
        ("InvalidArn", 400, False),
        ("InvalidName", 400, False),
        ("InvalidExecutionInput", 400, False),
        ("ValidationException", 400, False),
        ("AccessDeniedException", 400, False),
        ("KmsAccessDeniedException", 400, False),
    ],
)
def test_start_execution_errors(code: str, status: int, retryable: bool) -> None:
    outcome = call(StepFunctionsTarget(MACHINE), Client(start_execution=error(code, status)))
    assert not outcome.ok
    assert outcome.retryable is retryable
    assert outcome.started is None
    assert outcome.error is not None
    assert "states StartExecution failed" in outcome.error
    assert code in outcome.error


def ran_task(params: dict[str, Any]) -> dict[str, Any]:
    return {"tasks": [{"taskArn": "arn:aws:ecs:eu-west-1:123456789012:task/jobs/abc"}], "failures": []}


def test_run_task_asks_for_one_fargate_task_in_the_network_given_and_answers_its_arn() -> None:
    client = Client(run_task=ran_task)
    outcome = call(CONTAINER, client)
    assert (outcome.ok, outcome.started) == (True, "arn:aws:ecs:eu-west-1:123456789012:task/jobs/abc")
    [(operation, params)] = client.calls  # a first attempt looks for nothing first
    assert operation == "run_task"
    assert params["cluster"] == CLUSTER
    assert params["taskDefinition"] == DEFINITION
    assert (params["launchType"], params["count"]) == ("FARGATE", 1)
    assert params["startedBy"] == starts.started_by(RUN_ID, CONTAINER)
    assert params["clientToken"] == starts.client_token(RUN_ID, CONTAINER, 1)
    assert params["networkConfiguration"] == {
        "awsvpcConfiguration": {
            "subnets": ["subnet-0123456789abcdef0"],
            "securityGroups": ["sg-01234567"],
            "assignPublicIp": "DISABLED",
        }
    }
    occurrence = starts.Occurrence(TASK_ID, RUN_ID, "2026-11-22T10:00:00.250Z")
    assert params["overrides"] == starts.run_task_overrides(OVERRIDES, occurrence)


def test_a_later_attempt_finds_the_task_an_earlier_one_started_and_starts_none() -> None:
    found = "arn:aws:ecs:eu-west-1:123456789012:task/jobs/earlier"
    client = Client(
        list_tasks=lambda p: {"taskArns": [found] if p["desiredStatus"] == "STOPPED" else []},
        run_task=ran_task,
    )
    outcome = call(CONTAINER, client, attempt=2)
    assert (outcome.ok, outcome.started) == (True, found)
    assert [op for op, _ in client.calls] == ["list_tasks", "list_tasks"]
    assert {p["startedBy"] for _, p in client.calls} == {starts.started_by(RUN_ID, CONTAINER)}
    nothing = Client(list_tasks={"taskArns": []}, run_task=ran_task)
    assert call(CONTAINER, nothing, attempt=2).ok
    assert [op for op, _ in nothing.calls] == ["list_tasks", "list_tasks", "run_task"]
    assert nothing.calls[-1][1]["clientToken"] == starts.client_token(RUN_ID, CONTAINER, 2)


@pytest.mark.parametrize(
    ("failures", "retryable"),
    [
        ([{"arn": CLUSTER, "reason": "Capacity is unavailable at this time. Please try again later."}], True),
        ([{"arn": CLUSTER, "reason": "RESOURCE:MEMORY"}], True),
        ([{"arn": CLUSTER, "reason": "AGENT"}], True),
        ([{"arn": CLUSTER, "reason": "MISSING"}], False),
        ([{"arn": CLUSTER, "reason": "ATTRIBUTE", "detail": "requires ecs.capability.x"}], False),
        ([{"arn": CLUSTER, "reason": "RESOURCE:CPU"}, {"arn": CLUSTER, "reason": "INACTIVE"}], False),
        ([], False),
    ],
)
def test_a_200_that_started_no_task_is_read_from_its_failures(failures: list[Any], retryable: bool) -> None:
    outcome = call(CONTAINER, Client(run_task={"tasks": [], "failures": failures}))
    assert not outcome.ok
    assert outcome.retryable is retryable
    assert outcome.error is not None
    assert outcome.error.startswith("ecs RunTask started no task")
    for failure in failures:
        assert failure["reason"][:20] in outcome.error


@pytest.mark.parametrize(
    ("code", "status", "retryable"),
    [
        ("ServerException", 500, True),
        ("ThrottlingException", 400, True),
        ("ClientException", 400, False),
        ("InvalidParameterException", 400, False),
        ("AccessDeniedException", 400, False),
        ("ClusterNotFoundException", 400, False),
        ("PlatformTaskDefinitionIncompatibilityException", 400, False),
        ("UnsupportedFeatureException", 400, False),
        ("BlockedException", 400, False),
        ("ConflictException", 400, False),
    ],
)
def test_run_task_errors(code: str, status: int, retryable: bool) -> None:
    outcome = call(CONTAINER, Client(run_task=error(code, status)))
    assert not outcome.ok
    assert outcome.retryable is retryable


def test_a_lost_answer_is_retried() -> None:
    lost = ReadTimeoutError(endpoint_url="https://ecs.eu-west-1.amazonaws.com")
    assert call(CONTAINER, Client(run_task=lost)).retryable
    assert call(StepFunctionsTarget(MACHINE), Client(start_execution=lost)).retryable


# --- what a run keeps of them -----------------------------------------------------------------

NOW = dt.datetime(2026, 11, 27, 9, 0, tzinfo=dt.UTC)
DUE = to_ms(NOW)
RETRY = RetryPolicy(max_attempts=3, backoff=Backoff.FIXED, interval_seconds=2)


def claim(attempt: int = 1, earlier: tuple[str, ...] = ()) -> Claim:
    spec = TaskSpec(At(NOW), (StepFunctionsTarget(MACHINE), HttpTarget("https://example.com/b")), multicast=True,
                    retry=RETRY)  # fmt: skip
    task = new_task(spec, tenant="acme", now=NOW, shard=0)
    staged = staged_for(task.id, DUE, one_shot=True)
    for _ in range(attempt - 1):
        staged = staged.next_attempt()
    if earlier:  # what the task's item holds of the run after its earlier attempt
        task = replace(task, run=Run(staged.run_id, task.id, NOW, RunStatus.RETRYING, attempt - 1, started=earlier))
    return Claim(staged, Claimed(task, 0, "log", True), DUE)


def test_a_run_keeps_what_every_attempt_started() -> None:
    execution = "arn:aws:states:eu-west-1:123456789012:execution:orders:a"
    first = settle(
        claim(), Ran(0b01, fired_ms=DUE, outcomes=(Outcome.success(started=execution), Outcome.retry("HTTP 503"))),
        DUE + 100, Timing(),
    )  # fmt: skip
    assert isinstance(first, Retrying)
    assert first.started == (execution,)
    last = settle(claim(2, first.started), Ran(0b11, fired_ms=DUE + 2_000, outcomes=(Outcome.success(),)),
                  DUE + 2_100, Timing())  # fmt: skip
    assert isinstance(last, Succeeded)
    assert last.run.started == (execution,)
    # a one-shot's success that started something is written with its run, not a batch's run log
    assert last.success is None
    failed = settle(claim(2, first.started), Ran(0b01, fired_ms=DUE + 2_000, outcomes=(Outcome.fail("HTTP 400"),)),
                    DUE + 2_100, Timing())  # fmt: skip
    assert isinstance(failed, Ended)
    assert failed.run.status is RunStatus.FAILED
    assert failed.run.started == (execution,)
