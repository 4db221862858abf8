"""cdk-nag (AwsSolutions) leaves nothing unacknowledged, and every acknowledgment is pinned.

Adding an acknowledgment means adding it to ACKNOWLEDGED below, so a new suppression is always
a reviewed change to this file as well.
"""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import App, CfnResource, Stack, Validations
from aws_cdk import aws_sqs as sqs
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct

from infra import names
from infra.app import build_app
from shared.domain.iam_callers import IAM_REGISTER_PATHS
from tests.infrastructure.conftest import Built, Synthesized, scratch_outdir

pytestmark = pytest.mark.infrastructure

ROOT = f"{names.STACK_NAME}/{names.CONSTRUCT_ID}"
"""Where the construct's parts are in the repository's stack (infra/stack.py)."""
_TARGETS = "arn:<AWS::Partition>:{service}:<AWS::Region>:<AWS::AccountId>:{resource}"

ACKNOWLEDGED = {
    *(
        (f"{ROOT}/{function}/TracingPolicy/Resource", "AwsSolutions-IAM5[Resource::*]")
        for function in (
            "Api/Handler",
            "Auth/Authorizer",
            "Pipeline/Tick",
            "Pipeline/Scanner",
            "Pipeline/Trigger",
            "Pipeline/TriggerHigh",
            "Pipeline/Recover",
            "Jobs/Function",
        )
    ),
    (f"{ROOT}/Jobs/StateMachine/LoggingPolicy/Resource", "AwsSolutions-IAM5[Resource::*]"),
    (f"{ROOT}/Jobs/StateMachine/TracingPolicy/Resource", "AwsSolutions-IAM5[Resource::*]"),
    (  # cancelling a job: its execution, named at run time
        f"{ROOT}/Api/Handler/JobStopPolicy/Resource",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:"
        "<JobsStateMachineEA2D5079.Name>:*]",
    ),
    (
        f"{ROOT}/Jobs/Function/ProcessorsPolicy/Resource",
        f"AwsSolutions-IAM5[Resource::{_TARGETS.format(service='lambda', resource='function:*')}]",
    ),
    *(
        (f"{ROOT}/{policy}/Resource", "AwsSolutions-IAM5[Resource::<JobsBucket264FE5C6.Arn>/jobs/*]")
        for policy in (
            "Jobs/Function/Policy",
            "Api/Handler/Policy",
            "Pipeline/Trigger/Policy",
            "Pipeline/TriggerHigh/Policy",
            "Pipeline/Recover/Policy",
        )
    ),
    (f"{ROOT}/Jobs/Bucket/Resource", "AwsSolutions-S1"),
    (f"{ROOT}/Jobs/ExecutionEndsDeadLetters/Resource", "AwsSolutions-SQS3"),
    *(
        (
            f"{ROOT}/Pipeline/{trigger}/TargetsPolicy/Resource",
            f"AwsSolutions-IAM5[Resource::{_TARGETS.format(service=service, resource=resource)}]",
        )
        for trigger in ("Trigger", "TriggerHigh", "Recover")
        for service, resource in (
            ("lambda", "function:*"),
            ("sqs", "*"),
            ("sns", "*"),
            ("events", "event-bus/*"),
            ("states", "stateMachine:*"),
            ("ecs", "task-definition/*"),
        )
    ),
    *(  # ecs:ListTasks, held to the account's clusters by its condition (infra/targets.py)
        (f"{ROOT}/Pipeline/{trigger}/TargetsPolicy/Resource", "AwsSolutions-IAM5[Resource::*]")
        for trigger in ("Trigger", "TriggerHigh", "Recover")
    ),
    (f"{ROOT}/Api/RestApi/Default/v1/{{proxy+}}/ANY/Resource", "AwsSolutions-COG4"),
    *(
        (f"{ROOT}/Api/RestApi/Default/v1/{path}/ANY/Resource", rule)
        for path in names.API_PUBLIC_PATHS
        for rule in ("AwsSolutions-APIG4", "AwsSolutions-COG4")
    ),
    *(
        (f"{ROOT}/Api/RestApi/Default/{path}/ANY/Resource", rule)
        for path in (names.CONSOLE_PATH, f"{names.CONSOLE_PATH}/{{proxy+}}", f"{names.SCHEDULER_PATH}/{{proxy+}}")
        for rule in ("AwsSolutions-APIG4", "AwsSolutions-COG4")
    ),
    # grant_register's AWS_IAM routes (IAM is APIG4's authorization; COG4 wants Cognito)
    *((f"{ROOT}/Api/RestApi/Default{path}/POST/Resource", "AwsSolutions-COG4") for path in IAM_REGISTER_PATHS),
    (f"{ROOT}/Api/RestApi/Resource", "AwsSolutions-APIG2"),
    (f"{ROOT}/Api/RestApi/DeploymentStage.prod/Resource", "AwsSolutions-APIG3"),
    (f"{ROOT}/Api/RestApi/DeploymentStage.prod/Resource", "AwsSolutions-APIG6"),
    (
        f"{ROOT}/Api/RestApi/CloudWatchRole/Resource",
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
        "AmazonAPIGatewayPushToCloudWatchLogs]",
    ),
}


