"""The e2e suite: the local runtime in a subprocess (tests/support/runtime.py), talked to only
over HTTP, like a client would."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from local.settings import LocalSettings
from tests.support.runtime import ADMIN_KEY, SIGNING_CACHE_S, Client, running_runtime

__all__ = ["ADMIN_KEY", "SIGNING_CACHE_S", "Client"]


VERIFIED = {LocalSettings.setting_name("scheduler_auth"): "sigv4"}
"""The suite's runtimes verify the EventBridge Scheduler API's signatures, as the stack does
(its ``scheduler_auth`` setting ``sigv4``): boto3, the AWS CLI and Terraform sign with keys issued
through the admin API (tests/support/access_keys.py), and what `make run` does without it is
tested in tests/integration/test_scheduler_sigv4.py."""


@pytest.fixture(scope="session")
def sundial() -> Iterator[Client]:
    with running_runtime(env=VERIFIED) as client:
        yield client


@pytest.fixture
def receiver() -> Iterator[Any]:
    from local.receiver import running_receiver

    with running_receiver() as running:
        yield running
