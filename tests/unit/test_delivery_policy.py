"""The address policy, and the refusals the HTTP client makes before it connects anywhere."""

from __future__ import annotations

import datetime as dt
import socket
from ipaddress import IPv4Address, IPv6Address, ip_address
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.delivery import Envelope, HttpDelivery
from shared.domain.addresses import refusal
from shared.domain.tasks import HttpTarget

pytestmark = pytest.mark.unit

ENVELOPE = Envelope("tsk_1", "run_1", dt.datetime(2026, 1, 1, tzinfo=dt.UTC), dt.datetime(2026, 1, 1, tzinfo=dt.UTC), 1)


def check(text: str, **allow: bool) -> str | None:
    return refusal(ip_address(text), **allow)


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("93.184.216.34", None),
        ("8.8.8.8", None),
        ("2606:4700:4700::1111", None),
        ("10.0.0.5", "a private address"),
        ("172.16.0.1", "a private address"),
        ("172.31.255.255", "a private address"),
        ("192.168.1.1", "a private address"),
        ("100.64.0.1", "a private address"),
        ("fd12:3456::1", "a private address"),
        ("127.0.0.1", "a loopback address"),
        ("127.9.9.9", "a loopback address"),
        ("::1", "a loopback address"),
        ("169.254.1.1", "a link-local address"),
        ("fe80::1", "a link-local address"),
        ("169.254.169.254", "a cloud metadata address"),
        ("169.254.170.2", "a cloud metadata address"),
        ("fd00:ec2::254", "a cloud metadata address"),
        ("100.100.100.200", "a cloud metadata address"),
        ("224.0.0.1", "a multicast address"),
        ("ff02::1", "a multicast address"),
        ("0.0.0.0", "an unspecified address"),
        ("::", "an unspecified address"),
        ("240.0.0.1", "a reserved address"),
        ("192.0.2.10", "not a public address"),
        ("198.18.0.1", "not a public address"),
        ("2001:db8::1", "not a public address"),
        ("::ffff:10.0.0.5", "a private address"),
        ("::ffff:169.254.169.254", "a cloud metadata address"),
        ("::ffff:127.0.0.1", "a loopback address"),
        ("64:ff9b::a9fe:a9fe", "a cloud metadata address"),
        ("64:ff9b::a00:5", "a private address"),
        ("2002:a00:5::1", "a private address"),
    ],
)
def test_the_policy(address: str, reason: str | None) -> None:
    assert check(address) == reason


def test_loopback_and_private_ranges_open_only_with_their_flag() -> None:
    assert check("127.0.0.1", allow_loopback=True) is None
    assert check("::1", allow_loopback=True) is None
    assert check("10.0.0.5", allow_loopback=True) == "a private address"
    assert check("10.0.0.5", allow_private=True) is None
    assert check("fd12::1", allow_private=True) is None
    assert check("127.0.0.1", allow_private=True) == "a loopback address"


@pytest.mark.parametrize("address", ["169.254.169.254", "fd00:ec2::254", "100.100.100.200", "::ffff:169.254.169.254"])
def test_metadata_endpoints_are_never_allowed(address: str) -> None:
    assert check(address, allow_loopback=True, allow_private=True) == "a cloud metadata address"


@pytest.mark.parametrize("address", ["169.254.1.1", "fe80::1", "0.0.0.0", "224.0.0.251", "240.0.0.1"])
def test_link_local_multicast_unspecified_and_reserved_are_never_allowed(address: str) -> None:
    assert check(address, allow_loopback=True, allow_private=True) is not None


@given(
    st.ip_addresses(network="10.0.0.0/8")
    | st.ip_addresses(network="192.168.0.0/16")
    | st.ip_addresses(network="fc00::/7")
)
def test_every_private_address_is_refused(address: IPv4Address | IPv6Address) -> None:
    assert refusal(address) is not None
    assert refusal(address, allow_private=True) in (None, "a cloud metadata address")


@given(st.ip_addresses(v=4))
def test_an_ipv4_address_and_its_mapped_form_get_the_same_answer(address: IPv4Address) -> None:
    mapped = IPv6Address(f"::ffff:{address}")
    assert refusal(mapped) == refusal(address)
    assert refusal(mapped, allow_loopback=True, allow_private=True) == refusal(
        address, allow_loopback=True, allow_private=True
    )


# --- the client refuses before connecting ------------------------------------------------------


