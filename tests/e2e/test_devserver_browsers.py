"""A web page the developer opens cannot use `make run` (local/browser_guard.py), over the
runtime's own HTTP server: a simple cross-site POST (a form, a no-cors fetch) registers nothing,
a DNS-rebound page reads nothing, and the console, the CLI and curl go on as before."""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.e2e.conftest import Client
from tests.support.eventually import eventually

pytestmark = pytest.mark.e2e

SPEC = {"name": "from-a-page", "schedule": {"after_seconds": 3600}, "target": {"http": {"url": "http://10.0.0.5/"}}}


def send(sundial: Client, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> tuple[int, Any]:
    """A request as a browser (or curl) writes it: every header as given, ``Host`` included."""
    parts = urlsplit(sundial.base)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.putheader("Content-Length", str(len(body or b"")))
        connection.endheaders(body)
        answer = connection.getresponse()
        text = answer.read()
        return answer.status, json.loads(text) if text else None
    finally:
        connection.close()


def names(sundial: Client) -> list[str]:
    status, page = sundial.call("GET", "/v1/tasks?limit=100")
    assert status == 200
    return [task.get("name") for task in page["items"]]


def test_a_foreign_pages_simple_post_registers_nothing(sundial: Client) -> None:
    host = urlsplit(sundial.base).netloc
    body = json.dumps(SPEC).encode()
    status, answer = send(
        sundial,
        "POST",
        "/v1/tasks",
        body,
        {"Host": host, "Origin": "https://evil.example", "Content-Type": "text/plain"},
    )
    assert (status, answer["error"]["code"]) == (403, "origin_not_allowed")
    # a browser that sends no Origin on it: the body is not JSON by its type, and is not read
    status, answer = send(sundial, "POST", "/v1/tasks", body, {"Host": host, "Content-Type": "text/plain"})
    assert (status, answer["error"]["code"]) == (415, "unsupported_media_type")
    form = b"schedule=x"
    status, _ = send(
        sundial, "POST", "/v1/tasks", form, {"Host": host, "Content-Type": "application/x-www-form-urlencoded"}
    )
    assert status == 415
    assert "from-a-page" not in names(sundial)


def test_a_dns_rebound_page_reads_nothing(sundial: Client) -> None:
    port = urlsplit(sundial.base).port
    status, answer = send(sundial, "GET", "/v1/tasks", None, {"Host": f"rebound.attacker.example:{port}"})
    assert (status, answer["error"]["code"]) == (403, "host_not_allowed")
    assert "items" not in answer


def test_the_console_the_cli_and_curl_are_served_as_before(sundial: Client) -> None:
    parts = urlsplit(sundial.base)
    body = json.dumps({**SPEC, "name": "from-the-console"}).encode()
    json_type = {"Content-Type": "application/json"}
    console = {"Host": parts.netloc, "Origin": f"http://{parts.netloc}", **json_type}
    assert send(sundial, "POST", "/v1/tasks", body, console)[0] == 201
    for host in (f"localhost:{parts.port}", f"[::1]:{parts.port}"):
        assert send(sundial, "GET", "/v1/tasks?limit=1", None, {"Host": host})[0] == 200
    assert (
        send(
            sundial,
            "POST",
            "/v1/tasks",
            json.dumps({**SPEC, "name": "from-curl"}).encode(),
            {"Host": parts.netloc, **json_type},
        )[0]
        == 201
    )

    def listed() -> None:  # the list's index has them a moment later
        assert {"from-the-console", "from-curl"} <= set(names(sundial))

    eventually(listed)
