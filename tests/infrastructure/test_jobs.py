"""The jobs state machine construct (infra/jobs.py) as CloudFormation: the definition's shape
(docs/jobs.md, section 2), its role, logging and tracing, and cdk-nag over it.

The construct is built in a throwaway stack around an imported function, so the only resources
are the construct's own. tests/integration/test_job_state_machine.py executes the definition.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import App, Duration, Stack, Validations
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Match, Template
from cdk_nag import AwsSolutionsChecks

from infra.jobs import FAIL, FAILED, LEVELS, POST, PRE, RETRYABLE_ERROR, SHARD, SHARDS, Jobs
from infra.settings import DeploymentSettings
from shared.domain.sharding import EXECUTION_HISTORY_EVENTS, MAX_LEVELS, MAX_SHARDS_PER_JOB, worst_history_events
from tests.infrastructure.conftest import scratch_outdir
from tests.support.stepfunctions import definition_from_json, definition_from_stack

pytestmark = pytest.mark.infrastructure

FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:sundial-jobs"
LAMBDA_SERVICE_ERRORS = [
    "Lambda.ClientExecutionTimeoutException",
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
    "Lambda.Unknown",
]
ACKNOWLEDGED = {
    ("Probe/Jobs/LoggingPolicy/Resource", "AwsSolutions-IAM5[Resource::*]"),
    ("Probe/Jobs/TracingPolicy/Resource", "AwsSolutions-IAM5[Resource::*]"),
}


def _build(**kwargs: Any) -> tuple[Stack, Jobs]:
    stack = Stack(App(outdir=scratch_outdir()), "Probe")
    function = lambda_.Function.from_function_arn(stack, "JobFunction", FUNCTION_ARN)
    return stack, Jobs(stack, "Jobs", settings=DeploymentSettings(), function=function, **kwargs)


@pytest.fixture(scope="module")
def built() -> tuple[Stack, Jobs]:
    return _build(shard_concurrency=7)


@pytest.fixture(scope="module")
def states(built: tuple[Stack, Jobs]) -> dict[str, Any]:
    """Every state of the definition by name, the Maps' inner states included."""
    found: dict[str, Any] = {}

    def collect(states: dict[str, Any]) -> None:
        for name, state in states.items():
            found[name] = state
            if "ItemProcessor" in state:
                collect(state["ItemProcessor"]["States"])

    definition = json.loads(definition_from_stack(built[0], FUNCTION_ARN))
    assert definition["StartAt"] == PRE
    collect(definition["States"])
    return found


def test_the_flow_is_pre_levels_one_at_a_time_shards_in_parallel_post(states: dict[str, Any]) -> None:
    assert states[PRE]["Next"] == LEVELS
    assert states[PRE]["OutputPath"] == "$.Payload"
    assert states[PRE]["Parameters"] == {
        "FunctionName": FUNCTION_ARN,
        "Payload": {"step": "pre", "job_id.$": "$.job_id", "retry_count.$": "$$.State.RetryCount"},
    }

    levels = states[LEVELS]
    assert (levels["Type"], levels["ItemsPath"], levels["MaxConcurrency"]) == ("Map", "$.levels", 1)
    assert levels["ItemProcessor"]["ProcessorConfig"] == {"Mode": "INLINE"}
    assert levels["ItemProcessor"]["StartAt"] == SHARDS
    assert levels["Next"] == POST

    shards = states[SHARDS]
    assert (shards["Type"], shards["ItemsPath"], shards["MaxConcurrency"]) == ("Map", "$.shards", 7)
    assert shards["ItemProcessor"]["ProcessorConfig"] == {"Mode": "INLINE"}
    assert shards["ItemSelector"]["shard.$"] == "$$.Map.Item.Value"
    assert states[SHARD]["Parameters"]["Payload"] == {
        "step": "shard",
        "job_id.$": "$.job_id",
        "level.$": "$.level",
        "shard.$": "$.shard",
        "shard_count.$": "$.shard_count",
        "retry_count.$": "$$.State.RetryCount",  # a failure says on which attempt
    }
    # No results accumulate in the execution: the Maps and the shard step drop theirs.
    assert levels["ResultPath"] is None
    assert shards["ResultPath"] is None
    assert states[SHARD]["ResultPath"] is None

    assert states[POST]["Parameters"]["Payload"] == {
        "step": "post",
        "job_id.$": "$$.Execution.Input.job_id",
        "retry_count.$": "$$.State.RetryCount",
    }
    assert states[states[POST]["Next"]]["Type"] == "Succeed"


