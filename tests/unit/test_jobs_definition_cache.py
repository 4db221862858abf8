"""The local runtime's cached jobs state machine definition (local/stepfunctions.py) is rebuilt
when anything it is built from changes, and only then."""

from __future__ import annotations

from pathlib import Path

import pytest

from local import stepfunctions

pytestmark = pytest.mark.unit


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name, text in {
        "infra/jobs.py": "MAX_ATTEMPTS = 2\n",
        "infra/settings.py": "SHARDS = 10\n",
        "shared/domain/firing.py": "LEAD_MS = 1000\n",
        "local/stepfunctions.py": "# the synthesizer\n",
        "functions/api/handler.py": "ROUTES = []\n",
        "docs/jobs.md": "# jobs\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def key(root: Path) -> str:
    return stepfunctions.definition_key(root, root / "local" / "stepfunctions.py")


@pytest.mark.parametrize(
    "change",
    [
        lambda root: (root / "infra" / "jobs.py").write_text("MAX_ATTEMPTS = 3\n"),
        lambda root: (root / "infra" / "settings.py").write_text("SHARDS = 20\n"),
        lambda root: (root / "shared" / "domain" / "firing.py").write_text("LEAD_MS = 2000\n"),
        lambda root: (root / "local" / "stepfunctions.py").write_text("# changed\n"),
        lambda root: (root / "infra" / "new_construct.py").write_text("\n"),
        lambda root: (root / "infra" / "settings.py").rename(root / "infra" / "deployment.py"),
    ],
    ids=["the construct", "the settings", "a shared module", "the synthesizer", "a new module", "a rename"],
)
def test_a_change_to_what_the_definition_is_built_from_makes_a_new_key(project: Path, change) -> None:
    before = key(project)
    change(project)
    assert key(project) != before


def test_a_new_cdk_library_version_makes_a_new_key(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = key(project)
    real = stepfunctions.metadata.version
    monkeypatch.setattr(
        stepfunctions.metadata, "version", lambda name: "99.0.0" if name == "constructs" else real(name)
    )
    assert key(project) != before


def test_what_the_definition_is_not_built_from_keeps_the_key(project: Path) -> None:
    before = key(project)
    (project / "functions" / "api" / "handler.py").write_text("ROUTES = ['/v1/tasks']\n")
    (project / "docs" / "jobs.md").write_text("# jobs, rewritten\n")
    (project / "infra" / "notes.txt").write_text("not code\n")
    assert key(project) == before


def test_the_key_is_the_same_from_one_run_to_the_next() -> None:
    assert stepfunctions.definition_key() == stepfunctions.definition_key()
