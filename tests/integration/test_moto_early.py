"""moto's process started before the runtime knows its settings (``local.moto_server.EarlyMoto``,
what `make run` does first): configured later, it is moto on the port and with the environment
it was given; never configured, it exits once its input closes, leaving nothing running."""

from __future__ import annotations

import pytest

from local.moto_server import EarlyMoto, MotoServer
from local.settings import MOTO_CLOCK_ENV
from tests.support.moto_process import client

pytestmark = pytest.mark.integration


def test_a_process_started_early_serves_on_the_port_and_with_the_environment_given_later() -> None:
    early = EarlyMoto()
    server = MotoServer(env={MOTO_CLOCK_ENV: "1"})  # the clock's route exists only with this variable
    server.launch(early)
    try:
        server.wait_ready()
        assert server.pid == early.process.pid
        assert server.set_clock(1_000_000) == 1_000_000  # the route answers: the environment arrived
        sqs = client(server, "sqs")
        assert sqs.create_queue(QueueName="early")["QueueUrl"].endswith("/early")
        early.close()  # configured: moto's now, and closing the handle leaves it running
        assert early.process.poll() is None
    finally:
        server.stop()
    assert early.process.wait(timeout=10) is not None


def test_a_process_never_configured_exits_when_its_input_closes() -> None:
    early = EarlyMoto()
    early.close()  # waits a few seconds at most: on a loaded machine its imports may take longer
    assert early.process.wait(timeout=60) == 0