def test_pre_levels_and_post_are_caught_into_the_fail_step_then_fail(states: dict[str, Any]) -> None:
    for name in (PRE, LEVELS, POST):
        assert states[name]["Catch"] == [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": FAILED}]
    assert states[FAILED]["Parameters"]["Payload"] == {
        "step": "fail",
        "job_id.$": "$$.Execution.Input.job_id",
        "error.$": "$.error.Error",
        "cause.$": "$.error.Cause",
    }
    assert states[FAILED]["Next"] == FAIL
    assert states[FAIL] == {"Type": "Fail", "ErrorPath": "$.error.Error", "CausePath": "$.error.Cause"}


def test_every_lambda_state_retries_processor_retryable_and_lambda_service_errors(states: dict[str, Any]) -> None:
    tasks = {name for name, state in states.items() if state["Type"] == "Task"}
    assert tasks == {PRE, SHARD, POST, FAILED}
    for name in tasks:
        assert states[name]["Resource"] == "arn:aws:states:::lambda:invoke"
        assert states[name]["Parameters"]["FunctionName"] == FUNCTION_ARN
        assert states[name]["Retry"] == [
            {
                "ErrorEquals": LAMBDA_SERVICE_ERRORS,
                "IntervalSeconds": 2,
                "MaxAttempts": 4,
                "BackoffRate": 2,
                "JitterStrategy": "FULL",
            },
            {"ErrorEquals": [RETRYABLE_ERROR], "IntervalSeconds": 1, "MaxAttempts": 2, "BackoffRate": 2},
        ]


def test_the_largest_job_the_bounds_allow_fits_an_executions_history_retried_to_the_end(
    states: dict[str, Any],
) -> None:
    """A Standard execution's history holds 25,000 events ("Step Functions service quotas"); every
    iteration of the inline Maps writes into it. Counted from the definition itself: each task
    state's attempts are one plus every retrier's MaxAttempts; a task state enters and exits, each
    attempt is scheduled, started and ends; a shard is a Map iteration around its task, a level an
    iteration around the shards Map (entered, started, ended, exited). The worst job has the most
    shards and the most levels."""
    attempts = {
        name: 1 + sum(retrier["MaxAttempts"] for retrier in state.get("Retry", []))
        for name, state in states.items()
        if state["Type"] == "Task"
    }

    def task(name: str) -> int:
        return 2 + 3 * attempts[name]

    shards, levels = MAX_SHARDS_PER_JOB, MAX_LEVELS
    events = (
        2  # execution started, ended
        + 4  # the levels Map
        + task(PRE)
        + max(task(POST), task(FAILED))
        + 2  # the final state
        + levels * (2 + 4)
        + shards * (2 + task(SHARD))
    )
    assert events <= EXECUTION_HISTORY_EVENTS == 25_000
    assert events == worst_history_events(shards, levels)  # the domain's arithmetic is the definition's


def test_the_log_group_is_a_vended_logs_group(built: tuple[Stack, Jobs]) -> None:
    """Under /aws/vendedlogs/: each vended-logs delivery adds to CloudWatch Logs' resource policy,
    which holds 5,120 characters ("Logging using CloudWatch Logs", Step Functions developer guide)."""
    [group] = Template.from_stack(built[0]).find_resources("AWS::Logs::LogGroup").values()
    prefix, stack_uuid = group["Properties"]["LogGroupName"]["Fn::Join"][1]
    assert prefix == "/aws/vendedlogs/states/Probe-jobs-"
    assert stack_uuid == {"Fn::Select": [2, {"Fn::Split": ["/", {"Ref": "AWS::StackId"}]}]}


def test_the_retry_rules_are_parameters() -> None:
    stack, _ = _build(retry_interval=Duration.seconds(5), retry_backoff_rate=3, retry_max_attempts=4)
    definition = json.loads(definition_from_stack(stack, FUNCTION_ARN))
    assert definition["States"][PRE]["Retry"][1] == {
        "ErrorEquals": [RETRYABLE_ERROR],
        "IntervalSeconds": 5,
        "MaxAttempts": 4,
        "BackoffRate": 3,
    }


def test_the_construct_hands_out_the_definition_the_template_has(built: tuple[Stack, Jobs]) -> None:
    stack, jobs = built
    assert definition_from_json(jobs.definition(), {}) == definition_from_stack(stack, FUNCTION_ARN)


@pytest.mark.parametrize("concurrency", [0, 41])
def test_shard_concurrency_is_held_to_an_inline_maps_range(concurrency: int) -> None:
    with pytest.raises(ValueError, match="shard_concurrency"):
        _build(shard_concurrency=concurrency)


def test_a_standard_state_machine_with_all_events_logged_and_tracing(built: tuple[Stack, Jobs]) -> None:
    template = Template.from_stack(built[0])
    template.resource_count_is("AWS::StepFunctions::StateMachine", 1)
    template.has_resource_properties(
        "AWS::StepFunctions::StateMachine",
        {
            "StateMachineType": "STANDARD",
            "TracingConfiguration": {"Enabled": True},
            "LoggingConfiguration": {
                "Level": "ALL",
                "IncludeExecutionData": False,
                "Destinations": [{"CloudWatchLogsLogGroup": {"LogGroupArn": Match.any_value()}}],
            },
        },
    )
    template.has_resource_properties(
        "AWS::Logs::LogGroup", {"RetentionInDays": DeploymentSettings().log_retention_days}
    )


def test_the_role_invokes_the_job_function_and_nothing_else(built: tuple[Stack, Jobs]) -> None:
    stack, jobs = built
    invoking = stack.resolve(jobs.policy.node.default_child.logical_id)  # type: ignore[union-attr]
    policies = Template.from_stack(stack).find_resources("AWS::IAM::Policy")
    statements = {lid: resource["Properties"]["PolicyDocument"]["Statement"] for lid, resource in policies.items()}
    assert len(statements) == 3  # invoking, log delivery, X-Ray: no default policy from grants
    assert statements.pop(invoking) == [
        {"Action": "lambda:InvokeFunction", "Effect": "Allow", "Resource": FUNCTION_ARN}
    ]
    actions = [a for policy in statements.values() for statement in policy for a in statement["Action"]]
    assert all(a.startswith(("logs:", "xray:")) for a in actions)


def test_cdk_nag_finds_nothing_unacknowledged(built: tuple[Stack, Jobs]) -> None:
    result = AwsSolutionsChecks().validate_scope(built[0])
    assert [violation.rule_name for violation in result.violations] == []
    assert result.success


def test_every_acknowledgment_is_still_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Validations, "acknowledge", lambda self, *rules: None)
    stack, _ = _build()
    result = AwsSolutionsChecks().validate_scope(stack)
    found = {
        (resource.construct_path, violation.rule_name)
        for violation in result.violations
        for resource in violation.violating_resources
    }
    assert found == ACKNOWLEDGED


def test_the_local_runtimes_definition_is_the_deployed_stacks(synthesized: Any) -> None:
    """The local runtime (and the integration tests, tests/support/stepfunctions.py) run the
    definition :func:`local.stepfunctions.jobs_definition` synthesizes from the construct alone:
    it must be the one `cdk deploy` creates with the whole app."""
    from local.stepfunctions import jobs_definition

    assert json.loads(jobs_definition()) == json.loads(definition_from_stack(synthesized.stack))
