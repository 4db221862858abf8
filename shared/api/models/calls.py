"""What a target calls (an HTTP URL, a Lambda function, an SQS queue, an SNS topic, an EventBridge
bus), each wrapped in its one-member target form (``{"http": {...}}``)."""

from __future__ import annotations

import re
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from shared.api.models.fields import LIMIT_NAME
from shared.api.types import Model, is_none
from shared.domain import tasks as t
from shared.domain.addresses import host_as_called, is_metadata_literal
from shared.domain.signing import SIGNATURE_HEADERS

HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
RESERVED_HEADERS = {
    "content-type",
    "content-length",
    "host",
    "idempotency-key",
    "transfer-encoding",
    # hop-by-hop: they describe one connection, not the request
    "connection",
    "keep-alive",
    "te",
    "trailer",
    "upgrade",
    "expect",
    "proxy-connection",
    # the signature of a signed callback (Standard Webhooks): Sundial's to set
    *SIGNATURE_HEADERS,
}
LAMBDA_ARN = r"^arn:aws[a-z-]*:lambda:[a-z0-9-]+:[0-9]{12}:function:[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9$_-]{1,128})?$"
SNS_ARN = r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$"
QUEUE_URL = r"^https?://[^/\x00-\x20\x7f]+/[0-9]{12}/[A-Za-z0-9_-]{1,80}(\.fifo)?$"
r"""ASCII classes only, as in :data:`HTTP_URL`: a ``\s`` or ``\d`` reads differently in JSON Schema's
dialect (and the OpenAPI fuzzer's reading of it) than in the API's validator, which refused hosts
the document admitted (a non-ASCII space)."""
URL_PORT = (
    r"(0{0,4}[1-9]|0{0,3}[1-9][0-9]|0{0,2}[1-9][0-9]{2}|0?[1-9][0-9]{3}|[1-5][0-9]{4}|6[0-4][0-9]{3}"
    r"|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])?"
)
"""A URL's port: 1 to 65535 in at most five digits (leading zeros allowed, as the URL parser reads
them), or none after the colon (the scheme's default)."""
HTTP_URL = rf"^https?://(\[[0-9A-Fa-f:.]+\]|[^/?#@\[\]:\x00-\x20\x7f]+)(:{URL_PORT})?([/?#][^\x00-\x20\x7f]*)?$"
r"""An absolute http(s) URL: a host (or a bracketed IPv6 address), an optional port (1 to 65535), no
user info, no spaces or control characters (ASCII classes only: JSON Schema's and Python's ``\s``
differ)."""


class HttpCall(Model):
    url: str = Field(
        min_length=1,
        max_length=t.MAX_URL_LENGTH,
        description="Absolute http:// or https:// URL, without user:password@ (put credentials in a header).",
        json_schema_extra={"pattern": HTTP_URL},  # checked by _url, with a message that says why
    )
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "POST"
    headers: dict[
        Annotated[str, Field(min_length=1, max_length=t.MAX_HEADER_NAME, pattern=HEADER_NAME.pattern)],
        Annotated[str, Field(max_length=t.MAX_HEADER_VALUE, pattern=r"^[^\r\n]*$")],
    ] = Field(
        default_factory=dict,
        max_length=t.MAX_HEADERS,
        description=f"At most {t.MAX_HEADERS} headers; Content-Type, Host, Idempotency-Key, webhook-*, "
        "hop-by-hop headers and Sundial-* are Sundial's.",
        json_schema_extra={"additionalProperties": False},  # a name outside the pattern is refused
    )
    timeout_seconds: float = Field(t.DEFAULT_TIMEOUT_SECONDS, strict=True, gt=0, le=t.MAX_TIMEOUT_SECONDS)

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        # the authority ends at the first /, ? or # after "//" (an @ in a path or fragment is not one)
        authority = re.split(r"[/?#]", value.partition("//")[2], maxsplit=1)[0]
        if "@" in authority:
            raise ValueError("must not carry credentials (user:password@): put them in a header")
        port = re.search(r"(?<!\]):([0-9]+)$|\]:([0-9]+)$", authority)
        if port is not None and not 1 <= int(port[1] or port[2]) <= 65_535:
            raise ValueError(f"has port {port[1] or port[2]}: a port is 1 to 65535")
        if not re.fullmatch(HTTP_URL, value):  # not re.match: Python's $ also matches before a final newline
            raise ValueError("must be an absolute http:// or https:// URL, without spaces or control characters")
        try:
            host = host_as_called(urlsplit(value).hostname or "")
        except ValueError as exc:  # a bracketed host that is no IPv6 address, or one with no IDNA form
            raise ValueError(f"has no valid host ({exc})") from exc
        if is_metadata_literal(host):
            raise ValueError(f"points at a cloud metadata endpoint ({host}): a target that can never be right")
        return value

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if name.lower() in RESERVED_HEADERS or name.lower().startswith("sundial-"):
                raise ValueError(f"{name!r} is set by Sundial and cannot be overridden")
        return value


