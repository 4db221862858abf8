"""The settings' variable names are spelled once: the functions' in shared/settings/environment.py,
the local runtime's own knobs in local/settings.py. Anywhere else such a literal name (it starts
with ``shared.settings.environment.ENV_PREFIX``) is a copy that can drift from what the stack
writes and the functions read; use ``shared.settings.environment.env_name`` or
``Settings.to_env`` / ``from_env`` (and ``local.settings.LocalSettings``) instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.settings.environment import ENV_PREFIX

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
SEARCHED = ("shared", "functions", "infra", "local", "bench", "release", "tests", "app.py")
OWNERS = {"shared/settings/environment.py", "local/settings.py"}


def _files() -> list[Path]:
    found = []
    for top in SEARCHED:
        path = ROOT / top
        candidates = [path] if path.is_file() else path.rglob("*")
        found += [f for f in candidates if f.is_file() and "__pycache__" not in f.parts]
    return found


def test_the_searched_tree_is_the_project() -> None:
    files = {f.relative_to(ROOT).as_posix() for f in _files()}
    assert files >= OWNERS
    assert "functions/trigger/handler.py" in files
    assert "tests/integration/conftest.py" in files


def test_sundial_variable_names_appear_only_in_the_modules_that_own_them() -> None:
    offenders = []
    for path in _files():
        relative = path.relative_to(ROOT).as_posix()
        if relative in OWNERS:
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        offenders += [
            f"{relative}:{number}: {line.strip()}"
            for number, line in enumerate(text.splitlines(), 1)
            if ENV_PREFIX in line
        ]
    assert offenders == []


def test_the_owners_do_name_them() -> None:
    for owner in OWNERS:
        assert ENV_PREFIX in (ROOT / owner).read_text()
