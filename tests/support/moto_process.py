"""A moto server of its own, over HTTP (as the local runtime runs it: botocore sends, unlike the
in-process mock, which answers before the send), and clients of it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
from botocore.config import Config

from local.moto_server import FAKE_ENV, MotoServer


@contextmanager
def moto_process() -> Iterator[MotoServer]:
    server = MotoServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def client(moto: MotoServer, service: str, attempts: int = 1, **config: Any) -> Any:
    """A client of ``moto`` that sends each request at most ``attempts`` times (botocore's
    standard retry mode); ``config``: more of botocore's ``Config`` (S3's addressing style)."""
    return boto3.client(
        service,
        endpoint_url=moto.endpoint,
        region_name=FAKE_ENV["AWS_REGION"],
        aws_access_key_id=FAKE_ENV["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=FAKE_ENV["AWS_SECRET_ACCESS_KEY"],
        config=Config(retries={"mode": "standard", "total_max_attempts": attempts}, **config),
    )
