"""How the browser suite launches Chromium: Playwright's own switches, and ours after them.

Chromium keeps the last ``--disable-features`` of its command line, and Playwright puts its own
list first: a second list of ours would switch Playwright's features back on. So ours is one list
that holds Playwright's too, read from the driver it ships (:func:`playwright_disabled_features`).

What ours turns off: the omnibox popup's two WebUI pages (``chrome://omnibox-popup.top-chrome/``
and its AI Mode page), which Chromium's new headless mode loads in a renderer of their own for
every window it opens, so for every browser context a test makes, and which no test looks at.
Measured on Debian's Chromium 156 by opening 16 contexts, one page each, and reading the CPU time of
Chromium's processes from /proc: 0.93 CPU-seconds a context with them, 0.29 without. That each
window opens no such page is tests/browser/test_chromium.py's check."""

from __future__ import annotations

import re
from pathlib import Path

OURS_DISABLED = ("WebUIOmniboxPopup", "WebUIOmniboxAimPopup")
"""The features switched off beside Playwright's (the names Chromium's binary carries)."""

LAUNCH_ARGS = [
    "--no-sandbox",  # as root in a container
    "--disable-gpu",
    "--no-first-run",
    # no calls home: this machine's network is closed, and the tests must not reach it anyway
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
]

_LIST = re.compile(r"\bdisabledFeatures\s*=\s*\[(.*?)\]\s*\.filter\(Boolean\)", re.DOTALL)


def playwright_disabled_features(driver: Path | None = None) -> list[str]:
    """The features Playwright's launch disables, as its driver's chromiumSwitches module lists them
    (an empty list when the driver is not found or no longer reads so)."""
    if driver is None:
        try:
            import playwright
        except ImportError:
            return []
        driver = Path(playwright.__file__).resolve().parent / "driver" / "package" / "lib"
    sources = sorted(driver.rglob("*.js")) if driver.is_dir() else [driver] if driver.is_file() else []
    for source in sources:
        text = source.read_text(encoding="utf-8", errors="replace")
        if "disabledFeatures" not in text:
            continue
        if found := _LIST.search(text):
            body = "\n".join(line for line in found.group(1).splitlines() if not line.strip().startswith("//"))
            return re.findall(r'"([A-Za-z0-9_]+)"', body)
    return []


def launch_args(playwrights: list[str] | None = None) -> list[str]:
    """:data:`LAUNCH_ARGS`, and one ``--disable-features`` with Playwright's and ours, when
    Playwright's could be read (else none: Playwright's own list stays, the windows' popups too)."""
    playwrights = playwright_disabled_features() if playwrights is None else playwrights
    if not playwrights:
        return list(LAUNCH_ARGS)
    features = [*playwrights, *(f for f in OURS_DISABLED if f not in playwrights)]
    return [*LAUNCH_ARGS, f"--disable-features={','.join(features)}"]
