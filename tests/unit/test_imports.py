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
