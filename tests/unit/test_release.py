"""One version, written down: ``VERSION`` is the three wheels' (the root project and the receiver
kit read it; release/dist.py writes it into the cdk wheel), CHANGELOG.md has its entry and every
release's, each has an upgrade note, and the release record names each release's commit
(docs/construct.md, section 2). tests/infrastructure/test_external_app.py checks the built wheels."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path

import pytest

from release import dist, record

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
SEMVER = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")
ENTRY = re.compile(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", re.MULTILINE)


def test_the_version_is_one_semantic_version_read_by_each_project() -> None:
    version = record.current_version()
    assert SEMVER.fullmatch(version)
    assert dist.version() == version
    root = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in root["project"]
    assert "version" in root["project"]["dynamic"]
    assert root["tool"]["setuptools"]["dynamic"]["version"] == {"file": "VERSION"}
    kit = tomllib.loads((ROOT / "receiver-kit" / "pyproject.toml").read_text())
    assert "version" not in kit["project"]
    assert kit["project"]["dynamic"] == ["version"]
    spec = importlib.util.spec_from_file_location("kit_backend", ROOT / "receiver-kit" / "build_backend.py")
    assert spec is not None
    assert spec.loader is not None
    backend = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(backend)
    assert backend._project()["version"] == version
    assert f'"{dist.CLI}=={version}"' in dist.cdk_pyproject()
    assert f'version = "{version}"' in dist.cdk_pyproject()


def test_the_changelog_has_this_version_first_and_every_release() -> None:
    entries = ENTRY.findall((ROOT / "CHANGELOG.md").read_text())
    if entries and entries[0] == ("Unreleased", ""):  # what is merged since, as Keep a Changelog keeps it
        entries = entries[1:]
    versions = [version for version, _ in entries]
    assert versions[0] == record.current_version()
    assert all(date for _, date in entries), "each entry is dated"
    assert {release.version for release in record.releases()} <= set(versions)
    assert versions == sorted(versions, key=record.version_key, reverse=True)


def test_each_version_has_an_upgrade_note() -> None:
    for version in (record.current_version(), *(release.version for release in record.releases())):
        note = record.upgrade_note(version)
        assert note.is_file(), f"{note.relative_to(ROOT)}: what a deploy of {version} replaces, what is in flight sees"
        text = note.read_text()
        assert "replaces" in text
        assert "in flight" in text


def test_the_release_record_names_each_release_s_commit_and_the_previous_one() -> None:
    releases = record.releases()
    assert releases, "0.1.0 at least"
    assert len({release.version for release in releases}) == len(releases)
    for release in releases:
        assert SEMVER.fullmatch(release.version)
        assert re.fullmatch(r"[0-9a-f]{40}", release.commit), "a full commit hash"
    current = record.version_key(record.current_version())
    assert all(record.version_key(release.version) < current for release in releases), "VERSION is unreleased"
    previous = record.previous()
    assert previous is not None
    assert previous == releases[-1]
    assert record.previous("0.1.0") is None
    assert record.announced() == ()
