"""The browser suite's Chromium switches (tests/support/chromium.py): one ``--disable-features``
that keeps Playwright's list and adds ours, read from the Playwright driver installed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.chromium import LAUNCH_ARGS, OURS_DISABLED, launch_args, playwright_disabled_features

pytestmark = pytest.mark.unit


def test_the_installed_playwrights_list_is_read() -> None:
    features = playwright_disabled_features()
    # else Playwright's driver no longer lists them as tests/support/chromium.py reads them
    assert len(features) >= 5
    assert all(feature.isidentifier() for feature in features)
    assert len(set(features)) == len(features)


def test_the_list_is_read_without_its_comments_and_with_its_conditional_entries(tmp_path: Path) -> None:
    bundle = tmp_path / "lib" / "bundle.js"
    bundle.parent.mkdir()
    bundle.write_text(
        'var enabledFeatures = ["NotThis"];\n'
        "disabledFeatures = [\n"
        '  // See "https://example.invalid/Quoted" for why\n'
        '  "PaintHolding",\n'
        '  process.env.X ? "" : "MediaRouter",\n'
        '  "AimEnabled"\n'
        "].filter(Boolean);\n"
    )
    assert playwright_disabled_features(bundle.parent) == ["PaintHolding", "MediaRouter", "AimEnabled"]
    assert playwright_disabled_features(tmp_path / "absent") == []


def test_one_disable_features_holds_playwrights_and_ours_after_the_rest() -> None:
    args = launch_args(["PaintHolding", "WebUIOmniboxPopup"])
    assert args[: len(LAUNCH_ARGS)] == LAUNCH_ARGS
    lists = [arg for arg in args if arg.startswith("--disable-features=")]
    assert lists == [f"--disable-features=PaintHolding,WebUIOmniboxPopup,{OURS_DISABLED[1]}"]


def test_without_playwrights_list_no_list_of_ours_replaces_it() -> None:
    assert launch_args([]) == LAUNCH_ARGS