class HttpTaskCall(HttpCall):
    """A task's HTTP target: a call, and the limit per destination it is held to."""

    limit: str | None = Field(
        None,
        exclude_if=is_none,
        min_length=1,
        max_length=64,
        pattern=LIMIT_NAME,
        description="The name of one of the tenant's limits (`PUT /v1/limits/{name}`) this target is held to, "
        "whatever its URL; without it, the limit whose `origin` is the URL's, if there is one. A name the "
        "tenant has no limit of is refused when the target is given; a limit deleted later stops applying.",
    )


class LambdaCall(Model):
    function_arn: str = Field(max_length=256, pattern=LAMBDA_ARN)


class SqsSend(Model):
    queue_url: str = Field(max_length=512, pattern=QUEUE_URL)


class SnsPublish(Model):
    topic_arn: str = Field(max_length=300, pattern=SNS_ARN)


class EventBridgePut(Model):
    event_bus: str = Field(min_length=1, max_length=1600, description="Bus name or ARN.")
    source: str = Field(
        min_length=1,
        max_length=256,
        description="Not starting with `aws.` (AWS's own).",
        json_schema_extra={"pattern": r"^(?!aws\.)"},
    )
    detail_type: str = Field(min_length=1, max_length=128)

    @field_validator("source")
    @classmethod
    def _source(cls, value: str) -> str:
        if value.startswith("aws."):
            raise ValueError("sources starting with 'aws.' are reserved for AWS services")
        return value


class HttpTarget(Model):
    http: HttpTaskCall


class HttpProcessor(Model):
    """A job's HTTP processor (not held to limits per destination: it has no ``limit``)."""

    http: HttpCall


class LambdaTarget(Model):
    lambda_: LambdaCall = Field(alias="lambda")


class SqsTarget(Model):
    sqs: SqsSend


class SnsTarget(Model):
    sns: SnsPublish


class EventBridgeTarget(Model):
    eventbridge: EventBridgePut


Calls = HttpTarget | HttpProcessor | LambdaTarget | SqsTarget | SnsTarget | EventBridgeTarget
"""Every target form but a job's, and a job's processor."""


def call_to_domain(target: Calls) -> t.Target:
    if isinstance(target, HttpTarget):
        h = target.http
        return t.HttpTarget(h.url, h.method, dict(h.headers), h.timeout_seconds, h.limit)
    if isinstance(target, HttpProcessor):
        p = target.http
        return t.HttpTarget(p.url, p.method, dict(p.headers), p.timeout_seconds)
    if isinstance(target, LambdaTarget):
        return t.LambdaTarget(target.lambda_.function_arn)
    if isinstance(target, SqsTarget):
        return t.SqsTarget(target.sqs.queue_url)
    if isinstance(target, SnsTarget):
        return t.SnsTarget(target.sns.topic_arn)
    e = target.eventbridge
    return t.EventBridgeTarget(e.event_bus, e.source, e.detail_type)
