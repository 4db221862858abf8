"""What the receiver kit's job processor answers when its method raised
(receiver-kit/sundial_receiver/jobs.py, ``error_of``): the exception's type and message, still a
500 that Sundial retries, bounded (a type of 100 characters, a message of 500), with no traceback
(logged instead), none of the request's headers, and every secret the kit holds redacted: the
signing secrets it verifies with, written any way, and the call's progress token. A ``lambda``
processor raises the same answer as its function error."""

from __future__ import annotations

import base64
import json
import logging
import secrets
import traceback
from typing import Any

import pytest
from sundial_receiver import JobContext, JobProcessorReceiver, ShardingProcessor
from sundial_receiver.adapters.aws import lambda_processor
from sundial_receiver.jobs import (
    MAX_ERROR_MESSAGE_CHARS,
    MAX_ERROR_TYPE_CHARS,
    REDACTED,
    JobCallFailed,
    error_of,
)
from sundial_receiver.verify import secret_key

from tests.unit.test_receiver_kit_jobs import JOB, SECRET, SHARD, sundial_request, url_event

pytestmark = pytest.mark.unit

TOKEN = f"sdp_{JOB}.0.1.{secrets.token_hex(16)}"
WITH_PROGRESS = {**SHARD, "progress": {"url": "http://127.0.0.1:9/v1/jobs/01JOB/progress", "token": TOKEN}}


class Raising(ShardingProcessor):
    """Raises what it is given, from a method of the user's."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc
        self.runs = 0

    def sharding_process(self, ctx: JobContext) -> Any:
        self.runs += 1
        raise self.exc


def failed(exc: BaseException, content: dict[str, Any] = SHARD, secret: str = SECRET, **kwargs: Any) -> Any:
    answer = JobProcessorReceiver(kwargs.pop("secrets", secret), Raising(exc), **kwargs).handle(
        *sundial_request(content, secret)
    )
    return answer.status, answer.content()


def test_a_method_that_raised_is_answered_500_with_the_exceptions_type_and_message(caplog):
    processor = Raising(KeyError("user_id"))
    receiver = JobProcessorReceiver(SECRET, processor)
    body, headers = sundial_request(SHARD)
    with caplog.at_level(logging.ERROR, logger="sundial_receiver.jobs"):
        answer = receiver.handle(body, headers)
    assert answer.status == 500  # a 5xx: Sundial retries the step, as before
    content = answer.content()
    assert json.loads(content) == {"error": {"type": "KeyError", "message": "'user_id'"}, "key": "01JOB:shard:0:1"}
    # the traceback is logged here, never answered; nor is any header of the request
    assert "Traceback" in caplog.text
    assert "sharding_process" in caplog.text
    assert b"Traceback" not in content
    assert b"sharding_process" not in content
    assert headers["webhook-signature"].encode() not in content
    # nothing is kept: the retry runs the method again
    assert receiver.handle(*sundial_request(SHARD)).status == 500
    assert processor.runs == 2


def test_the_message_and_the_type_are_bounded():
    status, content = failed(ValueError("x" * 10_000))
    error = json.loads(content)["error"]
    assert status == 500
    assert len(error["message"]) == MAX_ERROR_MESSAGE_CHARS == 500
    assert error["message"] == "x" * 499 + "…"
    long_named = type("E" * 300, (Exception,), {})
    error = json.loads(failed(long_named("why"))[1])["error"]
    assert (len(error["type"]), error["type"], error["message"]) == (MAX_ERROR_TYPE_CHARS, "E" * 99 + "…", "why")
    assert len(content) < 700  # the whole answer stays small


def test_the_signing_secret_is_redacted_however_the_message_writes_it():
    key = secret_key(SECRET)
    written = [
        SECRET,
        SECRET.removeprefix("whsec_"),
        base64.urlsafe_b64encode(key).decode().rstrip("="),
        key.hex(),
    ]
    for text in written:
        status, content = failed(RuntimeError(f"could not sign with {text}, giving up"))
        message = json.loads(content)["error"]["message"]
        assert status == 500
        assert text.encode() not in content
        assert SECRET.removeprefix("whsec_")[:16].encode() not in content
        assert message == f"could not sign with {REDACTED}, giving up"


def test_every_secret_of_a_rotation_is_redacted():
    old = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    status, content = failed(RuntimeError(f"old {old} new {SECRET}"), secrets=[SECRET, old])
    assert status == 500
    assert json.loads(content)["error"]["message"] == f"old {REDACTED} new {REDACTED}"
    assert old.encode() not in content
    assert SECRET.encode() not in content


def test_the_progress_token_is_redacted():
    status, content = failed(PermissionError(f"refused: Authorization: Bearer {TOKEN}"), WITH_PROGRESS)
    assert status == 500
    assert json.loads(content)["error"] == {
        "type": "PermissionError",
        "message": f"refused: Authorization: Bearer {REDACTED}",
    }
    assert TOKEN.encode() not in content


def test_a_secret_is_redacted_before_the_message_is_cut():
    """A secret across the 500th character leaves no part of itself behind."""
    status, content = failed(RuntimeError("x" * 495 + SECRET))
    assert status == 500
    message = json.loads(content)["error"]["message"]
    assert message == "x" * 495 + REDACTED[:4] + "…"
    assert SECRET[:12].encode() not in content  # "whsec_" and the first characters of the key


def test_an_exception_that_cannot_say_its_message_is_answered_with_its_type():
    class Broken(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no message")

    assert json.loads(failed(Broken())[1])["error"] == {"type": "Broken", "message": ""}


def test_error_of_alone():
    assert error_of(KeyError("user_id")) == {"type": "KeyError", "message": "'user_id'"}
    assert error_of(RuntimeError("a b a"), ["a", "a b"]) == {
        "type": "RuntimeError",
        "message": f"{REDACTED} {REDACTED}",
    }
    assert error_of(RuntimeError("kept"), ["", None]) == {"type": "RuntimeError", "message": "kept"}  # type: ignore[list-item]


def test_a_lambda_processor_raises_the_same_answer_with_no_trace_of_the_method(caplog):
    """Lambda's function error carries the raised exception's message (``errorMessage``) and its
    traceback (``stackTrace``): the kit raises :class:`JobCallFailed` with the answer as JSON, from
    its own code only, so neither the method's frames nor the token reach Sundial."""
    handler = lambda_processor(JobProcessorReceiver(None, Raising(KeyError(f"user_id of {TOKEN}"))))
    with caplog.at_level(logging.ERROR, logger="sundial_receiver.jobs"), pytest.raises(JobCallFailed) as raised:
        handler(WITH_PROGRESS, None)
    exc = raised.value
    assert json.loads(str(exc)) == {
        "error": {"type": "KeyError", "message": f"'user_id of {REDACTED}'"},
        "key": "01JOB:shard:0:1",
    }
    assert exc.answer.status == 500
    assert exc.__context__ is None  # no chained traceback of the method's
    assert exc.__cause__ is None
    frames = [frame.name for frame in traceback.extract_tb(exc.__traceback__)]
    assert "sharding_process" not in frames
    assert TOKEN not in "".join(traceback.format_exception(exc))
    assert "sharding_process" in caplog.text  # logged where it ran


def test_a_lambda_processor_behind_a_function_url_answers_the_failure_as_http():
    handler = lambda_processor(JobProcessorReceiver(SECRET, Raising(KeyError("user_id"))))
    answer = handler(url_event(*sundial_request(SHARD)), None)
    assert answer["statusCode"] == 500
    assert json.loads(answer["body"])["error"] == {"type": "KeyError", "message": "'user_id'"}
