"""Answering CloudFormation for a Lambda-backed custom resource (the canary's: infra/canary.py), in
every case: whatever the request and whatever happens to the work it asks for.

CloudFormation invokes the function asynchronously with a request ("Custom resource request
objects", https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-requests.html)
and then waits for an answer PUT to the request's presigned ``ResponseURL`` ("Custom resource
response objects",
https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-responses.html): a
function that fails or times out without answering holds the stack for the custom resource's
``ServiceTimeout`` (3,600 s by default, and again for the rollback's request:
"AWS::CloudFormation::CustomResource",
https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-cloudformation-customresource.html).
So :func:`answer` answers

* the work's own answer when it returns one;
* FAILED naming the members when the request is not the documented object (``ValidationError``);
* FAILED with the error when the work raises anything (settings that do not load, the table
  unreachable, a bug);
* FAILED from a timer :data:`ANSWER_MARGIN_MS` before the function's own timeout
  (``context.get_remaining_time_in_millis()``), when the work is still running then;

exactly once (a late work's answer, after the timer's, is not sent). A ``Delete`` is answered
SUCCESS in every case, with the reason: CloudFormation cannot delete a stack whose custom resource
fails its delete, and the stack must always be able to go. The body has the documented members
only and stays under CloudFormation's 4,096 bytes (:data:`MAX_BODY_BYTES`): a long ``Reason`` is
cut to fit.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import ValidationError

from shared.messages import CustomResourceRequest
from shared.observability import logger

ANSWER_MARGIN_MS = 5_000
"""How long before the function's own timeout the timer answers: time for one PUT to S3."""
PUT_TIMEOUT_S = 10.0
MAX_BODY_BYTES = 4_096
""""The total size of the response body can't exceed 4096 bytes" ("Custom resource response objects")."""
RESPONSE_MEMBERS = frozenset(
    {"Status", "Reason", "PhysicalResourceId", "StackId", "RequestId", "LogicalResourceId", "NoEcho", "Data"}
)
"""Every member "Custom resource response objects" documents (the answer has no other)."""
CUT = " [cut to fit CloudFormation's 4,096 bytes]"

Status = Literal["SUCCESS", "FAILED"]


@dataclass(frozen=True)
class Answer:
    """What a custom resource tells CloudFormation."""

    status: Status
    physical_id: str
    reason: str = ""
    data: Mapping[str, str] = field(default_factory=dict)


class Context(Protocol):
    def get_remaining_time_in_millis(self) -> int: ...


def is_request(event: Any) -> bool:
    """Whether ``event`` is CloudFormation's (it names where to answer), not another invocation."""
    return isinstance(event, dict) and "ResponseURL" in event and "RequestType" in event


def response_body(event: Mapping[str, Any], answer: Answer) -> bytes:
    """The answer as CloudFormation reads it: the documented members, the request's ids copied
    verbatim, at most :data:`MAX_BODY_BYTES` (the ``Reason`` cut to fit, and the ``Data`` left
    out if even that is not enough)."""
    body: dict[str, Any] = {
        "Status": answer.status,
        "Reason": answer.reason or answer.status,
        "PhysicalResourceId": answer.physical_id,
        "StackId": str(event.get("StackId") or ""),
        "RequestId": str(event.get("RequestId") or ""),
        "LogicalResourceId": str(event.get("LogicalResourceId") or ""),
        "Data": dict(answer.data),
    }
    text = json.dumps(body)  # ASCII: each character of the text one byte
    if len(text) > MAX_BODY_BYTES:
        reason = body["Reason"]
        body["Reason"] = CUT
        room = MAX_BODY_BYTES - len(json.dumps(body))
        kept = 0
        for char in reason:  # as many characters as their escaped form leaves room for
            room -= len(json.dumps(char)) - 2
            if room < 0:
                break
            kept += 1
        body["Reason"] = reason[:kept] + CUT
        text = json.dumps(body)
    if len(text) > MAX_BODY_BYTES:
        del body["Data"]
        text = json.dumps(body)
    return text.encode()


def put_answer(url: str, body: bytes, timeout_s: float) -> None:
    """PUT the answer to the presigned URL, with no content type (the URL was signed without
    one: "Custom resource response objects")."""
    request = urllib.request.Request(url, data=body, method="PUT", headers={"Content-Type": ""})  # noqa: S310
    with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 - CloudFormation's URL
        response.read()


class _Once:
    """Sends one answer at most, from whichever thread comes first (the work's, or the timer's)."""

    def __init__(
        self, event: Mapping[str, Any], put: Callable[[str, bytes, float], None], timeout_s: Callable[[], float]
    ):
        self.event = event
        self.put = put
        self.timeout_s = timeout_s
        self.lock = threading.Lock()
        self.sent: Answer | None = None

    def send(self, answer: Answer) -> Answer:
        with self.lock:
            if self.sent is not None:
                return self.sent
            self.sent = answer
            url = str(self.event.get("ResponseURL") or "")
            try:
                self.put(url, response_body(self.event, answer), self.timeout_s())
            except Exception:  # nothing more to do: CloudFormation waits out its ServiceTimeout
                logger.exception("the answer to CloudFormation was not delivered", extra={"status": answer.status})
            return answer


def _refusal(exc: ValidationError) -> str:
    problems = [
        f"{'.'.join(str(part) for part in error['loc']) or 'the request'}: {error['msg']}" for error in exc.errors()
    ]
    return "the request is not a custom resource request this function takes: " + "; ".join(problems)


def answer(
    event: Mapping[str, Any],
    context: Context,
    work: Callable[[CustomResourceRequest], Answer],
    *,
    fallback_id: Callable[[Mapping[str, Any]], str],
    put: Callable[[str, bytes, float], None] = put_answer,
    margin_ms: int = ANSWER_MARGIN_MS,
) -> Answer:
    """Run ``work`` on the request and answer CloudFormation once, in every case (this module's
    docstring); the answer sent. ``fallback_id``: the physical id of an answer the work did not
    make (it must be the one every answer for the resource gives)."""
    deleting = event.get("RequestType") == "Delete"

    def failed(reason: str) -> Answer:
        if deleting:
            return Answer("SUCCESS", fallback_id(event), f"deleted without its work done: {reason}")
        return Answer("FAILED", fallback_id(event), reason)

    def put_timeout_s() -> float:
        return max(1.0, min(PUT_TIMEOUT_S, context.get_remaining_time_in_millis() / 1000 - 1))

    once = _Once(event, put, put_timeout_s)
    delay_s = max(0, context.get_remaining_time_in_millis() - margin_ms) / 1000
    timer = threading.Timer(
        delay_s,
        lambda: once.send(failed(f"the function was about to time out ({margin_ms} ms left) before its work ended")),
    )
    timer.daemon = True
    timer.start()
    try:
        try:
            request = CustomResourceRequest.model_validate(event)
        except ValidationError as exc:
            result = failed(_refusal(exc))
        else:
            try:
                result = work(request)
            except Exception as exc:
                logger.exception("the custom resource's work failed", extra={"request": event.get("RequestType")})
                result = failed(f"{type(exc).__name__}: {exc}")
    finally:
        timer.cancel()
    return once.send(result)
