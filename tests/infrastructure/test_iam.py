"""Least privilege: each function its own role, exact actions on exact ARNs, "*" only for X-Ray."""

from __future__ import annotations

from typing import Any

import pytest

from infra.api import API_TABLE_ACTIONS
from infra.function import XRAY_WRITE_ACTIONS
from shared.store.models import LIST_INDEX_NAME
from tests.infrastructure.conftest import Synthesized, logical_id

pytestmark = pytest.mark.infrastructure


def _listify(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _function_roles(synthesized: Synthesized) -> dict[str, str]:
    """Function logical id -> role logical id."""
    roles = {}
    for key, function in synthesized.resources("AWS::Lambda::Function").items():
        role = function["Properties"]["Role"]
        assert "Fn::GetAtt" in role, f"{key} must use a role of this stack"
        roles[key] = role["Fn::GetAtt"][0]
    return roles


def _statements_of_role(synthesized: Synthesized, role_id: str) -> list[dict[str, Any]]:
    statements = []
    for policy in synthesized.resources("AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"]["Roles"]:
            statements += policy["Properties"]["PolicyDocument"]["Statement"]
    return statements


def test_every_function_has_its_own_role(synthesized: Synthesized) -> None:
    roles = _function_roles(synthesized)
    assert roles, "the stack has functions"
    assert len(set(roles.values())) == len(roles), "no two functions share a role"
    all_roles = synthesized.resources("AWS::IAM::Role")
    for role_id in roles.values():
        role = all_roles[role_id]["Properties"]
        assert role["AssumeRolePolicyDocument"]["Statement"] == [
            {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}}
        ]
        assert "ManagedPolicyArns" not in role, "no AWS managed policies"
        assert "Policies" not in role


def test_function_policies_attach_to_one_role_each(synthesized: Synthesized) -> None:
    function_roles = set(_function_roles(synthesized).values())
    for policy in synthesized.resources("AWS::IAM::Policy").values():
        roles = [ref["Ref"] for ref in policy["Properties"]["Roles"]]
        if function_roles & set(roles):
            assert len(roles) == 1
            assert "Users" not in policy["Properties"]
            assert "Groups" not in policy["Properties"]


def test_no_wildcard_actions_and_star_resources_only_for_xray(synthesized: Synthesized) -> None:
    for role_id in _function_roles(synthesized).values():
        statements = _statements_of_role(synthesized, role_id)
        assert statements
        for statement in statements:
            actions = _listify(statement["Action"])
            assert statement["Effect"] == "Allow"
            assert "NotAction" not in statement
            assert "NotResource" not in statement
            for action in actions:
                assert "*" not in action, f"{role_id} grants the wildcard action {action}"
            if "*" in _listify(statement["Resource"]):
                assert sorted(actions) == sorted(XRAY_WRITE_ACTIONS), f"{role_id}: Resource * beyond X-Ray"


def test_api_function_may_only_touch_the_table_and_the_listing_index(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    function_id = logical_id(stack, stack.api.handler.function.node.default_child)
    table_id = logical_id(stack, stack.storage.table.node.default_child)
    role_id = _function_roles(synthesized)[function_id]
    dynamodb = [
        statement
        for statement in _statements_of_role(synthesized, role_id)
        if any(action.startswith("dynamodb:") for action in _listify(statement["Action"]))
    ]
    table_arn = {"Fn::GetAtt": [table_id, "Arn"]}
    index_arn = {"Fn::Join": ["", [table_arn, f"/index/{LIST_INDEX_NAME}"]]}
    assert sorted(dynamodb, key=str) == sorted(
        [
            {"Action": sorted(API_TABLE_ACTIONS), "Effect": "Allow", "Resource": table_arn},
            {"Action": "dynamodb:Query", "Effect": "Allow", "Resource": index_arn},
        ],
        key=str,
    )
    assert set(API_TABLE_ACTIONS) == {
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:Query",
        "dynamodb:BatchGetItem",
        "dynamodb:BatchWriteItem",
        "dynamodb:ConditionCheckItem",
    }


def test_functions_write_logs_only_to_their_own_log_group(synthesized: Synthesized) -> None:
    functions = synthesized.resources("AWS::Lambda::Function")
    for function_id, role_id in _function_roles(synthesized).items():
        own_group = functions[function_id]["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
        logs = [
            statement
            for statement in _statements_of_role(synthesized, role_id)
            if any(action.startswith("logs:") for action in _listify(statement["Action"]))
        ]
        assert logs == [
            {
                "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                "Effect": "Allow",
                "Resource": {"Fn::GetAtt": [own_group, "Arn"]},
            }
        ]


def test_functions_exist_only_after_their_permissions(synthesized: Synthesized) -> None:
    functions = synthesized.resources("AWS::Lambda::Function")
    policies = synthesized.resources("AWS::IAM::Policy")
    for function_id, role_id in _function_roles(synthesized).items():
        own_policies = {key for key, policy in policies.items() if {"Ref": role_id} in policy["Properties"]["Roles"]}
        assert own_policies <= set(functions[function_id].get("DependsOn", []))
