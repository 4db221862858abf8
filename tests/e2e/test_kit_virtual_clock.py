"""The receiver kit's fixture for users' suites (receiver-kit/sundial_receiver/testing.py): its
documented example (receiver-kit/examples/test_monthly_task.py, a monthly task across 13 months,
its runs equal to the preview, its signatures verified) run by pytest as a user would run it,
against this checkout's local runtime; and the settings it starts the runtime with are the
runtime's own names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from local.settings import LocalSettings
from shared.settings.environment import env_name

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "receiver-kit"


def test_the_kits_settings_are_the_runtimes() -> None:
    from sundial_receiver import testing

    assert LocalSettings.setting_name("clock") == testing.CLOCK_ENV
    assert LocalSettings.setting_name("port") == testing.PORT_ENV
    assert LocalSettings.setting_name("data") == testing.DATA_ENV
    assert env_name("admin_key") == testing.ADMIN_KEY_ENV


def test_the_documented_example_passes_against_this_checkout(tmp_path: Path) -> None:
    environ = {k: v for k, v in os.environ.items() if k not in LocalSettings.env_names() and not k.startswith("AWS_")}
    from sundial_receiver.testing import HOME_ENV

    environ.update({HOME_ENV: str(ROOT), "PYTHONPATH": str(KIT)})
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "examples/test_monthly_task.py",
        ],
        cwd=KIT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "1 passed" in result.stdout
