"""The browser suite: the web console in Debian's headless Chromium, driven by Playwright for
Python, against a local runtime of its own (started as the e2e suite's is: tests/support/runtime.py).

Skips, saying why, where no Chromium is installed (``make test`` installs Debian's as root) or
Playwright is missing. The browser reaches loopback only: every request to another host is
aborted before it leaves. Screenshots go to ``.artifacts/console/`` (:func:`shoot`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.support.chromium import launch_args
from tests.support.runtime import ADMIN_KEY, Client, running_runtime

CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
"""Debian's chromium (``apt-get install chromium``); another Chromium with ``CHROMIUM_PATH``."""
ARTIFACTS = Path(__file__).resolve().parents[2] / ".artifacts" / "console"
DOCS_SHOTS = Path(__file__).resolve().parents[2] / "docs" / "console"
"""Where the screenshots docs/console.md shows are kept: refreshed from a run of this suite with
``CONSOLE_DOCS_SHOTS=1`` (the viewport only, so each stays small)."""
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


@pytest.fixture(scope="session")
def sundial() -> Iterator[Client]:
    """The local runtime (``make run``), with the admin key :data:`ADMIN_KEY`."""
    with running_runtime() as client:
        yield client


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip(
            f"no Chromium at {CHROMIUM}: `make test` installs Debian's (apt-get install chromium) when run "
            "as root; elsewhere install it, or point CHROMIUM_PATH at a Chromium"
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright for Python is missing: pip install -r requirements-dev.txt")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=launch_args())
        try:
            yield launched
        finally:
            launched.close()


@dataclass
class Problems:
    """What the page reported that a working console never does."""

    csp: list[str]
    errors: list[str]


@pytest.fixture
def page(browser: Any, sundial: Client) -> Iterator[Any]:
    """A fresh browser context (its own sessionStorage) on the runtime; fails the test when the
    page broke its Content Security Policy or threw an uncaught error."""
    context = browser.new_context(base_url=sundial.base, viewport={"width": 1280, "height": 860})
    context.set_default_timeout(15_000)

    def loopback_only(route: Any) -> None:
        if urlsplit(route.request.url).hostname in LOOPBACK:
            route.continue_()
        else:
            route.abort()

    context.route("**/*", loopback_only)
    opened = context.new_page()
    problems = Problems([], [])

    def console(message: Any) -> None:
        if "Content Security Policy" in message.text:
            problems.csp.append(message.text)

    opened.on("console", console)
    opened.on("pageerror", lambda error: problems.errors.append(str(error)))
    try:
        yield opened
    finally:
        context.close()
    assert not problems.csp, f"the page broke its Content Security Policy: {problems.csp}"
    assert not problems.errors, f"uncaught errors in the page: {problems.errors}"


@pytest.fixture
def shoot() -> Callable[..., Path]:
    """``shoot(page, "tasks")``: a full-page screenshot kept as ``.artifacts/console/tasks.png``;
    with ``docs=True`` it is also the page docs/console.md shows, written to docs/console/ when
    ``CONSOLE_DOCS_SHOTS`` is set."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def take(page: Any, name: str, docs: bool = False) -> Path:
        path = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        if docs and os.environ.get("CONSOLE_DOCS_SHOTS"):
            DOCS_SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(DOCS_SHOTS / f"{name}.png"), full_page=False)
        return path

    return take


@dataclass(frozen=True)
class Tenant:
    id: str
    key: str
    """The API key's secret (``Authorization: Bearer <key>``)."""
    key_id: str


@pytest.fixture
def new_tenant(sundial: Client) -> Callable[[str], Tenant]:
    """``new_tenant("acme")``: a tenant of its own for the test (the id made unique), with its first key."""
    import uuid

    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}

    def create(prefix: str) -> Tenant:
        status, body = sundial.call("POST", "/v1/tenants", {"id": f"{prefix}-{uuid.uuid4().hex[:8]}"}, admin)
        assert status == 201, body
        return Tenant(body["id"], body["key"]["secret"], body["key"]["id"])

    return create
