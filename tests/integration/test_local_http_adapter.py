"""The local API Gateway (local/http_adapter.py): the methods of the API's ANY proxy method reach
the function; any other method is answered 405 in the API's error format, never with http.server's
HTML 501, and the connection stays usable."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

from local.http_adapter import FORWARDED, make_server

pytestmark = pytest.mark.integration

FUZZED_ID = "\x13\U0006ff81\x8b\xb8\U00013f1e\U000f9451\U00057181\xa0"
"""A task id schemathesis sent percent-encoded (66 characters encoded, 8 decoded)."""


@pytest.fixture
def adapter() -> Iterator[tuple[int, list[dict[str, Any]]]]:
    events: list[dict[str, Any]] = []

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        events.append(event)
        return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": '{"ok": true}'}

    server = make_server("127.0.0.1", 0, handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], events
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("method", ["TRACE", "QUERY", "CONNECT", "BREW"])
def test_a_method_api_gateway_does_not_forward_is_405_in_the_error_format(adapter, method: str) -> None:
    port, events = adapter
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    connection.request(method, "/v1/tasks", body=b'{"a": 1}', headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    body = json.loads(response.read())
    assert response.status == 405
    assert response.getheader("Content-Type") == "application/json"
    assert set(response.getheader("Allow", "").split(", ")) == set(FORWARDED)
    assert body["error"]["code"] == "method_not_allowed"
    assert method in body["error"]["message"]
    assert events == []
    # the same connection still serves the next request
    connection.request("GET", "/v1/tasks")
    again = connection.getresponse()
    assert again.status == 200
    assert json.loads(again.read()) == {"ok": True}
    connection.close()


@pytest.mark.parametrize("method", FORWARDED)
def test_the_any_methods_reach_the_function(adapter, method: str) -> None:
    port, events = adapter
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    connection.request(method, "/v1/tasks?limit=1")
    response = connection.getresponse()
    raw = response.read()
    assert response.status == 200
    assert raw == (b"" if method == "HEAD" else b'{"ok": true}')
    assert response.getheader("Content-Length") == str(len(b'{"ok": true}'))
    assert [(e["httpMethod"], e["path"], e["queryStringParameters"]) for e in events] == [
        (method, "/v1/tasks", {"limit": "1"})
    ]
    connection.close()


def raw_exchange(port: int, head: str) -> bytes:
    """Send ``head`` as it is (http.client would not send a bad Content-Length) and read the
    answer until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(head.encode("latin-1"))
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize(
    ("length", "status", "code"),
    [
        ("abc", 400, "bad_request"),
        ("-1", 400, "bad_request"),
        ("1e3", 400, "bad_request"),
        (" 12x", 400, "bad_request"),
        ("99999999999", 413, "payload_too_large"),
    ],
)
def test_a_content_length_that_is_not_a_number_of_bytes_is_answered_and_the_server_serves_on(
    adapter, length: str, status: int, code: str
) -> None:
    """``abc`` dropped the connection with a traceback and ``-1`` hung it: each is now an answer in
    the API's error format (the connection closes: where the body ends is unknown), before the
    function, and the next connection is served."""
    port, events = adapter
    answer = raw_exchange(port, f"POST /v1/tasks HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n{{}}")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(f"HTTP/1.1 {status} ".encode()), answer
    assert b"Connection: close" in head
    assert json.loads(body)["error"]["code"] == code
    assert events == []
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    connection.request("GET", "/v1/tasks")
    assert connection.getresponse().status == 200
    connection.close()


def test_the_function_gets_the_path_percent_decoded_as_api_gateway_hands_it_on(adapter) -> None:
    port, events = adapter
    task_id = FUZZED_ID
    encoded = urllib.parse.quote(task_id, safe="")
    assert len(task_id) == 8
    assert len(encoded) > 64
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    connection.request("DELETE", f"/v1/tasks/{encoded}?name=a%20b")
    response = connection.getresponse()
    response.read()
    connection.close()
    assert response.status == 200
    (event,) = events
    assert event["path"] == f"/v1/tasks/{task_id}"
    assert event["pathParameters"] == {"proxy": f"tasks/{task_id}"}
    assert event["queryStringParameters"] == {"name": "a b"}


def test_a_task_id_of_eight_encoded_characters_is_not_found_not_too_long(api) -> None:
    """Through the API function: the id's maxLength (64) counts its characters, as the OpenAPI
    document says, not the characters of its percent-encoding."""
    answer = api("DELETE", f"/v1/tasks/{FUZZED_ID}")
    assert answer.status == 404, answer.body
