"""Handlers in-process against moto: a fresh mocked account and table for every test."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from moto import mock_aws

from tests.support.events import FakeLambdaContext, api_event


@dataclass
class Answer:
    status: int
    body: Any
    headers: dict[str, str]


@pytest.fixture
def aws() -> Iterator[None]:
    from shared.store.models import TaskItem

    with mock_aws():
        TaskItem._connection = None  # clients made under an earlier mock are not mocked
        from shared.store.dynamo import ensure_table

        ensure_table("sundial-test")
        yield
        TaskItem._connection = None


@pytest.fixture
def api(aws: None) -> Callable[..., Answer]:
    """Call the API Lambda handler as API Gateway would: ``api("POST", "/v1/tasks", body)``."""
    from functions.api import handler as module

    module.service.cache_clear()

    def call(method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Answer:
        raw = module.handler(api_event(method, path, body, headers), FakeLambdaContext())
        text = raw.get("body")
        return Answer(raw["statusCode"], json.loads(text) if text else None, raw.get("headers") or {})

    return call
