"""Lambda's recursive loop detection, modelled for the local runtime and the tests.

AWS: when a function sends a message to SQS with a supported SDK, the message carries the
invocation's X-Ray trace header (the SQS system attribute ``AWSTraceHeader``), whose lineage
counts how many times this chain of events has invoked each function. When an SQS event source
would invoke a function for about the 17th time in one chain, Lambda stops: the function is not
invoked and the message goes to the queue's dead-letter queue, unless the function's
``RecursiveLoop`` configuration is ``Allow`` (Lambda developer guide, "Use Lambda recursive loop
detection to prevent infinite loops"; the loop is stopped "after exceeding 16 invocations", and
boto/boto3#3899 shows exactly Sundial's pattern, a function staging into the delay queue that
invokes it, stopping after 16). moto carries no lineage and stops nothing, so a green suite on
moto would not notice a trigger that AWS stops after 16 occurrences of a task due every second.

Here the same happens, from the same definitions the stack is built from: every SQS send made
during an invocation carries that invocation's lineage in ``AWSTraceHeader`` (a botocore handler
that every client gets, as moto's own mock is installed), :func:`invocation` counts the chain
when an event source invokes a function, and a function that ``shared.topology.looping`` does
not name (the stack's ``RecursiveLoop: Terminate``) is stopped past :data:`LOOP_LIMIT`, its
messages moved to its queue's redrive target. ``terminating`` makes a test stop functions that
the stack allows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from shared.topology import looping

LOOP_LIMIT = 16
"""Invocations of one function in one chain before Lambda stops the next."""
TRACE_HEADER = "AWSTraceHeader"
LINEAGE = "Lineage"

ALLOWED: frozenset[str] = looping(1)
"""The functions the stack deploys with ``RecursiveLoop: Allow`` (the same set for any number of
delay queues: tests/infrastructure/test_pipeline.py)."""
_terminated: set[str] = set()
_lineage: ContextVar[dict[str, int] | None] = ContextVar("lineage", default=None)


def allows_recursion(function: str) -> bool:
    return function in ALLOWED and function not in _terminated


@contextmanager
def terminating(*functions: str) -> Iterator[None]:
    """Within the block, ``functions`` are stopped as Lambda stops a function whose
    ``RecursiveLoop`` is ``Terminate`` (what the stack would do without the setting)."""
    _terminated.update(functions)
    try:
        yield
    finally:
        _terminated.difference_update(functions)


def _tag(function: str) -> str:
    return hashlib.sha256(function.encode()).hexdigest()[:8]


def header(lineage: dict[str, int]) -> str:
    """An X-Ray trace header carrying ``lineage`` (function -> invocations in the chain)."""
    counts = "|".join(f"{_tag(function)}:{count}:{function}" for function, count in sorted(lineage.items()))
    return f"Root=1-00000000-000000000000000000000000;{LINEAGE}={counts}"


def lineage_of(message: dict[str, Any]) -> dict[str, int]:
    """The lineage a received message carries (empty: the start of a chain)."""
    text = (message.get("Attributes") or {}).get(TRACE_HEADER, "")
    for part in text.split(";"):
        key, _, value = part.partition("=")
        if key == LINEAGE and value:
            found = {}
            for entry in value.split("|"):
                _, count, function = entry.split(":", 2)
                found[function] = int(count)
            return found
    return {}


def chain(messages: list[dict[str, Any]]) -> dict[str, int]:
    """The chain a batch continues: each function's largest count among its messages."""
    merged: dict[str, int] = {}
    for message in messages:
        for function, count in lineage_of(message).items():
            merged[function] = max(merged.get(function, 0), count)
    return merged


def stopped(function: str, messages: list[dict[str, Any]]) -> bool:
    """Whether Lambda would refuse to invoke ``function`` with this batch."""
    return not allows_recursion(function) and chain(messages).get(function, 0) >= LOOP_LIMIT


@contextmanager
def invocation(function: str, messages: list[dict[str, Any]]) -> Iterator[None]:
    """The invocation of ``function`` with ``messages``: what it sends carries the chain, one more."""
    lineage = chain(messages)
    lineage[function] = lineage.get(function, 0) + 1
    token = _lineage.set(lineage)
    try:
        yield
    finally:
        _lineage.reset(token)


def _carry(params: dict[str, Any], **_: Any) -> None:
    lineage = _lineage.get()
    if lineage is None:
        return
    value = {TRACE_HEADER: {"DataType": "String", "StringValue": header(lineage)}}
    if "Entries" in params:  # SendMessageBatch
        for entry in params["Entries"]:
            entry.setdefault("MessageSystemAttributes", value)
    else:
        params.setdefault("MessageSystemAttributes", value)


def carry_lineage() -> None:
    """Every SQS client made after this (in this process) sends the current invocation's lineage,
    as the SDK sends the trace header inside a Lambda function."""
    from botocore.handlers import BUILTIN_HANDLERS

    for operation in ("SendMessage", "SendMessageBatch"):
        entry = (f"before-parameter-build.sqs.{operation}", _carry)
        if entry not in BUILTIN_HANDLERS:
            BUILTIN_HANDLERS.append(entry)
