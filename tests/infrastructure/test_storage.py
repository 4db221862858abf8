"""The table in the template is the table the PynamoDB models describe.

The expectations are computed here from the model classes themselves (keys, attribute types,
indexes, projections, TTL), independently of infra/storage.py: change a model without the
stack following, or the other way round, and these tests fail.
"""

from __future__ import annotations

from typing import Any

import pytest
from pynamodb.attributes import Attribute, TTLAttribute
from pynamodb.indexes import GlobalSecondaryIndex, IncludeProjection, Index, LocalSecondaryIndex
from pynamodb.models import Model

from infra.storage import TABLE_MODELS
from shared.store.models import LIST_INDEX_NAME, TaskItem
from tests.infrastructure.conftest import Synthesized, logical_id

pytestmark = pytest.mark.infrastructure


def _dynamo_name(model: type[Model], python_name: str | None) -> str:
    assert python_name is not None
    return model.get_attributes()[python_name].attr_name


def _key_schema(attributes: dict[str, Attribute[Any]]) -> list[dict[str, str]]:
    schema = [{"AttributeName": attr.attr_name, "KeyType": "HASH"} for attr in attributes.values() if attr.is_hash_key]
    schema += [
        {"AttributeName": attr.attr_name, "KeyType": "RANGE"} for attr in attributes.values() if attr.is_range_key
    ]
    return schema


def _indexes(model: type[Model], kind: type[Index[Any]]) -> list[Index[Any]]:
    return [index for index in model._indexes.values() if isinstance(index, kind)]


def _index_definition(index: Index[Any]) -> dict[str, Any]:
    projection: dict[str, Any] = {"ProjectionType": index.Meta.projection.projection_type}
    if isinstance(index.Meta.projection, IncludeProjection):
        projection["NonKeyAttributes"] = list(index.Meta.projection.non_key_attributes)
    return {
        "IndexName": index.Meta.index_name,
        "KeySchema": _key_schema(index.Meta.attributes),
        "Projection": projection,
    }


def _expected_attribute_definitions(models: tuple[type[Model], ...]) -> list[dict[str, str]]:
    keys: dict[str, str] = {}
    for model in models:
        key_names = [model._hash_keyname, model._range_keyname]
        key_attributes = [model.get_attributes()[name] for name in key_names if name is not None]
        for index in model._indexes.values():
            key_attributes += [a for a in index.Meta.attributes.values() if a.is_hash_key or a.is_range_key]
        for attr in key_attributes:
            keys[attr.attr_name] = attr.attr_type
    return sorted(({"AttributeName": n, "AttributeType": t} for n, t in keys.items()), key=str)


@pytest.fixture(scope="module")
def table(synthesized: Synthesized) -> dict[str, Any]:
    tables = synthesized.resources("AWS::DynamoDB::Table")
    stack = synthesized.stack
    task_table = logical_id(stack, stack.storage.table.node.default_child)
    idempotency_table = logical_id(stack, stack.storage.idempotency_table.node.default_child)
    # Every item of Sundial's own in one table; Powertools' idempotency records in another.
    assert set(tables) == {task_table, idempotency_table}
    return tables[task_table]


def test_the_models_sharing_the_table_are_the_ones_the_stack_builds() -> None:
    assert TaskItem in TABLE_MODELS


def test_key_schema_equals_the_models(table: dict[str, Any]) -> None:
    for model in TABLE_MODELS:
        expected = [{"AttributeName": _dynamo_name(model, model._hash_keyname), "KeyType": "HASH"}]
        if model._range_keyname:
            expected.append({"AttributeName": _dynamo_name(model, model._range_keyname), "KeyType": "RANGE"})
        assert table["Properties"]["KeySchema"] == expected
    assert table["Properties"]["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ]


def test_attribute_definitions_equal_the_models_key_attributes(table: dict[str, Any]) -> None:
    actual = sorted(table["Properties"]["AttributeDefinitions"], key=str)
    assert actual == _expected_attribute_definitions(TABLE_MODELS)


def test_global_indexes_equal_the_models(table: dict[str, Any]) -> None:
    expected = {
        index.Meta.index_name: _index_definition(index)
        for model in TABLE_MODELS
        for index in _indexes(model, GlobalSecondaryIndex)
    }
    actual = {index["IndexName"]: index for index in table["Properties"].get("GlobalSecondaryIndexes", [])}
    assert actual == expected
    assert actual[LIST_INDEX_NAME] == {
        "IndexName": "by_tenant",
        "KeySchema": [
            {"AttributeName": "lpk", "KeyType": "HASH"},
            {"AttributeName": "lsk", "KeyType": "RANGE"},
        ],
        "Projection": {"ProjectionType": "KEYS_ONLY"},
    }


def test_local_indexes_equal_the_models(table: dict[str, Any]) -> None:
    expected = [_index_definition(index) for model in TABLE_MODELS for index in _indexes(model, LocalSecondaryIndex)]
    assert table["Properties"].get("LocalSecondaryIndexes", []) == expected


def test_ttl_attribute_is_the_models_ttl_attribute(table: dict[str, Any]) -> None:
    ttl_names = {
        attr.attr_name
        for model in TABLE_MODELS
        for attr in model.get_attributes().values()
        if isinstance(attr, TTLAttribute)
    }
    assert ttl_names == {"expires_at"}
    assert table["Properties"]["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}


def test_point_in_time_recovery_is_on(table: dict[str, Any]) -> None:
    assert table["Properties"]["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}


def test_billing_is_on_demand_as_the_models_say(table: dict[str, Any]) -> None:
    assert {getattr(model.Meta, "billing_mode", None) for model in TABLE_MODELS} == {"PAY_PER_REQUEST"}
    assert table["Properties"]["BillingMode"] == "PAY_PER_REQUEST"
    assert "ProvisionedThroughput" not in table["Properties"]


def test_encrypted_with_the_aws_managed_key(table: dict[str, Any]) -> None:
    assert table["Properties"]["SSESpecification"] == {"SSEEnabled": True}


def test_retained_and_deletion_protected_by_default(table: dict[str, Any]) -> None:
    assert table["DeletionPolicy"] == "Retain"
    assert table["UpdateReplacePolicy"] == "Retain"
    assert table["Properties"]["DeletionProtectionEnabled"] is True


def test_table_name_is_generated_and_exported(synthesized: Synthesized, table: dict[str, Any]) -> None:
    # A generated name lets two stacks (or stages) live in one account.
    assert "TableName" not in table["Properties"]
    outputs = synthesized.template.find_outputs("TableName")
    assert len(outputs) == 1
