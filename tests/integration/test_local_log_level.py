"""The local runtime's functions log at the level its environment says (local/runtime.py,
``use_powertools_env``), though their logger was built before the runtime set it."""

from __future__ import annotations

import logging

import pytest

from local.runtime import POWERTOOLS_ENV, use_powertools_env
from shared.observability import logger

pytestmark = pytest.mark.integration


@pytest.fixture
def info_logger(monkeypatch: pytest.MonkeyPatch):
    """The logger as `python -m local` had it: built at INFO, before the runtime started."""
    before = logger.log_level
    logger.setLevel(logging.INFO)
    yield logger
    logger.setLevel(before)


def test_make_run_does_not_log_every_registration(info_logger, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POWERTOOLS_LOG_LEVEL", raising=False)
    use_powertools_env()
    assert POWERTOOLS_ENV["POWERTOOLS_LOG_LEVEL"] == "WARNING"
    assert not info_logger.isEnabledFor(logging.INFO)  # "task registered" is an INFO record
    assert info_logger.isEnabledFor(logging.WARNING)


def test_a_level_set_in_the_environment_is_kept(info_logger, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "INFO")
    use_powertools_env()
    assert info_logger.isEnabledFor(logging.INFO)
