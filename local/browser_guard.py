"""What a web page the developer opens may not do to `make run`.

The development server listens on loopback and, without a key, acts as the default tenant. A
browser lets any page send it "simple" cross-origin requests (a form's POST, a ``fetch`` in
``no-cors`` mode with a ``text/plain`` body: "Cross-Origin Resource Sharing", the Fetch standard's
CORS-safelisted methods and request headers); the page cannot read the answer, but the write is
done: a task that calls the developer's local or LAN services, or the virtual clock moved. And a
page whose own name the attacker re-points at 127.0.0.1 (DNS rebinding) is same-origin with the
server in the browser's eyes, and reads the answers too.

So, before a request reaches the API, the scheduler URL or the clock's routes:

- ``Host`` must name the loopback interface (``localhost`` and its subdomains, RFC 6761; a
  loopback address, ``127.0.0.1`` or ``[::1]``, any port): a rebinding page's requests carry its
  own name (403 ``host_not_allowed``).
- ``Origin``, when a browser sends it, must be a loopback origin too (the console's own, or a
  page served from this machine); a foreign one, or ``null`` (a sandboxed frame, a ``file:``
  page), is refused (403 ``origin_not_allowed``).
- A write without a key (no ``Authorization``) that has a body must say it is JSON: a browser
  sends a simple request's body as ``text/plain``, ``multipart/form-data`` or
  ``application/x-www-form-urlencoded``, and the API used to read any of them as JSON (415
  ``unsupported_media_type``). A client with a key (the CLI, boto3 and Terraform, whose requests
  are signed) is not a page's simple request: a browser cannot add ``Authorization`` without a
  preflight, which the server never approves (it sends no CORS headers).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Sequence
from urllib.parse import urlsplit

Answer = tuple[int, list[tuple[str, str]], bytes]

WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
JSON = "application/json"


def _refused(status: int, code: str, message: str) -> Answer:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    return status, [("Content-Type", JSON)], body


def is_loopback_name(name: str | None) -> bool:
    """Whether ``name`` (a host name or an address, without its port) is this machine's loopback."""
    if not name:
        return False
    name = name.lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _host_name(authority: str) -> str | None:
    """The name of a ``Host`` value (``127.0.0.1:8080``, ``[::1]:8080``, ``localhost``)."""
    try:
        return urlsplit(f"//{authority.strip()}").hostname
    except ValueError:
        return None


def _loopback_origin(origin: str) -> bool:
    try:
        parts = urlsplit(origin.strip())
        return parts.scheme in ("http", "https") and is_loopback_name(parts.hostname)
    except ValueError:
        return False


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == JSON or (media.startswith("application/") and media.endswith("+json"))


def refusal(method: str, headers: Sequence[tuple[str, str]], body: bytes | None) -> Answer | None:
    """The answer to a request a web page could have sent behind the developer's back, or None."""
    first: dict[str, str] = {}
    for name, value in headers:
        first.setdefault(name.lower(), value)
    host = first.get("host")
    if host is None or not is_loopback_name(_host_name(host)):
        return _refused(
            403,
            "host_not_allowed",
            f"Host {host!r} is not this machine's loopback: the development server answers "
            "localhost, 127.0.0.1 and [::1] only",
        )
    origin = first.get("origin")
    if origin is not None and not _loopback_origin(origin):
        return _refused(
            403,
            "origin_not_allowed",
            f"Origin {origin!r} is not a page of this machine: the development server answers no other site's pages",
        )
    if method.upper() in WRITES and "authorization" not in first and body:
        content_type = first.get("content-type")
        if content_type is None or not _is_json(content_type):
            return _refused(
                415,
                "unsupported_media_type",
                f"Content-Type {content_type!r}: a request body without a key must be {JSON}",
            )
    return None
