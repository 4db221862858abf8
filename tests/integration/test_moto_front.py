"""The moto process's own front (local/moto_host/front.py) answers as moto's werkzeug server does.

Two moto processes, one served by werkzeug's server and Flask (``MOTO_FRONT_ENV=werkzeug``, moto's
own), one by the front: the same raw DynamoDB requests go to both, and their answers must match
(status, body, and every header but the ones that name the moment or the request). Among them
the answers the store relies on: a refused condition, a cancelled transaction, an unknown table, a
malformed request. Then what goes through to moto's Flask app behind the front: SQS, S3 with
metadata whose key holds an underscore (werkzeug drops such headers, moto keeps S3's), a body
sent chunked, ``Expect: 100-continue``, and moto's own API."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from local.moto_server import MotoServer
from local.settings import MOTO_FRONT_ENV, WERKZEUG_FRONT
from tests.support.moto_process import client

pytestmark = pytest.mark.integration

VARYING = {"date", "server", "x-amzn-requestid", "x-amz-crc32"}
"""Headers that differ between any two answers (a moment, a random id, the checksum of a body that
holds a moment); the checksum is compared wherever the bodies are equal."""


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[MotoServer, MotoServer]]:
    werkzeug, front = MotoServer(env={MOTO_FRONT_ENV: WERKZEUG_FRONT}), MotoServer()
    werkzeug.start()
    front.start()
    try:
        yield werkzeug, front
    finally:
        werkzeug.stop()
        front.stop()


def dynamodb(server: MotoServer, action: str, body: Any) -> tuple[int, dict[str, str], Any]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.request(
            "POST",
            "/",
            body=json.dumps(body) if not isinstance(body, str) else body,
            headers={
                "X-Amz-Target": f"DynamoDB_20120810.{action}",
                "Content-Type": "application/x-amz-json-1.0",
                "Authorization": "AWS4-HMAC-SHA256 Credential=testing/20261127/us-east-1/dynamodb/aws4_request, "
                "SignedHeaders=host, Signature=0",
            },
        )
        answer = connection.getresponse()
        raw = answer.read()
        headers = {name.lower(): value for name, value in answer.getheaders()}
        try:
            return answer.status, headers, json.loads(raw) if raw else None
        except ValueError:  # moto's own 500 page (werkzeug's debug page, or the front's line)
            return answer.status, headers, "not JSON"
    finally:
        connection.close()


def _timeless(value: Any) -> Any:
    """The body without the moments a table's description carries."""
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if not k.endswith("DateTime")}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


TABLE = {
    "TableName": "fidelity",
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    "AttributeDefinitions": [
        {"AttributeName": "pk", "AttributeType": "S"},
        {"AttributeName": "sk", "AttributeType": "S"},
    ],
    "BillingMode": "PAY_PER_REQUEST",
}
ITEM = {"pk": {"S": "T#1"}, "sk": {"S": "A"}, "n": {"N": "1"}, "payload": {"S": '{"i": 1}'}}
REQUESTS: list[tuple[str, Any]] = [
    ("CreateTable", TABLE),
    ("PutItem", {"TableName": "fidelity", "Item": ITEM, "ReturnConsumedCapacity": "TOTAL"}),
    ("PutItem", {"TableName": "fidelity", "Item": ITEM, "ConditionExpression": "attribute_not_exists(pk)"}),
    (
        "UpdateItem",
        {
            "TableName": "fidelity",
            "Key": {"pk": {"S": "T#1"}, "sk": {"S": "A"}},
            "UpdateExpression": "SET #n = #n + :one",
            "ConditionExpression": "#n < :ten",
            "ExpressionAttributeNames": {"#n": "n"},
            "ExpressionAttributeValues": {":one": {"N": "1"}, ":ten": {"N": "10"}},
            "ReturnValues": "ALL_NEW",
        },
    ),
    (
        "UpdateItem",
        {
            "TableName": "fidelity",
            "Key": {"pk": {"S": "T#1"}, "sk": {"S": "A"}},
            "UpdateExpression": "SET #n = #n + :one",
            "ConditionExpression": "#n > :ten",
            "ExpressionAttributeNames": {"#n": "n"},
            "ExpressionAttributeValues": {":one": {"N": "1"}, ":ten": {"N": "10"}},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        },
    ),
    ("GetItem", {"TableName": "fidelity", "Key": {"pk": {"S": "T#1"}, "sk": {"S": "A"}}, "ConsistentRead": True}),
    (
        "Query",
        {
            "TableName": "fidelity",
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": "T#1"}},
        },
    ),
    (
        "TransactWriteItems",
        {
            "TransactItems": [
                {"Put": {"TableName": "fidelity", "Item": {**ITEM, "sk": {"S": "B"}}}},
                {
                    "ConditionCheck": {
                        "TableName": "fidelity",
                        "Key": {"pk": {"S": "T#1"}, "sk": {"S": "A"}},
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
            ]
        },
    ),
    ("BatchWriteItem", {"RequestItems": {"fidelity": [{"PutRequest": {"Item": {**ITEM, "sk": {"S": "C"}}}}]}}),
    ("BatchGetItem", {"RequestItems": {"fidelity": {"Keys": [{"pk": {"S": "T#1"}, "sk": {"S": "C"}}]}}}),
    ("GetItem", {"TableName": "missing", "Key": {"pk": {"S": "T#1"}, "sk": {"S": "A"}}}),
    ("PutItem", {"Item": ITEM}),
    ("PutItem", "{not json"),
    ("DescribeTable", {"TableName": "fidelity"}),
    ("DeleteItem", {"TableName": "fidelity", "Key": {"pk": {"S": "T#1"}, "sk": {"S": "A"}}, "ReturnValues": "ALL_OLD"}),
]


def test_dynamodb_answers_are_moto_s_own(servers: tuple[MotoServer, MotoServer]) -> None:
    werkzeug, front = servers
    statuses = []
    for action, body in REQUESTS:
        expected, got = dynamodb(werkzeug, action, body), dynamodb(front, action, body)
        assert got[0] == expected[0], (action, body, got, expected)
        statuses.append(got[0])
        if got[0] == 500:  # moto failed on it (its error page is the server's own): the status is what counts
            continue
        assert _timeless(got[2]) == _timeless(expected[2]), (action, got[2], expected[2])
        varying = VARYING | {"connection"}
        if got[2] == expected[2]:
            assert got[1].get("x-amz-crc32") == expected[1].get("x-amz-crc32"), action
        else:  # a description's moments: a length of its own
            varying |= {"content-length"}
        assert {k: v for k, v in got[1].items() if k not in varying} == {
            k: v for k, v in expected[1].items() if k not in varying
        }, action
    # the answers compared include refusals, not only successes
    assert statuses.count(400) >= 4, statuses
    assert 500 in statuses, statuses


def test_other_services_reach_moto_s_app_through_the_front(servers: tuple[MotoServer, MotoServer]) -> None:
    _, front = servers
    sqs = client(front, "sqs")
    url = sqs.create_queue(QueueName="front")["QueueUrl"]
    sqs.send_message(
        QueueUrl=url, MessageBody="hello", MessageAttributes={"a": {"DataType": "String", "StringValue": "b"}}
    )
    messages = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"])["Messages"]
    assert [m["Body"] for m in messages] == ["hello"]
    assert messages[0]["MessageAttributes"]["a"]["StringValue"] == "b"

    s3 = client(front, "s3", s3={"addressing_style": "path"})
    s3.create_bucket(Bucket="front")
    big = b"x" * (2 * 1024 * 1024)  # over 1 MB: botocore asks Expect: 100-continue
    s3.put_object(Bucket="front", Key="dir/a b.txt", Body=big, Metadata={"my_key": "1", "other-key": "2"})
    got = s3.get_object(Bucket="front", Key="dir/a b.txt")
    assert got["Body"].read() == big
    assert got["Metadata"] == {"my_key": "1", "other-key": "2"}
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="front")["Contents"]] == ["dir/a b.txt"]
    head = s3.head_object(Bucket="front", Key="dir/a b.txt")
    assert head["ContentLength"] == len(big)


