"""The idempotency table: Powertools' DynamoDB persistence layer for the ``Idempotency-Key``
header. A table of its own, in the layer's default shape (partition key
``id``, TTL on ``expiration``), so the records spread over partitions by key hash."""

from __future__ import annotations

from typing import Any

import boto3
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

KEY_ATTR = "id"
EXPIRY_ATTR = "expiration"


def persistence_layer(table_name: str, client: Any = None) -> DynamoDBPersistenceLayer:
    """Makes its boto3 client now: build it lazily (once per cold start), not at import."""
    return DynamoDBPersistenceLayer(
        table_name=table_name, key_attr=KEY_ATTR, expiry_attr=EXPIRY_ATTR, boto3_client=client
    )


def ensure_idempotency_table(table_name: str) -> None:
    """Create the table where it does not exist (the local runtime and tests; CDK in AWS)."""
    client = boto3.client("dynamodb")
    if table_name in client.list_tables()["TableNames"]:
        return
    client.create_table(
        TableName=table_name,
        KeySchema=[{"AttributeName": KEY_ATTR, "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": KEY_ATTR, "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    client.get_waiter("table_exists").wait(TableName=table_name)
    client.update_time_to_live(
        TableName=table_name, TimeToLiveSpecification={"Enabled": True, "AttributeName": EXPIRY_ATTR}
    )
