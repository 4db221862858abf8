"""The receiver kit's DynamoDB store (receiver-kit/) on moto: a conditional PutItem claims a run
id once; an expired claim or a released one is claimed again."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws
from sundial_receiver import DynamoDBStore

pytestmark = pytest.mark.integration


def test_dynamodb_store_claims_once_until_expired_or_released():
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName="dedupe",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        now = [1_000_000.0]
        store = DynamoDBStore("dedupe", client=client, clock=lambda: now[0])
        assert store.claim("r1", ttl=60)
        assert not store.claim("r1", ttl=60)
        assert store.claim("r2", ttl=60)
        item = client.get_item(TableName="dedupe", Key={"pk": {"S": "sundial-run#r1"}})["Item"]
        assert item["expires"] == {"N": "1000060"}
        now[0] += 61  # DynamoDB's TTL deletes late: an expired item no longer counts
        assert store.claim("r1", ttl=60)
        store.release("r2")
        assert store.claim("r2", ttl=60)
        assert not store.claim("r2", ttl=60)


def test_dynamodb_store_makes_its_boto3_client_lazily_and_raises_other_errors():
    with mock_aws():
        store = DynamoDBStore("no-such-table")
        with pytest.raises(Exception, match=r"ResourceNotFound|non-existent|not found"):
            store.claim("r1")
