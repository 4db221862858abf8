"""Lambda's timeout, enforced on the local runtime's triggers.

"Lambda runs your code for a set amount of time before timing out ... After this time, Lambda
stops the function" (https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html);
for an SQS event source the whole batch then comes back after its visibility timeout
(https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html). Sundial's
exactly-once rests on it: a claim's lease outlives the trigger's timeout (shared/settings/tuning.py,
``platform_problems``), so no trigger still running can find its claim taken over and see a
second trigger call its target again. Without the timeout nothing held that rule locally (the
lease was 15 s, a target's call may take 60): a local trigger slowed past its lease (a loaded
machine, a slow receiver) could go on while a copy of its message took the occurrence over and
called it again. This was read, not seen, while looking into `make chaos`'s first unexplained
second calls (those were calls made while the runtime was stopping).

The local functions run on threads, which cannot be stopped from outside. So each trigger
invocation carries its deadline (a context variable, which the threads it starts for its records
copy), and whatever it does past it, an AWS request or a target's call, raises
:class:`TimedOut` instead: nothing it would do after Lambda stopped it happens. A call
under way at the deadline has reached its receiver; its answer is not seen. The deadline is on
the runtime's clock (the virtual one, when it runs on one), as the leases are."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from shared.domain.times import now_ms

Handler = Callable[[dict[str, Any], Any], Any]

_deadline: ContextVar[int | None] = ContextVar("lambda_deadline", default=None)


class InvocationStopped(BaseException):
    """Lambda stopped the invocation: a BaseException, so that no ``except Exception`` of the code
    it stops can go on as if what it was doing had ended."""


class TimedOut(InvocationStopped):
    """Stopped at its timeout."""


def enforced(handler: Handler, timeout_s: float) -> Handler:
    """``handler`` stopped at ``timeout_s`` after each invocation starts."""

    def invoke(event: dict[str, Any], context: Any) -> Any:
        token = _deadline.set(now_ms() + round(timeout_s * 1000))
        try:
            return handler(event, context)
        finally:
            _deadline.reset(token)

    return invoke


def check(doing: str) -> None:
    """Raise :class:`TimedOut` when the invocation this runs in is past its deadline."""
    deadline = _deadline.get()
    if deadline is not None and now_ms() >= deadline:
        raise TimedOut(f"stopped at its timeout before {doing}")


def install() -> Callable[[], None]:
    """Check the deadline before every AWS request (botocore's send) and before and after every
    HTTP target's call. Returns what puts them back (for the tests)."""
    from botocore.endpoint import Endpoint

    from shared.delivery.http import HttpDelivery

    send, call = Endpoint._send, HttpDelivery.call

    def checked_send(self: Any, request: Any) -> Any:
        check("an AWS request")
        return send(self, request)

    def checked_call(self: HttpDelivery, target: Any, envelope: Any) -> Any:
        check("a target's call")
        outcome = call(self, target, envelope)
        check("reading a target's answer")
        return outcome

    Endpoint._send = checked_send
    HttpDelivery.call = checked_call  # type: ignore[method-assign]

    def undo() -> None:
        Endpoint._send = send
        HttpDelivery.call = call  # type: ignore[method-assign]

    return undo
