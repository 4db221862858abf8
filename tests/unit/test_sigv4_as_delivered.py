"""Signatures as the EventBridge Scheduler API's front doors deliver them to the function: API
Gateway's proxy event (no ``Content-Length``, a repeated header's values in
``multiValueHeaders`` and only its last one in ``headers``: local/apigw.py, held against AWS's
recordings by tests/integration/test_gateway_as_recorded.py) and a function URL's event (names
lowercased, a repeated header's values joined by commas: local/function_url.py). Two signers are
the oracles: botocore (boto3, the AWS CLI: signs ``content-type;host;x-amz-date``) and
aws-sdk-go-v2 under Terraform's provider, whose real request is kept in
tests/data/clients/terraform-create-schedule-request.json (it signs ``content-length`` too, whenever a
request has a body). Each verifies as delivered; a changed body, another secret, a stale date or
another Region is refused."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest, AWSResponse
from botocore.credentials import Credentials

from functions.api.scheduler import Signed, from_gateway, from_url
from local.apigw import proxy_event
from local.function_url import url_event
from shared.api import scheduler_protocol as protocol
from shared.domain.sigv4 import SignatureRefused, verify

pytestmark = pytest.mark.unit

TERRAFORM = Path(__file__).resolve().parents[1] / "data" / "clients" / "terraform-create-schedule-request.json"
"""A real request of Terraform's provider, as it arrived at a loopback server (its ``_source`` says
how it was captured, and with which made-up credentials)."""


def captured() -> dict[str, Any]:
    kept: dict[str, Any] = json.loads(TERRAFORM.read_text())
    return kept


KEY_ID, SECRET = "AKSDSIGNEDFORATEST00", "a-secret-for-this-test-only"


class _Raw:
    def stream(self, **_: Any) -> Any:
        yield b"{}"


def terraform_request() -> tuple[str, str, list[tuple[str, str]], bytes]:
    """Terraform's CreateSchedule as it arrived: method, path as sent, headers in order, body."""
    sent = captured()
    return sent["method"], sent["path"], [tuple(h) for h in sent["headers"]], sent["body"].encode()


def botocore_request(
    endpoint: str = "http://127.0.0.1:8080/scheduler",
) -> tuple[str, str, list[tuple[str, str]], bytes]:
    """A CreateSchedule as boto3's ``scheduler`` client signs it, with the headers http.client
    adds when it sends (``Host``, ``Content-Length``)."""
    client = boto3.client(
        "scheduler",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=KEY_ID,
        aws_secret_access_key=SECRET,
    )
    kept: list[Any] = []

    def keep(request: Any, **_: Any) -> AWSResponse:
        kept.append(request)
        return AWSResponse(request.url, 200, {}, _Raw())

    client.meta.events.register("before-send", keep)
    client.create_schedule(
        Name="nightly",
        ScheduleExpression="cron(0 2 * * ? *)",
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={"Arn": "arn:aws:sqs:us-east-1:123456789012:q", "RoleArn": "arn:aws:iam::123456789012:role/r"},
    )
    request = kept[0]
    url = urlsplit(request.url)
    headers = [(k, v.decode() if isinstance(v, bytes) else v) for k, v in request.headers.items()]
    body = request.body if isinstance(request.body, bytes) else request.body.encode()
    return request.method, url.path, [("Host", url.netloc), *headers, ("Content-Length", str(len(body)))], body


def through_gateway(request: tuple[str, str, list[tuple[str, str]], bytes], **change: Any) -> Signed:
    """The request as API Gateway hands it on, were the SigV4 ``Authorization`` handed on (AWS's
    recordings say it is not: local/apigw.py). A path that begins with the stage was sent to the
    API's own URL; any other, to a custom domain."""
    method, path, headers, body = request
    staged = path.startswith("/prod/")
    event = proxy_event(
        method, path, None, headers, change.get("body", body), stage_in_path=staged, drop_signature=False
    )
    return from_gateway(event)


def through_url(request: tuple[str, str, list[tuple[str, str]], bytes], **change: Any) -> Signed:
    method, path, headers, body = request
    return from_url(url_event(method, path, "", headers, change.get("body", body)))


def signed_at(request: tuple[str, str, list[tuple[str, str]], bytes]) -> datetime:
    stamp = next(v for k, v in request[2] if k.lower() == "x-amz-date")
    return datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)


def check(signed: Signed, secret: str, now: datetime, region: str = "us-east-1") -> tuple[str, str]:
    operation, members = protocol.route(signed.method, signed.route_path)
    return verify(
        method=signed.method,
        wire_path=signed.wire_path(operation, members),
        query=signed.query,
        headers=signed.headers,
        body=signed.body or b"",
        secret_of=lambda key: secret,
        now=now,
        service=protocol.SERVICE,
        region=region,
    )


def credentials(request: tuple[str, str, list[tuple[str, str]], bytes]) -> tuple[str, str]:
    if request[1] == captured()["path"] and request[3] == captured()["body"].encode():
        kept = captured()["_source"]["credentials"]
        return kept["access_key_id"], kept["secret_access_key"]
    return KEY_ID, SECRET


