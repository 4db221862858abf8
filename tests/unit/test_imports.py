"""The import contracts of pyproject.toml ([tool.importlinter]) hold: imports point down the
layers, the Lambda code stays apart from the CDK app and the local runtime, no package has an
import cycle."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def test_the_import_contracts_hold(tmp_path: Path) -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    answer = subprocess.run(
        [str(lint_imports), "--no-logo", "--cache-dir", str(tmp_path)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'receiver-kit'}"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert answer.returncode == 0, answer.stdout + answer.stderr
    assert "0 broken" in answer.stdout


def test_the_functions_load_their_environment_settings_only() -> None:
    """A Lambda function reads its settings from its environment (shared/settings/environment.py):
    importing its code loads neither the CDK context's settings nor their capacity arithmetic."""
    modules = sorted(
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for path in (ROOT / "functions").rglob("*.py")
    )
    script = (
        "import importlib, sys\n"
        f"for module in {modules!r}:\n"
        "    importlib.import_module(module)\n"
        "print(' '.join(sorted(name for name in sys.modules if name.startswith('shared.settings'))))\n"
    )
    answer = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'receiver-kit'}"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert answer.returncode == 0, answer.stderr
    assert "functions.trigger.handler" in modules
    loaded = set(answer.stdout.split())
    assert "shared.settings.environment" in loaded
    assert not loaded & {"shared.settings.context", "shared.settings.capacity"}, loaded
