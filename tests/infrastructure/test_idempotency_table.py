"""The idempotency table: Powertools' persistence layer's shape, reachable by the API function alone.

Key and TTL come from shared/store/idempotency.py (what the function's persistence layer and the
local runtime's moto table use); the API function finds the table in its settings (idempotency_table)
and may do exactly what the layer does to it, and nothing else in the stack may touch it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import CfnDeletionPolicy
from aws_cdk import aws_dynamodb as dynamodb

from infra import names
from infra.storage import IDEMPOTENCY_ACTIONS
from shared.settings.environment import env_name
from shared.store import idempotency
from tests.infrastructure.conftest import Built, Synthesized, logical_id

pytestmark = pytest.mark.infrastructure


@pytest.fixture(scope="module")
def table_id(synthesized: Synthesized) -> str:
    return logical_id(synthesized.stack, synthesized.stack.storage.idempotency_table.node.default_child)


@pytest.fixture(scope="module")
def table(synthesized: Synthesized, table_id: str) -> dict[str, Any]:
    return synthesized.resources("AWS::DynamoDB::Table")[table_id]


def test_key_is_the_persistence_layers_string_id(table: dict[str, Any]) -> None:
    assert idempotency.KEY_ATTR == "id"
    properties = table["Properties"]
    assert properties["KeySchema"] == [{"AttributeName": idempotency.KEY_ATTR, "KeyType": "HASH"}]
    assert properties["AttributeDefinitions"] == [{"AttributeName": idempotency.KEY_ATTR, "AttributeType": "S"}]
    assert "GlobalSecondaryIndexes" not in properties
    assert "LocalSecondaryIndexes" not in properties


def test_records_expire_by_ttl_on_the_persistence_layers_expiry(table: dict[str, Any]) -> None:
    assert idempotency.EXPIRY_ATTR == "expiration"
    assert table["Properties"]["TimeToLiveSpecification"] == {
        "AttributeName": idempotency.EXPIRY_ATTR,
        "Enabled": True,
    }


def test_on_demand_encrypted_recoverable(table: dict[str, Any]) -> None:
    properties = table["Properties"]
    assert properties["BillingMode"] == "PAY_PER_REQUEST"
    assert "ProvisionedThroughput" not in properties
    assert properties["SSESpecification"] == {"SSEEnabled": True}
    assert properties["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}


def test_retained_and_deletion_protected_by_default(table: dict[str, Any]) -> None:
    assert table["DeletionPolicy"] == "Retain"
    assert table["UpdateReplacePolicy"] == "Retain"
    assert table["Properties"]["DeletionProtectionEnabled"] is True


def test_a_throwaway_stack_deletes_it(alternate: Built) -> None:
    table = alternate.stack.storage.idempotency_table.node.default_child
    assert isinstance(table, dynamodb.CfnTable)
    assert table.deletion_protection_enabled is False
    assert table.cfn_options.deletion_policy == CfnDeletionPolicy.DELETE


def test_name_is_generated_and_exported(synthesized: Synthesized, table: dict[str, Any], table_id: str) -> None:
    assert "TableName" not in table["Properties"]
    outputs = synthesized.template.find_outputs(names.OUTPUT_IDEMPOTENCY_TABLE_NAME)
    assert outputs[names.OUTPUT_IDEMPOTENCY_TABLE_NAME]["Value"] == {"Ref": table_id}


def _function_environments(synthesized: Synthesized) -> dict[str, dict[str, Any]]:
    return {
        key: function["Properties"].get("Environment", {}).get("Variables", {})
        for key, function in synthesized.resources("AWS::Lambda::Function").items()
    }


def test_only_the_api_function_is_told_the_table(synthesized: Synthesized, table_id: str) -> None:
    stack = synthesized.stack
    api_id = logical_id(stack, stack.api.handler.function.node.default_child)
    environments = _function_environments(synthesized)
    assert environments[api_id][env_name("idempotency_table")] == {"Ref": table_id}
    others = {key for key, env in environments.items() if key != api_id and table_id in json.dumps(env)}
    assert others == set()


def _statements_naming(synthesized: Synthesized, table_id: str) -> dict[str, list[dict[str, Any]]]:
    """IAM policy logical id -> its statements whose resources name the idempotency table."""
    found: dict[str, list[dict[str, Any]]] = {}
    for key, policy in synthesized.resources("AWS::IAM::Policy").items():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if table_id in json.dumps(statement["Resource"]):
                found.setdefault(key, []).append(statement)
    return found


def test_only_the_api_function_may_use_it_and_only_as_the_persistence_layer_does(
    synthesized: Synthesized, table_id: str
) -> None:
    stack = synthesized.stack
    api_policy = logical_id(stack, stack.api.handler.policy.node.default_child)
    assert set(IDEMPOTENCY_ACTIONS) == {
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
    }
    assert _statements_naming(synthesized, table_id) == {
        api_policy: [
            {
                "Action": sorted(IDEMPOTENCY_ACTIONS),
                "Effect": "Allow",
                "Resource": {"Fn::GetAtt": [table_id, "Arn"]},
            }
        ]
    }
    api_role = synthesized.resources("AWS::IAM::Policy")[api_policy]["Properties"]["Roles"]
    assert api_role == [{"Ref": logical_id(stack, stack.api.handler.role.node.default_child)}]


def test_no_resource_policy_or_other_resource_refers_to_it(synthesized: Synthesized, table_id: str) -> None:
    """Besides its output, the API function's environment and its policy, nothing names the table."""
    stack = synthesized.stack
    allowed = {
        table_id,
        logical_id(stack, stack.api.handler.function.node.default_child),
        logical_id(stack, stack.api.handler.policy.node.default_child),
    }
    resources = synthesized.template.to_json()["Resources"]
    naming = {key for key, resource in resources.items() if table_id in json.dumps(resource) and key != table_id}
    assert naming <= allowed
    assert naming == allowed - {table_id}
