"""AWS Signature Version 4, verified on the receiving side: the request's canonical form, the
string to sign and the signature, rebuilt from what arrived and compared in constant time with
the one sent, as "Create a signed AWS API request" and "Elements of an AWS API request
signature" (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html,
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-signing-elements.html) describe it:

* the canonical URI is the path as sent (each segment percent-encoded once) encoded once more, as
  for every service but S3;
* the canonical query string sorts the parameters by name, then value, each percent-encoded;
* the canonical headers are the signed headers, lowercased, values trimmed and inner spaces folded,
  a header sent more than once as its values joined by commas, in the order sent;
* the payload hash is the SHA-256 of the body;
* the key is HMAC-SHA256 chained over ``"AWS4" + secret``, the date, the region, the service and
  ``aws4_request``.

A request whose ``X-Amz-Date`` is more than 5 minutes from the receiver's clock is refused
("Signature expired"): AWS refuses a signed request that old or that far ahead ("the request must
reach AWS within five minutes of the time stamp", same pages); so is one signed for another
Region than the receiver's, as AWS's front door answers "Credential should be scoped to a valid
region" (a signature is only good for the Region in its credential scope, same pages). Pure: the
caller gives the secret of an access key id (None: unknown or revoked), the time and its Region.

What arrives may lack a header the client signed: API Gateway (REST) hands a Lambda proxy
integration no ``Content-Length`` (local/apigw.py, ``DROPPED_HEADERS``), which aws-sdk-go-v2, under
Terraform's provider, signs whenever a request has a body. A signed ``content-length`` absent from
the headers is the body's length, which is what the client sent in it (a body's length is the
header's value for every request but a chunked one, and the SDKs send none chunked here)."""

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


Headers = Mapping[str, str] | Sequence[tuple[str, str]]
"""A request's headers: a mapping, or (name, value) pairs where a name sent twice comes twice."""


def header_values(headers: Headers) -> dict[str, str]:
    """Each header by its lowercased name, the values of one sent more than once joined by commas
    (each trimmed), as the canonical form wants them."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    joined: dict[str, list[str]] = {}
    for name, value in pairs:
        joined.setdefault(name.lower(), []).append(_header_value(value))
    return {name: ",".join(values) for name, values in joined.items()}


def canonical_request(
    method: str,
    wire_path: str,
    query: Sequence[tuple[str, str]],
    headers: Headers,
    signed: Sequence[str],
    payload_hash: str,
) -> str:
    """The canonical request of a request whose path was sent as ``wire_path`` (encoded once)."""
    lowered = header_values(headers)
    lines = "".join(f"{name}:{lowered.get(name, '')}\n" for name in signed)
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
    headers: Headers,
    body: bytes,
    secret_of: Callable[[str], str | None],
    now: datetime,
    service: str,
    region: str | None = None,
) -> tuple[str, str]:
    """The access key id that signed the request and the region it was signed for, or
    :class:`SignatureRefused`; with ``region``, a request signed for another one is refused."""
    lowered = header_values(headers)
    authorization = _authorization(lowered)
    key_id, day, signed_region = _credential_scope(authorization["credential"], service=service, region=region)
    stamp = _signed_at(lowered, now=now, day=day)
    signed = _signed_headers(authorization["signed"])
    secret = secret_of(key_id)
    if secret is None:
        raise SignatureRefused("UnrecognizedClientException", "The security token included in the request is invalid.")
    if "content-length" in signed and "content-length" not in lowered:
        lowered["content-length"] = str(len(body))  # dropped by API Gateway: the body says it
    canonical = canonical_request(
        method, wire_path, query, list(lowered.items()), signed, hashlib.sha256(body).hexdigest()
    )
    expected = _signature(secret, canonical, stamp=stamp, day=day, region=signed_region, service=service)
    if not hmac.compare_digest(expected, authorization["signature"]):
        raise SignatureRefused(
            "InvalidSignatureException",
            "The request signature we calculated does not match the signature you provided.",
        )
    return key_id, signed_region


def _authorization(lowered: Mapping[str, str]) -> re.Match[str]:
    """The ``Authorization`` header's credential, signed headers and signature."""
    authorization = lowered.get("authorization")
    if not authorization:
        raise SignatureRefused("MissingAuthenticationTokenException", "Missing Authentication Token")
    match = _AUTHORIZATION.match(authorization)
    if not match:
        raise SignatureRefused("InvalidSignatureException", "The Authorization header is not a SigV4 signature.")
    return match


def _credential_scope(credential: str, *, service: str, region: str | None) -> tuple[str, str, str]:
    """The credential's access key id, day and region, once its scope is this service's (and
    ``region``'s, when given)."""
    parts = credential.split("/")
    if len(parts) != 5 or parts[4] != "aws4_request":
        raise SignatureRefused("InvalidSignatureException", "The credential scope is not valid.")
    key_id, day, signed_region, signed_service, _ = parts
    if signed_service != service:
        raise SignatureRefused("InvalidSignatureException", f"The request was signed for {signed_service!r}.")
    if region is not None and signed_region != region:
        raise SignatureRefused(
            "InvalidSignatureException", f"Credential should be scoped to a valid region, not '{signed_region}'."
        )
    return key_id, day, signed_region


def _signed_at(lowered: Mapping[str, str], *, now: datetime, day: str) -> str:
    """The request's ``X-Amz-Date``, once it is within :data:`MAX_SKEW` of ``now`` and on the
    credential's ``day``."""
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
    return stamp


def _signed_headers(names: str) -> list[str]:
    """The signed headers' names, once they include ``host`` and are in order."""
    signed = names.split(";")
    if "host" not in signed or signed != sorted(signed):
        raise SignatureRefused("InvalidSignatureException", "The signed headers must include host, in order.")
    return signed


def _signature(secret: str, canonical: str, *, stamp: str, day: str, region: str, service: str) -> str:
    """The signature of the canonical request ``canonical`` with ``secret``'s key for the scope."""
    scope = f"{day}/{region}/{service}/aws4_request"
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    to_sign = f"{ALGORITHM}\n{stamp}\n{scope}\n{digest}"
    return hmac.new(signing_key(secret, day, region, service), to_sign.encode(), hashlib.sha256).hexdigest()
