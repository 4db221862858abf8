"""The e2e suite: the local runtime in a subprocess (tests/support/runtime.py), talked to only
over HTTP, like a client would."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.runtime import ADMIN_KEY, SIGNING_CACHE_S, Client, running_runtime

__all__ = ["ADMIN_KEY", "SIGNING_CACHE_S", "Client"]


@pytest.fixture(scope="session")
def sundial() -> Iterator[Client]:
    with running_runtime() as client:
        yield client


@pytest.fixture
def receiver() -> Iterator[Any]:
    from local.receiver import running_receiver

    with running_receiver() as running:
        yield running
