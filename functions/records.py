"""Queue records, parsed once at the function's edge into the models of shared/messages.py."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from shared.observability import logger

R = TypeVar("R", bound=BaseModel)


class MalformedRecord(ValueError):
    """A record whose message is not what its queue carries. It fails alone (a partial batch
    failure): SQS hands it out again and, after its receives, moves it to the queue's dead-letter
    queue, where an operator can read it and this error in the function's log."""


def parsed(model: type[R], record: dict[str, Any]) -> R:
    """``record`` as ``model``, or :class:`MalformedRecord` saying which of its fields are wrong."""
    try:
        return model.model_validate(record)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'record'}: {e['msg']}" for e in exc.errors())
        error = MalformedRecord(f"message {record.get('messageId')} is not a {model.__name__}: {problems}")
    logger.warning("malformed record", extra={"message_id": record.get("messageId"), "error": str(error)})
    raise error


class MalformedEvent(ValueError):
    """An asynchronous invocation's event that is not what its function takes. The invocation
    fails: Lambda retries it twice and then sends it to the function's on-failure destination
    (the dead-letter queue), where an operator can read it and this error in the function's log."""


def parsed_event(model: type[R], event: dict[str, Any]) -> R:
    """``event`` as ``model``, or :class:`MalformedEvent` saying which of its fields are wrong."""
    try:
        return model.model_validate(event)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'event'}: {e['msg']}" for e in exc.errors())
        error = MalformedEvent(f"the event is not a {model.__name__}: {problems}")
    logger.warning("malformed event", extra={"error": str(error)})
    raise error
