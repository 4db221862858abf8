"""The console's first page in a real browser: every file it names loads under its Content
Security Policy (the ``page`` fixture fails the test on a violation or an uncaught error), and
the sign-in form is what a visitor without a key sees."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


def test_the_console_opens_on_sign_in_within_its_policy(page, shoot) -> None:
    answer = page.goto("/console/")
    assert answer is not None
    assert answer.status == 200
    assert "script-src 'self'" in answer.headers["content-security-policy"]
    page.get_by_label("API key").wait_for()
    assert page.title().startswith("Sundial")
    # the vendored chart library ran (a classic script, before the console's module)
    assert page.evaluate("typeof uPlot") == "function"
    shoot(page, "sign-in")
