"""Which function is running: the local runtime sets it around every handler call, so the
benchmark can attribute each AWS call to the function that made it."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from functools import wraps
from typing import Any

current_function: ContextVar[str] = ContextVar("current_function", default="runtime")
invocations: dict[str, list[float]] = {}
"""Function name -> the duration (s) of each invocation."""


def attributed(name: str, handler: Callable[..., Any]) -> Callable[..., Any]:
    import time

    durations = invocations.setdefault(name, [])

    @wraps(handler)
    def run(event: Any, context: Any) -> Any:
        token = current_function.set(name)
        started = time.perf_counter()
        try:
            return handler(event, context)
        finally:
            durations.append(time.perf_counter() - started)
            current_function.reset(token)

    return run


def attributed_to(name: str, call: Callable[..., Any], *args: Any) -> Any:
    """``call(*args)`` with its AWS calls attributed to ``name`` (not a function's invocation)."""
    token = current_function.set(name)
    try:
        return call(*args)
    finally:
        current_function.reset(token)