def botocore_through_the_stage() -> tuple[str, str, list[tuple[str, str]], bytes]:
    return botocore_request("https://abc123.execute-api.us-east-1.amazonaws.com/prod/scheduler")


SIGNERS = {
    "aws-sdk-go-v2 (Terraform)": terraform_request,
    "botocore": botocore_request,
    "botocore, the stage's URL": botocore_through_the_stage,
}
DOORS = {"API Gateway": through_gateway, "function URL": through_url}
PAIRS = [(signer, door) for signer in SIGNERS for door in DOORS if not (door == "function URL" and "stage" in signer)]
"""Each signer through each door (a function URL has no stage in its paths)."""


@pytest.mark.parametrize(("signer", "door"), PAIRS)
def test_each_signer_verifies_through_each_door(signer: str, door: str) -> None:
    request = SIGNERS[signer]()
    key_id, secret = credentials(request)
    assert check(DOORS[door](request), secret, signed_at(request)) == (key_id, "us-east-1")


def test_terraform_signs_the_content_length_api_gateway_drops() -> None:
    request = terraform_request()
    authorization = next(v for k, v in request[2] if k == "Authorization")
    assert "content-length" in authorization.split("SignedHeaders=")[1].split(",")[0].split(";")
    event = proxy_event(*request[:2], None, request[2], request[3], drop_signature=False)
    assert not any(name.lower() == "content-length" for name in event["multiValueHeaders"])


@pytest.mark.parametrize(("signer", "door"), PAIRS)
def test_anything_signed_changed_is_refused(signer: str, door: str) -> None:
    request = SIGNERS[signer]()
    _, secret = credentials(request)
    now = signed_at(request)
    tampered = request[3].replace(b"rate", b"RATE").replace(b"cron", b"CRON")
    refusals = {
        "body": lambda: check(DOORS[door](request, body=tampered), secret, now),
        "secret": lambda: check(DOORS[door](request), secret + "x", now),
        "stale": lambda: check(DOORS[door](request), secret, now + timedelta(minutes=6)),
        "region": lambda: check(DOORS[door](request), secret, now, region="eu-west-3"),
    }
    for what, attempt in refusals.items():
        with pytest.raises(SignatureRefused) as refused:
            attempt()
        assert refused.value.code == "InvalidSignatureException", what
    with pytest.raises(SignatureRefused, match="scoped to a valid region, not 'us-east-1'"):
        refusals["region"]()


def test_a_header_sent_twice_is_signed_and_verified_with_all_its_values() -> None:
    """botocore signs a repeated header's values joined by commas (as SigV4's canonical form
    wants); API Gateway's ``headers`` keeps only the last value, its ``multiValueHeaders`` all."""
    body = b'{"Name": "twice"}'
    request = AWSRequest(
        method="POST", url="http://127.0.0.1:8080/scheduler/schedule-groups/twice", data=body, headers={}
    )
    request.headers["X-Amz-Meta-Team"] = "orders"
    request.headers["X-Amz-Meta-Team"] = "billing"  # HTTPHeaders adds a second value
    request.headers["Content-Type"] = "application/json"
    SigV4Auth(Credentials(KEY_ID, SECRET), "scheduler", "us-east-1").add_auth(request)
    assert "x-amz-meta-team" in request.headers["Authorization"]
    headers = [("Host", "127.0.0.1:8080"), *((k, v) for k, v in request.headers.items())]
    sent = ("POST", "/scheduler/schedule-groups/twice", [(k, str(v)) for k, v in headers], body)
    now = signed_at(sent)
    gateway = through_gateway(sent)
    assert check(gateway, SECRET, now) == (KEY_ID, "us-east-1")
    assert check(through_url(sent), SECRET, now) == (KEY_ID, "us-east-1")
    only_last = [(k, v) for k, v in sent[2] if not (k == "X-Amz-Meta-Team" and v == "orders")]
    with pytest.raises(SignatureRefused):
        check(through_gateway((*sent[:2], only_last, body)), SECRET, now)


def test_the_query_string_is_read_as_each_door_hands_it_on() -> None:
    client = boto3.client(
        "scheduler",
        endpoint_url="http://127.0.0.1:8080/scheduler",
        region_name="us-east-1",
        aws_access_key_id=KEY_ID,
        aws_secret_access_key=SECRET,
    )
    kept: list[Any] = []
    client.meta.events.register(
        "before-send", lambda request, **_: kept.append(request) or AWSResponse(request.url, 200, {}, _Raw())
    )
    client.list_schedules(GroupName="billing", NamePrefix="a b+c", MaxResults=10)
    request = kept[0]
    url = urlsplit(request.url)
    headers = [
        ("Host", url.netloc),
        *((k, v.decode() if isinstance(v, bytes) else v) for k, v in request.headers.items()),
    ]
    now = signed_at(("GET", url.path, headers, b""))
    event = proxy_event("GET", url.path, parse_qs(url.query), headers, None, drop_signature=False)
    assert check(from_gateway(event), SECRET, now) == (KEY_ID, "us-east-1")
    assert check(from_url(url_event("GET", url.path, url.query, headers, None)), SECRET, now) == (KEY_ID, "us-east-1")
