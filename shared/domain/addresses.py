"""Which addresses an HTTP target may point at.

Sundial calls URLs that its clients give it, from inside an AWS account: without a policy a task
could make it call the instance metadata service, a VPC-internal service or the machine itself
(server-side request forgery). :func:`refusal` says why an address is off limits; the HTTP client
checks every address a host name resolves to and then connects to the checked address itself.
"""

from __future__ import annotations

import socket
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address, ip_network

IPAddress = IPv4Address | IPv6Address

METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    ip_address(text)
    for text in (
        "169.254.169.254",  # instance metadata (AWS, Azure, GCP...)
        "fd00:ec2::254",  # AWS instance metadata over IPv6
        "169.254.170.2",  # ECS task metadata and credentials
        "169.254.170.23",  # EKS Pod Identity credentials
        "fd00:ec2::23",
        "100.100.100.200",  # Alibaba Cloud metadata
        "192.0.0.192",  # Oracle Cloud metadata (legacy endpoint)
    )
)
"""Never reachable, whatever the policy allows."""

PRIVATE_NETWORKS: tuple[IPv4Network | IPv6Network, ...] = tuple(
    ip_network(text)
    for text in (
        "10.0.0.0/8",  # RFC 1918
        "172.16.0.0/12",
        "192.168.0.0/16",
        "100.64.0.0/10",  # RFC 6598 shared address space: carrier NAT, and VPC secondary CIDRs
        "fc00::/7",  # unique local addresses
    )
)

_NAT64 = (ip_network("64:ff9b::/96"), ip_network("64:ff9b:1::/48"))


def _embedded_ipv4(address: IPv6Address) -> IPv4Address | None:
    """The IPv4 address an IPv6 address stands for (NAT64, 6to4, Teredo), if any."""
    if any(address in network for network in _NAT64):
        return IPv4Address(int(address) & 0xFFFF_FFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


def _category(address: IPAddress, allow_loopback: bool, allow_private: bool) -> str | None:
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if address.is_loopback:
        return None if allow_loopback else "a loopback address"
    if any(address in network for network in PRIVATE_NETWORKS):
        return None if allow_private else "a private address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_unspecified:
        return "an unspecified address"
    if address.is_reserved:
        return "a reserved address"
    if not address.is_global:
        return "not a public address"
    return None


def refusal(address: IPAddress, *, allow_loopback: bool = False, allow_private: bool = False) -> str | None:
    """Why Sundial must not connect to ``address`` (``"a private address"``...), or ``None``.

    Private ranges (RFC 1918, RFC 6598, fc00::/7) pass only with ``allow_private``, loopback only
    with ``allow_loopback``; metadata endpoints, link-local, multicast, unspecified, reserved and
    other non-global addresses never do. An IPv4-mapped IPv6 address is judged as its IPv4
    address; NAT64, 6to4 and Teredo addresses as themselves and as the IPv4 address inside.
    """
    if isinstance(address, IPv6Address):
        if address.scope_id:
            return "a link-local address"
        if address.ipv4_mapped is not None:
            return _category(address.ipv4_mapped, allow_loopback, allow_private)
        inner = _embedded_ipv4(address)
        if inner is not None:
            reason = _category(inner, allow_loopback, allow_private)
            if reason is not None:
                return reason
    return _category(address, allow_loopback, allow_private)


def parse_address(text: str) -> IPAddress | None:
    """``text`` as an IP address, or ``None`` when it is a host name."""
    try:
        return ip_address(text)
    except ValueError:
        return None


def literal_address(host: str) -> IPAddress | None:
    """The address a URL's host names when it is an IP literal in any form a resolver accepts
    (``169.254.169.254``, ``[fd00:ec2::254]``, ``2852039166``, ``0xa9fea9fe``, ``0251.0376.0251.0376``,
    ``[::ffff:169.254.169.254]``), or ``None`` for a host name."""
    text = host.strip().strip("[]").split("%", 1)[0]
    address = parse_address(text)
    if address is not None:
        return address
    if not text or any(c not in "0123456789abcdefxABCDEFX." for c in text):
        return None
    try:
        return IPv4Address(socket.inet_aton(text))  # the C library's forms: decimal, octal, hex, short
    except OSError:
        return None


def host_as_called(host: str) -> str:
    """The host as Sundial's HTTP client reads it (shared/delivery/http.py): a host beyond ASCII
    goes through Python's ``idna`` codec (IDNA 2003: nameprep maps full-width digits and letters
    to ASCII and every ideographic full stop to a dot), so 169.254.169.254 written in full-width
    digits (U+FF11...) or with ideographic full stops (U+3002) is ``169.254.169.254``.
    ``ValueError`` when it has no IDNA form. Judge a host at registration by what this returns,
    never by the text as written."""
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise ValueError(f"{host!r} has no IDNA form ({exc})") from exc


def is_metadata_literal(host: str) -> bool:
    """Whether a URL's host is a cloud metadata endpoint given as an IP literal (in any form,
    IPv4-mapped and NAT64 included): a target that can never be right."""
    address = literal_address(host)
    if address is None:
        return False
    candidates: list[IPAddress] = [address]
    if isinstance(address, IPv6Address):
        candidates += [a for a in (address.ipv4_mapped, _embedded_ipv4(address)) if a is not None]
    return any(candidate in METADATA_ADDRESSES for candidate in candidates)