CANARY_ACKNOWLEDGED = {(f"{ROOT}/Canary/Function/TracingPolicy/Resource", "AwsSolutions-IAM5[Resource::*]")}
"""What the canary (``sundial:canary``, off by default) adds to ACKNOWLEDGED."""
SCHEDULER_URL_ACKNOWLEDGED = {
    (f"{ROOT}/SchedulerUrl/Function/TracingPolicy/Resource", "AwsSolutions-IAM5[Resource::*]")
}
"""What the scheduler's function URL (``sundial:schedulerFunctionUrl``, on by default) adds: its
function's tracing policy. The URL itself, auth type NONE with its public resource policy, raises no
AwsSolutions finding (the function verifies SigV4; docs/deploy.md, section 14). Part of the
defaults' acknowledgments: the URL is on unless turned off."""
ACKNOWLEDGED = ACKNOWLEDGED | SCHEDULER_URL_ACKNOWLEDGED
ECS_ROLES_ACKNOWLEDGED = {
    (
        f"{ROOT}/Pipeline/{trigger}/TargetsPolicy/Resource",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:iam::<AWS::AccountId>:role/jobs/etl-*]",
    )
    for trigger in ("Trigger", "TriggerHigh", "Recover")
}
"""What ``sundial:ecsTaskRoles`` naming roles by a wildcard adds (the ``everything`` fixture's)."""


def _acknowledgments(scope: IConstruct) -> list[tuple[Any, str, str]]:
    """(construct, rule id, reason) for every acknowledgment in the tree."""
    found = []
    for construct in scope.node.find_all():
        for entry in construct.node.metadata:
            if entry.type == Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                for rule, reason in entry.data.items():
                    found.append((construct, rule.split("::", 1)[-1], reason))
    return found


def test_synth_left_no_violation_in_the_validation_report(synthesized: Synthesized) -> None:
    report = synthesized.validation_report()
    violations = [
        (plugin["pluginName"], violation["ruleName"], violation["severity"])
        for plugin in report["pluginReports"]
        for violation in plugin["violations"]
    ]
    assert violations == []


def test_cdk_nag_finds_nothing_unacknowledged_in_the_stack(synthesized: Synthesized) -> None:
    result = AwsSolutionsChecks().validate_scope(synthesized.stack)
    assert [violation.rule_name for violation in result.violations] == []
    assert result.success


def test_cdk_nag_finds_nothing_unacknowledged_with_every_optional_part_on(alternate: Built) -> None:
    """The dashboard, the alarms (an alarm topic), the canary and active tracing: only the canary's
    function brings an acknowledgment of its own, its tracing policy's."""
    result = AwsSolutionsChecks().validate_scope(alternate.stack)
    assert [violation.rule_name for violation in result.violations] == []
    acknowledged = {(construct.node.path, rule) for construct, rule, _ in _acknowledgments(alternate.stack)}
    assert acknowledged - ACKNOWLEDGED == CANARY_ACKNOWLEDGED


def test_the_synthesized_stack_with_every_optional_part_on_leaves_no_finding(everything: Synthesized) -> None:
    """``make synth``'s gate on the stack with the canary, the alarms, the dashboard and the
    scheduler's function URL (the plugin ran in its synth): no violation in the report, and only
    the canary's tracing policy acknowledged besides the defaults' (the URL's among them)."""
    report = everything.validation_report()
    assert [violation for plugin in report["pluginReports"] for violation in plugin["violations"]] == []
    acknowledged = {(construct.node.path, rule) for construct, rule, _ in _acknowledgments(everything.stack)}
    assert acknowledged - ACKNOWLEDGED == CANARY_ACKNOWLEDGED | ECS_ROLES_ACKNOWLEDGED


def test_cdk_nag_is_live_and_reports_what_is_not_acknowledged() -> None:
    """Guards the two tests above against a plugin that silently checks nothing."""
    stack = Stack(App(outdir=scratch_outdir()), "Probe")
    sqs.Queue(stack, "Queue")
    result = AwsSolutionsChecks().validate_scope(stack)
    assert {"AwsSolutions-SQS3", "AwsSolutions-SQS4"} <= {violation.rule_name for violation in result.violations}


def test_every_acknowledgment_is_pinned_scoped_to_one_resource_and_reasoned(synthesized: Synthesized) -> None:
    acknowledgments = _acknowledgments(synthesized.app)
    for construct, rule, reason in acknowledgments:
        assert isinstance(construct, CfnResource), f"{rule} must be acknowledged on one resource"
        assert len(reason) >= 80, f"{rule} at {construct.node.path} needs a real reason"
    assert {(construct.node.path, rule) for construct, rule, _ in acknowledgments} == ACKNOWLEDGED


def test_every_acknowledgment_is_still_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Build the app with acknowledging disabled: cdk-nag must find exactly the pinned findings.

    (This builds the construct tree again but does not synthesize it.)
    """
    monkeypatch.setattr(Validations, "acknowledge", lambda self, *rules: None)
    stack = build_app(outdir=scratch_outdir(), nag=False).node.find_child(names.STACK_NAME)
    result = AwsSolutionsChecks().validate_scope(stack)
    found = {
        (resource.construct_path, violation.rule_name)
        for violation in result.violations
        for resource in violation.violating_resources
    }
    assert found == ACKNOWLEDGED
