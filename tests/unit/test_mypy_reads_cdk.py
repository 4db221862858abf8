"""mypy reads every aws-cdk-lib module the code imports (pyproject.toml skips the others).

aws-cdk-lib's package imports all of its modules, so mypy is told to skip `aws_cdk.*` and to
read back the ones named in a second override. A module missing from that list would type as
Any, and mistakes in the constructs built from it would pass unseen: this test says which.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def _read_back() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    skipped = [o for o in config["overrides"] if o.get("follow_imports") == "skip"]
    assert [o["module"] for o in skipped] == [["aws_cdk.*"]]
    return {
        module
        for override in config["overrides"]
        if override.get("follow_imports") == "normal"
        for module in override["module"]
    }


def _cdk_modules_imported() -> set[str]:
    imported: set[str] = set()
    for package in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["packages"]:
        where = ROOT / package if (ROOT / package).is_dir() else ROOT / "receiver-kit" / package
        for path in where.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.ImportFrom) and node.module == "aws_cdk":
                    imported |= {f"aws_cdk.{alias.name}" for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("aws_cdk"):
                    imported.add(str(node.module))
                elif isinstance(node, ast.Import):
                    imported |= {a.name for a in node.names if a.name.startswith("aws_cdk")}
    return imported


def test_every_cdk_module_the_code_imports_is_read_by_mypy() -> None:
    imported = _cdk_modules_imported()
    assert "aws_cdk.aws_lambda" in imported, "the scan found the stack's imports"
    # `from aws_cdk import Stack, Duration` names classes of the package itself, which is read.
    modules = {name for name in imported if name.split(".")[-1].islower() or name == "aws_cdk"}
    assert sorted(modules - _read_back()) == []