def test_a_chunked_body_and_a_malformed_request(servers: tuple[MotoServer, MotoServer]) -> None:
    _, front = servers
    connection = http.client.HTTPConnection("127.0.0.1", front.port, timeout=10)
    body = json.dumps({"TableName": "chunked", **{k: v for k, v in TABLE.items() if k != "TableName"}}).encode()
    connection.putrequest("POST", "/")
    connection.putheader("X-Amz-Target", "DynamoDB_20120810.CreateTable")
    connection.putheader("Content-Type", "application/x-amz-json-1.0")
    connection.putheader("Transfer-Encoding", "chunked")
    connection.endheaders()
    for start in range(0, len(body), 17):
        piece = body[start : start + 17]
        connection.send(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
    connection.send(b"0\r\n\r\n")
    answer = connection.getresponse()
    assert answer.status == 200, answer.read()
    assert json.loads(answer.read())["TableDescription"]["TableName"] == "chunked"
    connection.close()

    with socket.create_connection(("127.0.0.1", front.port), timeout=10) as raw:
        raw.sendall(b"NOT A REQUEST\r\n\r\n")
        assert raw.recv(1024).startswith(b"HTTP/1.1 400 ")

    connection = http.client.HTTPConnection("127.0.0.1", front.port, timeout=10)
    connection.request("GET", "/moto-api/data.json")
    answer = connection.getresponse()
    assert answer.status == 200
    assert "dynamodb" in json.loads(answer.read())


def test_a_connection_is_kept_for_the_next_request(servers: tuple[MotoServer, MotoServer]) -> None:
    """botocore pools its connections: the front answers each request on the connection it came on
    (its body read to its end, so the next request starts clean) until the client closes it."""
    werkzeug, front = servers
    assert (
        dynamodb(werkzeug, "ListTables", {})[1]["connection"] == "close"
    )  # werkzeug's server: one request a connection
    dynamodb(front, "CreateTable", {**TABLE, "TableName": "kept"})
    connection = http.client.HTTPConnection("127.0.0.1", front.port, timeout=10)
    headers = {"X-Amz-Target": "DynamoDB_20120810.PutItem", "Content-Type": "application/x-amz-json-1.0"}
    sockets = set()
    for i in range(5):
        item = {**ITEM, "sk": {"S": f"K{i}"}}
        connection.request("POST", "/", body=json.dumps({"TableName": "kept", "Item": item}), headers=headers)
        answer = connection.getresponse()
        assert answer.status == 200
        assert answer.getheader("Connection") is None
        answer.read()
        sockets.add(id(connection.sock))
    assert len(sockets) == 1  # one connection served all five
    connection.request("POST", "/", body="{}", headers={**headers, "Connection": "close"})
    answer = connection.getresponse()
    assert answer.getheader("Connection") == "close"
    answer.read()
    query = {
        "TableName": "kept",
        "KeyConditionExpression": "pk = :pk",
        "ExpressionAttributeValues": {":pk": {"S": "T#1"}},
    }
    assert dynamodb(front, "Query", query)[2]["Count"] == 5
