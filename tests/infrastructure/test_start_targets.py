"""What the triggers may do for ``stepfunctions`` and ``ecs`` targets (infra/targets.py,
``start_statements``): start executions and run tasks in the deployment's account and Region only,
and pass to ECS tasks only the roles ``sundial:ecsTaskRoles`` names."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import App

from infra.settings import from_context
from shared.settings.context import context_key
from shared.settings.model import SettingsError
from tests.infrastructure.conftest import Synthesized, logical_id, scratch_outdir

pytestmark = pytest.mark.infrastructure

HERE = ["arn:", {"Ref": "AWS::Partition"}, ":{service}:", {"Ref": "AWS::Region"}, ":", {"Ref": "AWS::AccountId"}]


def _in_account(resource: Any, service: str, rest: str) -> bool:
    """Whether ``resource`` is ``arn:<partition>:<service>:<region>:<account>:<rest>`` of the stack."""
    joined = resource["Fn::Join"][1]
    expected = [*HERE[:2], HERE[2].format(service=service), *HERE[3:], ":" + rest]
    return json.dumps(joined) == json.dumps(expected)


def _targets_statements(synthesized: Synthesized) -> list[list[dict[str, Any]]]:
    """Each trigger's targets policy's statements."""
    stack = synthesized.stack
    policies = synthesized.resources("AWS::IAM::Policy")
    found = []
    for policy in stack.pipeline.targets_policies.values():
        found.append(
            policies[logical_id(stack, policy.node.default_child)]["Properties"]["PolicyDocument"]["Statement"]
        )
    assert len(found) == 3  # the trigger, the high-priority trigger, the recovering trigger
    return found


def _by_action(statements: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {statement["Action"]: statement for statement in statements}


def test_the_triggers_start_executions_and_run_tasks_in_their_account_and_region_only(
    synthesized: Synthesized,
) -> None:
    for statements in _targets_statements(synthesized):
        actions = _by_action(statements)
        assert "iam:PassRole" not in actions  # no roles named: task definitions without roles only
        assert _in_account(actions["states:StartExecution"]["Resource"], "states", "stateMachine:*")
        run = actions["ecs:RunTask"]
        assert _in_account(run["Resource"], "ecs", "task-definition/*")
        clusters = run["Condition"]["ArnLike"]["ecs:cluster"]
        assert _in_account(clusters, "ecs", "cluster/*")
        listing = actions["ecs:ListTasks"]
        assert listing["Resource"] == "*"  # ListTasks names no resource: its cluster holds it
        assert listing["Condition"] == run["Condition"]


def test_the_roles_the_setting_names_are_passed_to_ecs_tasks_alone(everything: Synthesized) -> None:
    for statements in _targets_statements(everything):
        passing = _by_action(statements)["iam:PassRole"]
        assert passing["Condition"] == {"StringEquals": {"iam:PassedToService": "ecs-tasks.amazonaws.com"}}
        roles = [json.dumps(resource["Fn::Join"][1]) for resource in passing["Resource"]]
        account = ["arn:", {"Ref": "AWS::Partition"}, ":iam::", {"Ref": "AWS::AccountId"}]
        assert sorted(roles) == sorted(
            json.dumps([*account, f":role/{name}"]) for name in ("report-task", "jobs/etl-*")
        )


@pytest.mark.parametrize("roles", ["has space", "a" * 65, "x,*y", "role/"])
def test_a_role_name_iam_would_refuse_stops_the_synth_naming_the_key(roles: str) -> None:
    with pytest.raises(SettingsError) as refused:
        from_context(App(context={context_key("ecs_task_roles"): roles}, outdir=scratch_outdir()).node)
    assert "sundial:ecsTaskRoles" in str(refused.value)


def test_role_names_are_read_one_each() -> None:
    settings = from_context(
        App(context={context_key("ecs_task_roles"): " report-task , jobs/etl-* ,"}, outdir=scratch_outdir()).node
    )
    assert settings.ecs_task_role_names == ("report-task", "jobs/etl-*")
