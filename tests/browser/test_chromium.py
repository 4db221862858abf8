"""The Chromium the suite launches (tests/support/chromium.py): a window it opens for a context
loads no omnibox popup page, Playwright's own switches stay on, and the console still works."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.browser


def test_a_context_s_window_loads_no_omnibox_popup_page(browser: Any) -> None:
    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_content("<p>one page</p>")
        targets = context.new_cdp_session(page).send("Target.getTargets")["targetInfos"]
    finally:
        context.close()
    urls = [target["url"] for target in targets]
    assert not [url for url in urls if url.startswith("chrome://omnibox-popup")], urls
    assert "about:blank" in urls
