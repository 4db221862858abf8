"""The DynamoDB tables: the task table, shaped by the PynamoDB models so the stack and the code
cannot drift, and the idempotency table of Powertools' persistence layer.

Keys, attribute types, indexes (with their projections), the TTL attribute and the billing mode
all come from the model classes in ``shared/store/models.py`` -- from the same
``Model._get_schema()`` that ``Model.create_table()`` sends to DynamoDB (and to moto in the
local runtime). Changing a model changes the template; tests/infrastructure checks the template
against the models independently.

The idempotency table (the API's ``Idempotency-Key`` header) takes its key and TTL attribute
from ``shared/store/idempotency.py``, the module that builds the persistence layer and creates
the same table in moto.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from constructs import Construct
from pynamodb.attributes import TTLAttribute
from pynamodb.models import Model

from shared.store.idempotency import EXPIRY_ATTR as IDEMPOTENCY_EXPIRY_ATTR
from shared.store.idempotency import KEY_ATTR as IDEMPOTENCY_KEY_ATTR
from shared.store.table import TABLE_MODELS

from . import names
from .settings import DeploymentSettings

_ATTRIBUTE_TYPES = {
    "S": dynamodb.AttributeType.STRING,
    "N": dynamodb.AttributeType.NUMBER,
    "B": dynamodb.AttributeType.BINARY,
}
_PROJECTIONS = {
    "ALL": dynamodb.ProjectionType.ALL,
    "KEYS_ONLY": dynamodb.ProjectionType.KEYS_ONLY,
    "INCLUDE": dynamodb.ProjectionType.INCLUDE,
}
_BILLING_MODES = {"PAY_PER_REQUEST": dynamodb.BillingMode.PAY_PER_REQUEST}

IDEMPOTENCY_ACTIONS = (
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
)
"""What Powertools' DynamoDB persistence layer does to its table: a conditional PutItem saves
the in-progress record, GetItem reads a record back, UpdateItem stores the answer, DeleteItem
drops the record of a request that failed."""


class SchemaError(ValueError):
    """The models disagree with each other, or ask for something this stack does not build."""


@dataclass(frozen=True)
class Key:
    name: str
    type: str
    """DynamoDB scalar type: S, N or B."""

    def attribute(self) -> dynamodb.Attribute:
        return dynamodb.Attribute(name=self.name, type=_ATTRIBUTE_TYPES[self.type])


@dataclass(frozen=True)
class IndexSchema:
    name: str
    partition_key: Key
    sort_key: Key | None
    projection: str
    non_key_attributes: tuple[str, ...] = ()


@dataclass(frozen=True)
class TableSchema:
    partition_key: Key
    sort_key: Key | None
    global_indexes: tuple[IndexSchema, ...]
    local_indexes: tuple[IndexSchema, ...]
    ttl_attribute: str | None
    billing_mode: str


def table_schema(models: Iterable[type[Model]] = TABLE_MODELS) -> TableSchema:
    """The one table every model maps to; raises :class:`SchemaError` when they disagree."""
    schemas = [_model_schema(model) for model in models]
    if not schemas:
        raise SchemaError("no models")
    first = schemas[0]
    for other in schemas[1:]:
        if (other.partition_key, other.sort_key, other.billing_mode) != (
            first.partition_key,
            first.sort_key,
            first.billing_mode,
        ):
            raise SchemaError("the models sharing the table disagree on its keys or billing mode")
    ttl = {schema.ttl_attribute for schema in schemas if schema.ttl_attribute is not None}
    if len(ttl) > 1:
        raise SchemaError(f"a table has one TTL attribute, the models name {sorted(ttl)}")
    return TableSchema(
        partition_key=first.partition_key,
        sort_key=first.sort_key,
        global_indexes=_merge(schema.global_indexes for schema in schemas),
        local_indexes=_merge(schema.local_indexes for schema in schemas),
        ttl_attribute=next(iter(ttl), None),
        billing_mode=first.billing_mode,
    )


class Storage(Construct):
    """The task table: on-demand, TTL on finished items, point-in-time recovery, encrypted; and
    the idempotency table, built the same way (TTL on the records' ``expiration``)."""

    def __init__(self, scope: Construct, construct_id: str, *, settings: DeploymentSettings) -> None:
        super().__init__(scope, construct_id)
        self.schema = table_schema()
        schema = self.schema
        self.table = dynamodb.Table(
            self,
            names.TABLE_ID,
            partition_key=schema.partition_key.attribute(),
            sort_key=schema.sort_key.attribute() if schema.sort_key else None,
            billing_mode=_BILLING_MODES[schema.billing_mode],
            time_to_live_attribute=schema.ttl_attribute,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            deletion_protection=settings.retain,
            removal_policy=settings.cdk_removal_policy,
            # What the table serves at once (sundial:tableWarmReads / tableWarmWrites); not set by
            # default. Its index is not pre-warmed: the firing path does not write it.
            warm_throughput=settings.table_warm_throughput,
        )
        for index in schema.global_indexes:
            self.table.add_global_secondary_index(
                index_name=index.name,
                partition_key=index.partition_key.attribute(),
                sort_key=index.sort_key.attribute() if index.sort_key else None,
                projection_type=_PROJECTIONS[index.projection],
                non_key_attributes=list(index.non_key_attributes) or None,
            )
        for index in schema.local_indexes:
            if index.sort_key is None:
                raise SchemaError(f"local index {index.name} needs a sort key")
            self.table.add_local_secondary_index(
                index_name=index.name,
                sort_key=index.sort_key.attribute(),
                projection_type=_PROJECTIONS[index.projection],
                non_key_attributes=list(index.non_key_attributes) or None,
            )
        self.index_names = tuple(index.name for index in (*schema.global_indexes, *schema.local_indexes))
        # Point-in-time recovery on records that live a day is not there to restore them (a
        # restore brings back keys whose answers were already returned): it keeps the two tables
        # alike, and cdk-nag's DDB3 passing, for a cost proportional to a small table.
        self.idempotency_table = dynamodb.Table(
            self,
            names.IDEMPOTENCY_TABLE_ID,
            partition_key=dynamodb.Attribute(name=IDEMPOTENCY_KEY_ATTR, type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            time_to_live_attribute=IDEMPOTENCY_EXPIRY_ATTR,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            deletion_protection=settings.retain,
            removal_policy=settings.cdk_removal_policy,
        )

    def access_statements(
        self, *, actions: Sequence[str], query_indexes: Sequence[str] = ()
    ) -> list[iam.PolicyStatement]:
        """Least-privilege statements: ``actions`` on the table, ``Query`` on the named indexes.

        Each index is granted by its exact ARN (never ``index/*``) and only for ``Query``, the
        one item operation an index serves that a function of ours uses.
        """
        for action in actions:
            if not action.startswith("dynamodb:") or "*" in action:
                raise ValueError(f"name each DynamoDB action exactly, got {action!r}")
        unknown = set(query_indexes) - set(self.index_names)
        if unknown:
            raise ValueError(f"no such index: {sorted(unknown)}")
        statements = [iam.PolicyStatement(actions=list(actions), resources=[self.table.table_arn])]
        if query_indexes:
            statements.append(
                iam.PolicyStatement(
                    actions=["dynamodb:Query"],
                    resources=[f"{self.table.table_arn}/index/{name}" for name in query_indexes],
                )
            )
        return statements

    def idempotency_statements(self) -> list[iam.PolicyStatement]:
        """What the persistence layer needs (:data:`IDEMPOTENCY_ACTIONS`), on the idempotency
        table alone (it has no index)."""
        return [iam.PolicyStatement(actions=list(IDEMPOTENCY_ACTIONS), resources=[self.idempotency_table.table_arn])]

    def idempotency_resources(self) -> dict[str, str]:
        """The idempotency table, for a function's settings (``shared.settings.environment.Settings``)."""
        return {"idempotency_table": self.idempotency_table.table_name}


def _model_schema(model: type[Model]) -> TableSchema:
    raw: Any = model._get_schema()
    types = {item["AttributeName"]: item["AttributeType"] for item in raw["attribute_definitions"]}
    for index in (*raw["global_secondary_indexes"], *raw["local_secondary_indexes"]):
        types.update({item["AttributeName"]: item["AttributeType"] for item in index["attribute_definitions"]})
    partition_key, sort_key = _keys(raw["key_schema"], types)
    ttl = [attr.attr_name for attr in model.get_attributes().values() if isinstance(attr, TTLAttribute)]
    billing_mode = getattr(model.Meta, "billing_mode", "PAY_PER_REQUEST")
    if billing_mode not in _BILLING_MODES:
        raise SchemaError(f"{model.__name__}: billing mode {billing_mode!r} is not built by this stack")
    return TableSchema(
        partition_key=partition_key,
        sort_key=sort_key,
        global_indexes=tuple(_index(index, types) for index in raw["global_secondary_indexes"]),
        local_indexes=tuple(_index(index, types) for index in raw["local_secondary_indexes"]),
        ttl_attribute=ttl[0] if ttl else None,
        billing_mode=billing_mode,
    )


def _keys(key_schema: list[dict[str, str]], types: dict[str, str]) -> tuple[Key, Key | None]:
    by_type = {item["KeyType"]: item["AttributeName"] for item in key_schema}
    partition = Key(by_type["HASH"], types[by_type["HASH"]])
    sort = Key(by_type["RANGE"], types[by_type["RANGE"]]) if "RANGE" in by_type else None
    return partition, sort


def _index(raw: dict[str, Any], types: dict[str, str]) -> IndexSchema:
    partition_key, sort_key = _keys(raw["key_schema"], types)
    projection = raw["projection"]
    return IndexSchema(
        name=raw["index_name"],
        partition_key=partition_key,
        sort_key=sort_key,
        projection=projection["ProjectionType"],
        non_key_attributes=tuple(projection.get("NonKeyAttributes", ())),
    )


def _merge(groups: Iterable[tuple[IndexSchema, ...]]) -> tuple[IndexSchema, ...]:
    merged: dict[str, IndexSchema] = {}
    for group in groups:
        for index in group:
            if merged.setdefault(index.name, index) != index:
                raise SchemaError(f"the models define index {index.name} differently")
    return tuple(merged.values())
