"""infra/__init__.py's module map names every module of infra/, and only those."""

from __future__ import annotations

from pathlib import Path

import pytest

import infra

pytestmark = pytest.mark.unit

INFRA = Path(infra.__file__).resolve().parent


def test_the_module_map_names_every_infra_module() -> None:
    modules = {path.stem for path in INFRA.glob("*.py") if path.stem != "__init__"}
    doc = infra.__doc__ or ""
    lines = doc.splitlines()[2:]
    table = lines[: lines.index("")]  # the map: from the line after the summary to the first blank line
    mapped = {line.split()[0] for line in table if not line.startswith(" ")}
    assert modules, "infra/ has modules"
    assert sorted(modules - mapped) == [], "modules missing from infra/__init__.py's map"
    assert sorted(mapped - modules) == [], "the map names modules infra/ does not have"
