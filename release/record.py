"""The release record, ``release/releases.json``: each released version, the commit it was made
from, and the replacements of stateful resources its deploy makes on purpose (``announced``: each
logical ID, which its upgrade note names too); ``unreleased``: those of the version being made
(``VERSION``). The upgrade check diffs HEAD against the last release before ``VERSION``
(tests/infrastructure/test_upgrade.py; docs/construct.md, section 3).

Releasing a version: add its entry (its commit, and ``unreleased``'s announcements, which empty),
and move ``VERSION`` on, with its ``CHANGELOG.md`` section and its upgrade note.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

RECORD = Path(__file__).resolve().with_name("releases.json")
ROOT = RECORD.parent.parent
CHANGELOG = ROOT / "CHANGELOG.md"
UPGRADE_NOTES = ROOT / "docs" / "upgrading"


@dataclass(frozen=True)
class Release:
    version: str
    commit: str
    """The full hash of the commit the release was made from."""
    announced: tuple[str, ...] = ()
    """Logical IDs of stateful resources a deploy of this release replaces, on purpose."""


def version_key(version: str) -> tuple[int, ...]:
    """``0.10.1`` -> ``(0, 10, 1)``: versions compared as numbers."""
    return tuple(int(part) for part in version.split("."))


def current_version() -> str:
    """The version being made: ``VERSION``."""
    return (ROOT / "VERSION").read_text().strip()


def releases(record: Path = RECORD) -> list[Release]:
    """Every release, oldest first."""
    entries = json.loads(record.read_text())["releases"]
    found = [Release(e["version"], e["commit"], tuple(e.get("announced", ()))) for e in entries]
    return sorted(found, key=lambda release: version_key(release.version))


def announced(record: Path = RECORD) -> tuple[str, ...]:
    """The replacements the version being made announces (``unreleased``)."""
    return tuple(json.loads(record.read_text()).get("unreleased", {}).get("announced", ()))


def previous(version: str | None = None, record: Path = RECORD) -> Release | None:
    """The last release before ``version`` (default: :func:`current_version`); None if none."""
    at = version_key(version or current_version())
    earlier = [release for release in releases(record) if version_key(release.version) < at]
    return earlier[-1] if earlier else None


def upgrade_note(version: str) -> Path:
    """``docs/upgrading/<version>.md``: what a deploy of ``version`` over the one before replaces,
    and what an occurrence in flight sees during it."""
    return UPGRADE_NOTES / f"{version}.md"
