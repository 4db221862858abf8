"""The local triggers' Lambda timeout (local/deadline.py): past its deadline an invocation makes no
AWS request and no target call, and does not see the answer of a call under way; the threads it
starts for its records carry its deadline; outside an invocation nothing is checked. And the local
settings hold the rule the stack holds: a lease outlives the triggers' timeout. Without the
enforcement a local trigger slowed past its lease could go on and call a target a second trigger
had called again."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest

from local import deadline
from local.deadline import TimedOut
from local.moto_server import MotoServer
from local.settings import TRIGGER_TIMEOUT_S, LocalSettings
from shared.delivery.envelope import Envelope
from shared.delivery.http import HttpDelivery
from shared.domain.tasks import HttpTarget
from shared.domain.times import use_clock
from shared.settings.environment import env_name
from tests.support.moto_process import client, moto_process
from tests.support.receiver import Receiver

pytestmark = pytest.mark.integration

T0 = 1_795_000_000_000


class SteppedClock:
    """A clock that moves only when the test says."""

    def __init__(self) -> None:
        self.now = T0

    def now_ms(self) -> int:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += round(seconds * 1000)


@pytest.fixture
def clock() -> Iterator[SteppedClock]:
    stepped = SteppedClock()
    before = use_clock(stepped)
    undo = deadline.install()
    try:
        yield stepped
    finally:
        undo()
        use_clock(before)


def envelope() -> Envelope:
    now = datetime.now(UTC)
    return Envelope(task_id="t1", run_id="r1", scheduled_for=now, fired_at=now, attempt=1)


def test_a_call_before_the_deadline_is_made_and_one_after_it_is_not(clock, receiver: Receiver) -> None:
    target = HttpTarget(url=receiver.script("/hook", 200, 200), timeout_seconds=5)
    delivery = HttpDelivery(allow_loopback=True)

    def invocation(event: dict, context: object) -> int | None:
        first = delivery.call(target, envelope()).status  # at the start: made
        clock.sleep(75)  # the invocation's time runs out
        delivery.call(target, envelope())  # past it: never made
        return first

    with pytest.raises(TimedOut, match="before a target's call"):
        deadline.enforced(invocation, 75)({}, None)
    assert len(receiver.calls_to("/hook")) == 1
    assert deadline.enforced(lambda event, context: delivery.call(target, envelope()).status, 75)({}, None) == 200
    assert delivery.call(target, envelope()).status is not None  # no invocation: no deadline


def test_an_answer_that_comes_after_the_deadline_is_not_seen(clock, receiver: Receiver) -> None:
    target = HttpTarget(url=receiver.script("/slow", 200), timeout_seconds=5)
    call = HttpDelivery.call

    def slow(self, target, envelope):  # type: ignore[no-untyped-def]
        outcome = call(self, target, envelope)  # the receiver has it
        clock.sleep(10)  # and answers as the deadline passes
        return outcome

    HttpDelivery.call = slow  # type: ignore[method-assign]
    undo = deadline.install()  # the checks around the (slow) call
    try:
        with pytest.raises(TimedOut, match="reading a target's answer"):
            deadline.enforced(lambda event, context: HttpDelivery(allow_loopback=True).call(target, envelope()), 5)(
                {}, None
            )
    finally:
        undo()
        HttpDelivery.call = call  # type: ignore[method-assign]
    assert len(receiver.calls_to("/slow")) == 1


@pytest.fixture(scope="module")
def moto() -> Iterator[MotoServer]:
    with moto_process() as server:
        yield server


def test_no_aws_request_is_sent_past_the_deadline_even_from_a_records_own_thread(clock, moto) -> None:
    sqs = client(moto, "sqs")
    url = sqs.create_queue(QueueName="deadline")["QueueUrl"]

    def invocation(event: dict, context: object) -> None:
        sqs.send_message(QueueUrl=url, MessageBody="in time")
        clock.sleep(TRIGGER_TIMEOUT_S)
        with ThreadPoolExecutor(max_workers=1) as threads:  # as the trigger runs its records
            threads.submit(contextvars.copy_context().run, sqs.send_message, QueueUrl=url, MessageBody="late").result()

    with pytest.raises(TimedOut, match="before an AWS request"):
        deadline.enforced(invocation, TRIGGER_TIMEOUT_S)({}, None)
    bodies = [m["Body"] for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])]
    assert bodies == ["in time"]


def test_the_local_lease_outlives_the_triggers_timeout_as_the_stacks_does() -> None:
    settings = LocalSettings()
    assert settings.functions.lease_ms >= TRIGGER_TIMEOUT_S * 1000 + 10_000 + settings.functions.lead_ms
    with pytest.raises(ValueError, match="trigger's timeout"):
        LocalSettings.from_env({env_name("lease_ms"): str(TRIGGER_TIMEOUT_S * 1000)})
