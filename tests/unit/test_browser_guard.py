"""What a web page may not do to `make run` (local/browser_guard.py): each rule at its edges."""

from __future__ import annotations

import json

import pytest

from local.browser_guard import is_loopback_name, refusal

pytestmark = pytest.mark.unit

HOST = ("Host", "127.0.0.1:8080")
BODY = b'{"schedule": {"after_seconds": 60}}'


def code(answer: tuple[int, list[tuple[str, str]], bytes] | None) -> tuple[int, str] | None:
    return None if answer is None else (answer[0], json.loads(answer[2])["error"]["code"])


@pytest.mark.parametrize(
    ("name", "loopback"),
    [
        ("localhost", True),
        ("LOCALHOST.", True),
        ("app.localhost", True),  # RFC 6761: every name under .localhost is loopback
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("localhost.example.com", False),
        ("attacker.example", False),
        ("10.0.0.5", False),
        ("0.0.0.0", False),
        ("", False),
        (None, False),
    ],
)
def test_a_loopback_name_is_localhost_its_subdomains_or_a_loopback_address(name, loopback) -> None:
    assert is_loopback_name(name) is loopback


@pytest.mark.parametrize(
    ("host", "answer"),
    [
        ("127.0.0.1:8080", None),
        ("localhost:8080", None),
        ("[::1]:8080", None),
        ("localhost", None),
        ("rebound.attacker.example:8080", (403, "host_not_allowed")),  # DNS rebinding
        ("192.168.1.20:8080", (403, "host_not_allowed")),
        ("[::1", (403, "host_not_allowed")),  # not a name at all
    ],
)
def test_only_a_loopback_host_is_served(host, answer) -> None:
    assert code(refusal("GET", [("Host", host)], None)) == answer


def test_a_request_without_a_host_is_refused() -> None:
    assert code(refusal("GET", [], None)) == (403, "host_not_allowed")


@pytest.mark.parametrize(
    ("origin", "answer"),
    [
        ("http://127.0.0.1:8080", None),  # the console's own pages
        ("http://localhost:3000", None),  # a page served from this machine
        ("https://evil.example", (403, "origin_not_allowed")),
        ("http://127.0.0.1.evil.example", (403, "origin_not_allowed")),
        ("null", (403, "origin_not_allowed")),  # a sandboxed frame, a file: page
        ("file://", (403, "origin_not_allowed")),
    ],
)
def test_a_browsers_origin_must_be_this_machines(origin, answer) -> None:
    headers = [HOST, ("Origin", origin), ("Content-Type", "application/json")]
    assert code(refusal("POST", headers, BODY)) == answer
    assert code(refusal("GET", [HOST, ("Origin", origin)], None)) == answer


@pytest.mark.parametrize(
    ("content_type", "answer"),
    [
        ("application/json", None),
        ("application/json; charset=utf-8", None),
        ("Application/JSON", None),
        ("application/merge-patch+json", None),
        ("text/plain", (415, "unsupported_media_type")),  # a fetch in no-cors mode
        ("application/x-www-form-urlencoded", (415, "unsupported_media_type")),  # a form
        ("multipart/form-data; boundary=x", (415, "unsupported_media_type")),
        (None, (415, "unsupported_media_type")),
    ],
)
def test_a_keyless_write_with_a_body_must_be_json(content_type, answer) -> None:
    headers = [HOST] + ([("Content-Type", content_type)] if content_type else [])
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        assert code(refusal(method, headers, BODY)) == answer
    assert refusal("POST", headers, None) is None  # no body: nothing to read as JSON
    assert refusal("GET", headers, BODY) is None
    signed = [*headers, ("Authorization", "Bearer sk_x")]  # a client with a key: no page's simple request
    assert refusal("POST", signed, BODY) is None
