"""The local front doors hand the functions the events AWS hands them, held against AWS's own
recordings (tests/data/aws/, tests/support/recordings.py): API Gateway's proxy event (REST, Lambda
proxy integration) and a function URL's event. Real HTTP requests, sent as python-requests sends
them (the client of the recordings), go to the local runtime's server (local/http_adapter.py) on
loopback, whose functions here only keep the event they are handed."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from local.http_adapter import make_server
from tests.support.recordings import recording, same_shape

pytestmark = pytest.mark.integration

EDGE = ("CloudFront-", "Via", "X-Amz-Cf-Id")
"""Headers CloudFront adds in front of an edge-optimized API, the recordings' kind; the stack's
API is regional (infra/api.py), whose requests pass no CloudFront distribution."""
REQUESTS = {"User-Agent": "python-requests/testing", "Accept-Encoding": "gzip, deflate", "Accept": "*/*"}
"""What python-requests sends with every request (and ``Connection: keep-alive``)."""


class Capture:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        self.events.append(event)
        return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": "{}"}


@pytest.fixture
def front() -> Iterator[tuple[int, Capture, Capture]]:
    gateway, url = Capture(), Capture()
    server = make_server("127.0.0.1", 0, gateway, url)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1], gateway, url
    finally:
        server.shutdown()
        server.server_close()


def send(port: int, method: str, target: str, headers: list[tuple[str, str]], body: bytes | None = None) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
    sent = [("Host", f"127.0.0.1:{port}"), *REQUESTS.items(), ("Connection", "keep-alive"), *headers]
    if body is not None:
        sent.append(("Content-Length", str(len(body))))
    for name, value in sent:
        connection.putheader(name, value)
    connection.endheaders(body)
    response = connection.getresponse()
    response.read()  # all of it: a close with unread bytes resets the connection
    assert response.status == 200
    connection.close()


def regional(recorded: dict[str, Any]) -> dict[str, Any]:
    """The recorded event as a regional API's: without CloudFront's headers."""
    return {
        **recorded,
        **{
            part: {name: value for name, value in recorded[part].items() if not name.startswith(EDGE)}
            for part in ("headers", "multiValueHeaders")
        },
    }


def edge_paths(recorded: dict[str, Any]) -> list[str]:
    """What the recorded event holds as placeholders: the ``X-Forwarded-*`` of its
    ``multiValueHeaders`` (the snapshot suite's transformer replaced those lists by strings), and
    numbers (:data:`NUMBERS`)."""
    paths = [
        f"{part}.{name}"
        for part in ("headers", "multiValueHeaders")
        for name in recorded["headers"]
        if name.startswith(EDGE)
    ]
    return [*paths, *(f"multiValueHeaders.X-Forwarded-{n}" for n in ("For", "Port", "Proto")), *NUMBERS]


NUMBERS = ("requestContext.requestTimeEpoch",)
"""Numbers the recordings hold as placeholders (``"<request-time-epoch>"``): Unix milliseconds, a
number ("Input format of a Lambda function for proxy integration")."""


def header_names(event: dict[str, Any]) -> set[str]:
    return {name for name in event["headers"] if not name.startswith(EDGE)}


def test_a_get_through_the_stage_url_is_the_recorded_event(front: Any) -> None:
    port, gateway, _ = front
    send(port, "GET", "/prod/v1/proxy-value", [("Authorization", "random-value"), ("tEsT-HEADeR", "aValUE")])
    event, recorded = gateway.events[0], recording("apigateway-proxy-event-get")
    assert same_shape(event, regional(recorded), ignore=edge_paths(recorded)) == []
    assert header_names(event) == header_names(recorded)  # Connection dropped, the edge's added
    assert event["multiValueHeaders"]["tEsT-HEADeR"] == ["aValUE"]
    # the stage only in requestContext.path, as recorded ("/proxy-value" and "/stage/proxy-value")
    assert (event["path"], event["requestContext"]["path"]) == ("/v1/proxy-value", "/prod/v1/proxy-value")
    assert recorded["requestContext"]["path"] == f"/{recorded['requestContext']['stage']}{recorded['path']}"
    assert event["body"] is None
    assert event["isBase64Encoded"] is False


def test_a_post_with_a_body_arrives_without_its_content_length(front: Any) -> None:
    """The recorded POST was sent with ``Content-Length`` (python-requests sends it with every
    body): AWS handed the function none. SigV4 verification depends on it (shared/domain/sigv4.py)."""
    port, gateway, _ = front
    body = json.dumps({"message": "hello world"}).encode()
    query = "category=electronics&category=books&price=10&price=20&price=30"
    headers = [("Authorization", "Bearer token123;API key456"), ("Content-Type", "application/json;charset=utf-8")]
    send(port, "POST", f"/prod/v1/proxy-value?{query}", headers, body)
    event, recorded = gateway.events[0], recording("apigateway-proxy-event-post-body")
    assert same_shape(event, regional(recorded), ignore=[*edge_paths(recorded), "body"]) == []
    assert header_names(event) == header_names(recorded)
    assert not {"content-length", "connection"} & {name.lower() for name in event["multiValueHeaders"]}
    assert json.loads(event["body"]) == recorded["body"]  # the suite parsed the echoed body
    assert event["queryStringParameters"] == recorded["queryStringParameters"]  # each name's last value
    assert event["multiValueQueryStringParameters"] == recorded["multiValueQueryStringParameters"]


def test_the_path_keeps_the_encodings_aws_keeps(front: Any) -> None:
    port, gateway, _ = front
    sent = "/api/user/test%2Balias@gmail.com/plus/test+alias@gmail.com"
    send(port, "GET", f"/prod/v1/proxy-value{sent}", [])
    event, recorded = gateway.events[0], recording("apigateway-proxy-event-encoded-path")
    assert recorded["path"] == f"/proxy-value{sent}"  # %2B as sent, in all three places
    assert event["path"] == f"/v1/proxy-value{sent}"
    assert event["requestContext"]["path"] == f"/prod/v1/proxy-value{sent}"
    assert event["pathParameters"] == {"proxy": f"proxy-value{sent}"}
    assert recorded["pathParameters"] == {"proxy": f"proxy-value{sent}"}
    send(port, "GET", "/v1/tasks/caf%C3%A9%20au%20lait", [])  # beyond ASCII and a space: decoded
    assert gateway.events[1]["path"] == "/v1/tasks/café au lait"


def test_a_path_without_the_stage_is_a_custom_domain_s(front: Any) -> None:
    port, gateway, _ = front
    send(port, "GET", "/v1/tasks?limit=5", [])
    event = gateway.events[0]
    assert (event["path"], event["requestContext"]["path"]) == ("/v1/tasks", "/v1/tasks")
    assert (event["resource"], event["pathParameters"]) == ("/v1/{proxy+}", {"proxy": "tasks"})


def test_a_sigv4_authorization_never_reaches_the_function(front: Any) -> None:
    """AWS's recording of a SigV4-signed call to a method without authorization: its date and
    session token reached the function, its ``Authorization`` did not."""
    port, gateway, _ = front
    recorded = recording("apigateway-proxy-event-signed-call")
    assert "Authorization" not in recorded["headers"]
    assert {"x-amz-date", "X-Amz-Security-Token"} <= set(recorded["headers"])
    signature = (
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261129/us-east-1/execute-api/aws4_request, "
        "SignedHeaders=host;x-amz-date;x-amz-security-token, Signature=" + "0" * 64
    )
    signed = [("Authorization", signature), ("x-amz-date", "20261129T000000Z"), ("X-Amz-Security-Token", "t")]
    send(port, "POST", "/prod/v1/test", [*signed, ("Content-Type", "application/json")], b"{}")
    send(port, "GET", "/prod/v1/test", [("Authorization", "Bearer sk_live_kept")])
    names = {name.lower() for name in gateway.events[0]["multiValueHeaders"]}
    assert "authorization" not in names
    assert {"x-amz-date", "x-amz-security-token"} <= names
    assert gateway.events[1]["headers"]["Authorization"] == "Bearer sk_live_kept"


def test_a_header_sent_twice_keeps_its_last_value_and_all_its_values(front: Any) -> None:
    """Not in a recording: "Working with multi-value headers" (API Gateway developer guide) says
    ``headers`` keeps a repeated header's last value and ``multiValueHeaders`` every one."""
    port, gateway, _ = front
    send(port, "GET", "/prod/v1/tasks", [("X-Team", "orders"), ("X-Team", "billing")])
    event = gateway.events[0]
    assert event["headers"]["X-Team"] == "billing"
    assert event["multiValueHeaders"]["X-Team"] == ["orders", "billing"]


def test_a_function_url_hands_on_what_aws_records(front: Any) -> None:
    """The recorded request to a function URL (an echo of its event's parts): names lowercased,
    ``content-length`` kept, ``connection`` not, the path as sent, a repeated query parameter's
    values joined by commas. `make run`'s URL is the API's address with ``/scheduler``."""
    port, _, url = front
    body = json.dumps({"foo": "bar"}).encode()
    headers = [("content-type", "application/json"), ("ExTrA-HeadErs", "With WeiRd CapS"), ("user-agent", "test/echo")]
    send(port, "POST", "/scheduler/pa2%Fth/1?q=query&multiQuery=foo&multiQuery=%2Fbar", headers, body)
    event, recorded = url.events[0], recording("lambda-function-url-echo")
    tls = {"x-amzn-tls-cipher-suite", "x-amzn-tls-version"}  # HTTPS only: make run's URL is plain HTTP
    assert set(event["headers"]) == set(recorded["headers"]) - tls
    assert event["headers"]["extra-headers"] == recorded["headers"]["extra-headers"]
    assert event["headers"]["content-length"] == recorded["headers"]["content-length"]
    assert event["requestContext"]["http"]["path"] == f"/scheduler{recorded['path']}"
    assert event["requestContext"]["http"]["method"] == recorded["method"]
    assert event["queryStringParameters"] == recorded["args"]
    assert json.loads(event["body"]) == recorded["data"]
    assert event["rawQueryString"] == "q=query&multiQuery=foo&multiQuery=%2Fbar"
