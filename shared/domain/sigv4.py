"""AWS Signature Version 4, verified on the receiving side: the request's canonical form, the
string to sign and the signature, rebuilt from what arrived and compared in constant time with
the one sent, as "Create a signed AWS API request" and "Elements of an AWS API request
signature" (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html,
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-signing-elements.html) describe it:

* the canonical URI is the path as sent (each segment percent-encoded once) encoded once more, as
  for every service but S3;
* the canonical query string sorts the parameters by name, then value, each percent-encoded;
* the canonical headers are the signed headers, lowercased, values trimmed and inner spaces folded;
* the payload hash is the SHA-256 of the body;
* the key is HMAC-SHA256 chained over ``"AWS4" + secret``, the date, the region, the service and
  ``aws4_request``.

A request whose ``X-Amz-Date`` is more than 5 minutes from the receiver's clock is refused
("Signature expired"): AWS refuses a signed request that old or that far ahead ("the request must
reach AWS within five minutes of the time stamp", same pages). Pure: the caller gives the
secret of an access key id (None: unknown or revoked) and the time."""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

ALGORITHM = "AWS4-HMAC-SHA256"
MAX_SKEW = timedelta(minutes=5)
_AUTHORIZATION = re.compile(
    r"^AWS4-HMAC-SHA256\s+Credential=(?P<credential>[^,\s]+),\s*SignedHeaders=(?P<signed>[^,\s]+),\s*"
    r"Signature=(?P<signature>[0-9a-f]{64})\s*$"
)


class SignatureRefused(Exception):
    """Why a request's signature is not accepted, by the code AWS's front door answers
    (``UnrecognizedClientException``: no such key; ``InvalidSignatureException``: a signature that
    does not match, an expired one, a malformed header; ``MissingAuthenticationTokenException``:
    no signature)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _encode(text: str, safe: str = "-_.~") -> str:
    return quote(text, safe=safe)


def canonical_query(pairs: Sequence[tuple[str, str]]) -> str:
    encoded = sorted((_encode(key), _encode(value)) for key, value in pairs)
    return "&".join(f"{key}={value}" for key, value in encoded)


def _header_value(value: str) -> str:
    return " ".join(value.strip().split())


def canonical_request(
    method: str,
    wire_path: str,
    query: Sequence[tuple[str, str]],
    headers: Mapping[str, str],
    signed: Sequence[str],
    payload_hash: str,
) -> str:
    """The canonical request of a request whose path was sent as ``wire_path`` (encoded once)."""
    lowered = {name.lower(): value for name, value in headers.items()}
    lines = "".join(f"{name}:{_header_value(lowered.get(name, ''))}\n" for name in signed)
    uri = _encode(wire_path or "/", safe="/~")
    return "\n".join([method.upper(), uri, canonical_query(query), lines, ";".join(signed), payload_hash])


def signing_key(secret: str, day: str, region: str, service: str) -> bytes:
    key = hmac.new(f"AWS4{secret}".encode(), day.encode(), hashlib.sha256).digest()
    for part in (region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key


def verify(
    *,
    method: str,
    wire_path: str,
    query: Sequence[tuple[str, str]],
    headers: Mapping[str, str],
    body: bytes,
    secret_of: Callable[[str], str | None],
    now: datetime,
    service: str,
) -> tuple[str, str]:
    """The access key id that signed the request and the region it was signed for, or
    :class:`SignatureRefused`."""
    lowered = {name.lower(): value for name, value in headers.items()}
    authorization = lowered.get("authorization")
    if not authorization:
        raise SignatureRefused("MissingAuthenticationTokenException", "Missing Authentication Token")
    match = _AUTHORIZATION.match(authorization)
    if not match:
        raise SignatureRefused("InvalidSignatureException", "The Authorization header is not a SigV4 signature.")
    parts = match["credential"].split("/")
    if len(parts) != 5 or parts[4] != "aws4_request":
        raise SignatureRefused("InvalidSignatureException", "The credential scope is not valid.")
    key_id, day, region, signed_service, _ = parts
    if signed_service != service:
        raise SignatureRefused("InvalidSignatureException", f"The request was signed for {signed_service!r}.")
    stamp = lowered.get("x-amz-date", "")
    try:
        signed_at = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    except ValueError as exc:
        raise SignatureRefused("InvalidSignatureException", "X-Amz-Date is missing or not valid.") from exc
    if abs(now - signed_at) > MAX_SKEW:
        raise SignatureRefused(
            "InvalidSignatureException",
            f"Signature expired: {stamp} is now earlier than or later than 5 minutes from {now:%Y%m%dT%H%M%SZ}.",
        )
    if day != stamp[:8]:
        raise SignatureRefused("InvalidSignatureException", "The credential's date is not the request's.")
    signed = match["signed"].split(";")
    if "host" not in signed or signed != sorted(signed):
        raise SignatureRefused("InvalidSignatureException", "The signed headers must include host, in order.")
    secret = secret_of(key_id)
    if secret is None:
        raise SignatureRefused("UnrecognizedClientException", "The security token included in the request is invalid.")
    canonical = canonical_request(method, wire_path, query, headers, signed, hashlib.sha256(body).hexdigest())
    scope = f"{day}/{region}/{service}/aws4_request"
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    to_sign = f"{ALGORITHM}\n{stamp}\n{scope}\n{digest}"
    expected = hmac.new(signing_key(secret, day, region, service), to_sign.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, match["signature"]):
        raise SignatureRefused(
            "InvalidSignatureException",
            "The request signature we calculated does not match the signature you provided.",
        )
    return key_id, region
