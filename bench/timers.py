"""`make bench ARGS="--batching-window"`, `"--long-polls"`, `"--http-timeouts"`: how punctually
the timers the tests check by their effect go off, on this machine's wall clock.

The test suite checks what each timer does (which batch goes when its window closes, which wait a
long poll plans, that a slow answer is cut at its timeout) without timing it: a bound on the wall
clock fails on a busy CI machine and proves nothing on an idle one. The figures are here:

* ``--batching-window``: the local event source's batching window (``local.sqs_lambda``,
  Lambda's MaximumBatchingWindowInSeconds) of 0.3 s: how long after the window a batch went, for
  a lone message, and for a message added 0.2 s into a window (the window runs from the first);
* ``--long-polls``: moto's SQS long polls as the suites patch them (``local.moto_patches.sqs``): how long
  after a delayed message, or one whose visibility timeout ran out, became visible a poll started
  0.3 s before returned it (unpatched moto: about 300 ms, its next look a second after the poll
  began); how long after a send a waiting poll returned it; how far past its 1 s an empty poll ran;
* ``--http-timeouts``: ``shared.delivery.HttpDelivery`` against a receiver that answers after
  3 s and one that drips its headers a byte every 0.1 s, with a 1 s timeout: how far past it each
  call ended.

Each prints p50 and max over ``--rounds`` samples (default 5), in milliseconds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

from bench.capacity import percentile

WINDOW_S = 0.3
TIMEOUT_S = 1.0


def report(name: str, late_s: list[float]) -> None:
    """One line: how late (past the moment it should have) each sample was, p50 and max, ms."""
    ms = [s * 1000 for s in late_s]
    print(f"  {name:<58} p50 {percentile(ms, 50):7.1f} ms   max {max(ms):7.1f} ms   ({len(ms)} samples)")


def batching_window(rounds: int) -> None:
    from local.sqs_lambda import BatchingWindow

    print(f"batching window of {WINDOW_S} s (local.sqs_lambda.BatchingWindow): how long after the window a batch went")
    alone, joined = [], []
    for _ in range(rounds):
        went = threading.Event()

        def dispatch(batch: list[dict[str, Any]], went: threading.Event = went) -> None:
            went.set()

        window = BatchingWindow(10, WINDOW_S, dispatch)
        opened = time.monotonic()
        window.add([{"MessageId": "1"}])
        went.wait(5)
        alone.append(time.monotonic() - opened - WINDOW_S)
        went.clear()
        opened = time.monotonic()
        window.add([{"MessageId": "2"}])
        time.sleep(0.2)  # the second message comes 0.2 s into the window the first opened
        window.add([{"MessageId": "3"}])
        went.wait(5)
        joined.append(time.monotonic() - opened - WINDOW_S)
    report("a lone message", alone)
    report("a second message 0.2 s into the window (from the first's)", joined)


def long_polls(rounds: int) -> None:
    import boto3
    from moto import mock_aws

    from local.moto_patches.sqs import make_long_polling_prompt, make_receive_linear

    make_long_polling_prompt()
    make_receive_linear()
    print(
        "moto's long polls, patched (local.moto_patches.sqs): "
        "how long after the message could be seen a poll returned it"
    )
    samples: list[tuple[float, float, float, float]] = []
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="bench-polls")["QueueUrl"]
        samples = [_poll_round(sqs, url) for _ in range(rounds)]
    delayed, invisible, woken, empty = (list(column) for column in zip(*samples, strict=True))
    report("a delayed message (DelaySeconds 1, polled from 0.3 s)", delayed)
    report("a visibility timeout of 1 s run out (polled from 0.3 s)", invisible)
    report("a message sent while the poll waits", woken)
    report("an empty queue: past the poll's 1 s", empty)


def _poll_round(sqs: Any, url: str) -> tuple[float, float, float, float]:
    """One sample of each long poll: (delayed, visibility run out, woken by a send, empty), in s."""
    sent = time.monotonic()
    sqs.send_message(QueueUrl=url, MessageBody="x", DelaySeconds=1)
    time.sleep(0.3)  # the poll starts 0.3 s into the delay (unpatched moto looked again at 1.3 s)
    answer = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5)
    delayed = time.monotonic() - sent - 1
    handle = answer["Messages"][0]["ReceiptHandle"]
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=1)
    hidden = time.monotonic()
    time.sleep(0.3)
    answer = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5)
    invisible = time.monotonic() - hidden - 1
    sqs.delete_message(QueueUrl=url, ReceiptHandle=answer["Messages"][0]["ReceiptHandle"])
    sends: list[float] = []

    def send_later() -> None:
        time.sleep(0.3)  # while the poll below waits
        sends.append(time.monotonic())
        sqs.send_message(QueueUrl=url, MessageBody="y")

    threading.Thread(target=send_later, daemon=True).start()
    answer = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5)
    woken = time.monotonic() - sends[0]
    sqs.delete_message(QueueUrl=url, ReceiptHandle=answer["Messages"][0]["ReceiptHandle"])
    started = time.monotonic()
    sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)
    return delayed, invisible, woken, time.monotonic() - started - 1


@contextmanager
def slow_receivers() -> Iterator[str]:
    """A receiver on loopback: ``/slow`` answers after 3 s, ``/drip`` sends its headers a byte
    every 0.1 s (9 s in all); stopped, whatever it was doing, as the block ends."""
    from local.http_adapter import LoopbackServer

    stop = threading.Event()

    class Handle(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path == "/slow":
                stop.wait(3)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            head = b"HTTP/1.1 200 OK\r\nX-Padding: " + b"." * 40 + b"\r\nContent-Length: 0\r\n\r\n"
            try:
                for byte in head:
                    if stop.wait(0.1):
                        return
                    self.wfile.write(bytes([byte]))
            except OSError:
                pass
            self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = LoopbackServer(("127.0.0.1", 0), Handle)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


def http_timeouts(rounds: int) -> None:
    from datetime import UTC, datetime

    from shared.delivery import Envelope, HttpDelivery
    from shared.domain.tasks import HttpTarget

    print(f"HTTP calls with a {TIMEOUT_S:g} s timeout (shared.delivery.HttpDelivery): how far past it each ended")
    now = datetime.now(UTC)
    envelope = Envelope(task_id="t", run_id="r", scheduled_for=now, fired_at=now, attempt=1, payload=None)
    delivery = HttpDelivery(allow_loopback=True)
    with slow_receivers() as base:
        for path, what in (("/slow", "an answer 3 s away"), ("/drip", "headers a byte every 0.1 s")):
            over = []
            for _ in range(rounds):
                started = time.monotonic()
                outcome = delivery.call(HttpTarget(base + path, timeout_seconds=TIMEOUT_S), envelope)
                over.append(time.monotonic() - started - TIMEOUT_S)
                assert outcome.error == f"timed out after {TIMEOUT_S:g} s", outcome
            report(what, over)


TIMERS: dict[str, Callable[[int], None]] = {
    "batching_window": batching_window,
    "long_polls": long_polls,
    "http_timeouts": http_timeouts,
}
"""Each flag's measurement (``--batching-window`` is ``batching_window``...)."""