def resolving(*addresses: str) -> Any:
    calls: list[tuple[Any, ...]] = []

    def resolve(host: str, port: int, *args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
        calls.append((host, port))
        return [
            (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in addresses
        ]

    resolve.calls = calls  # type: ignore[attr-defined]
    return resolve


def failing_resolver(host: str, port: int, *args: Any, **kwargs: Any) -> Any:
    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


@pytest.mark.parametrize(
    ("addresses", "error"),
    [
        (["10.0.0.5"], "refused: hook.example resolves to 10.0.0.5, a private address"),
        (["169.254.169.254"], "refused: hook.example resolves to 169.254.169.254, a cloud metadata address"),
        (["169.254.10.10"], "refused: hook.example resolves to 169.254.10.10, a link-local address"),
        (["127.0.0.1"], "refused: hook.example resolves to 127.0.0.1, a loopback address"),
        (["fd00:ec2::254"], "refused: hook.example resolves to fd00:ec2::254, a cloud metadata address"),
        (["93.184.216.34", "10.0.0.7"], "refused: hook.example resolves to 10.0.0.7, a private address"),
        (["2606:4700::1", "::1"], "refused: hook.example resolves to ::1, a loopback address"),
    ],
)
def test_a_host_resolving_to_any_forbidden_address_is_refused(addresses: list[str], error: str) -> None:
    resolver = resolving(*addresses)
    outcome = HttpDelivery(resolver=resolver).call(HttpTarget("https://hook.example/path"), ENVELOPE)

    assert outcome.final
    assert outcome.error == error
    assert outcome.status is None
    assert resolver.calls == [("hook.example", 443)]


def test_metadata_is_refused_even_with_loopback_and_private_allowed() -> None:
    delivery = HttpDelivery(allow_loopback=True, allow_private=True, resolver=resolving("169.254.169.254"))
    outcome = delivery.call(HttpTarget("http://metadata.google.internal/computeMetadata/v1/"), ENVELOPE)
    assert outcome.final
    assert outcome.error is not None
    assert "metadata" in outcome.error


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("http://169.254.169.254/latest/meta-data/", "refused: 169.254.169.254 is a cloud metadata address"),
        ("http://10.0.0.5:8080/hook", "refused: 10.0.0.5 is a private address"),
        ("http://[fd00:ec2::254]/", "refused: fd00:ec2::254 is a cloud metadata address"),
        ("http://[::ffff:127.0.0.1]/", "refused: ::ffff:7f00:1 is a loopback address"),
        ("http://[fe80::1%25eth0]/", "refused: fe80::1%25eth0 is a link-local address"),
        ("http://0.0.0.0:8080/", "refused: 0.0.0.0 is an unspecified address"),
    ],
)
def test_ip_literals_are_checked_without_a_lookup(url: str, error: str) -> None:
    resolver = resolving("93.184.216.34")
    outcome = HttpDelivery(resolver=resolver).call(HttpTarget(url), ENVELOPE)

    assert outcome.final
    assert outcome.error == error
    assert resolver.calls == []


def test_numeric_host_spellings_are_resolved_and_checked() -> None:
    """``http://2130706433/`` is 127.0.0.1 to the system resolver: it is judged by what it resolves to."""
    outcome = HttpDelivery().call(HttpTarget("http://2130706433/"), ENVELOPE)
    assert outcome.final
    assert outcome.error == "refused: 2130706433 resolves to 127.0.0.1, a loopback address"


def test_a_failed_lookup_is_retried() -> None:
    outcome = HttpDelivery(resolver=failing_resolver).call(HttpTarget("https://nowhere.example/"), ENVELOPE)
    assert outcome.retryable
    assert outcome.error == "DNS lookup failed for nowhere.example: Name or service not known"


def test_a_lookup_without_addresses_is_retried() -> None:
    outcome = HttpDelivery(resolver=resolving()).call(HttpTarget("https://empty.example/"), ENVELOPE)
    assert outcome.retryable
    assert outcome.error == "DNS lookup for empty.example found no address"


@pytest.mark.parametrize(
    "url", ["ftp://example.com/file", "file:///etc/passwd", "http:///path", "http://example.com:99999/"]
)
def test_urls_that_cannot_be_called_fail_at_once(url: str) -> None:
    outcome = HttpDelivery(resolver=resolving("93.184.216.34")).call(HttpTarget(url), ENVELOPE)
    assert outcome.final
    assert outcome.error is not None
    assert outcome.error.startswith("invalid URL")


def test_a_header_with_a_line_break_fails_at_once() -> None:
    target = HttpTarget("http://10.0.0.5/", headers={"X-Evil": "a\r\nHost: other"})
    delivery = HttpDelivery(allow_private=True, resolver=resolving("10.0.0.5"))
    outcome = delivery.call(target, ENVELOPE)
    assert outcome.final
    assert outcome.error == "invalid request: a header value has a line break"


def test_negative_limits_are_rejected() -> None:
    with pytest.raises(ValueError, match="negative"):
        HttpDelivery(max_response_bytes=-1)
