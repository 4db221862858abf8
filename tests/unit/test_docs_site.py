"""The docs site (mkdocs.yml, `make docs`) builds with ``mkdocs build --strict`` and no warning:
every relative link and anchor of README.md, docs/ and the pages they link to resolves, and every
page is in the nav. A small site of its own, built with the same configuration and hook, shows
that each of those mistakes does fail the build (a check that passes on anything checks nothing)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "mkdocs.yml"
HOOK = ROOT / "mkdocs_hooks.py"

needs_mkdocs = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None,
    reason="mkdocs and mkdocs-material are not installed (requirements-dev.txt pins them; make installs them)",
)


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of ``config`` into ``site``."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config), "--site-dir", str(site)],
        cwd=config.parent,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def problems(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The build's warnings and errors, each with the indented lines that go on with it."""
    found: list[str] = []
    said = False
    for line in done.stderr.splitlines():
        if line.startswith(("WARNING", "ERROR")):
            found.append(line)
            said = True
        elif said and line.startswith(" ") and line.strip():
            found[-1] += "\n" + line
        else:
            said = False
    return found


@needs_mkdocs
def test_the_site_builds_strict_without_a_warning(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = build(CONFIG, site)
    assert done.returncode == 0, "\n".join(problems(done)) or done.stderr
    assert problems(done) == []
    assert (site / "index.html").is_file(), "README.md is the home page"
    assert (site / "docs" / "api.html").is_file()
    assert (site / "docs" / "console" / "home.png").is_file(), "the pages' images are in the site"


def test_every_page_of_docs_is_in_the_nav() -> None:
    """Said by the strict build too (``validation.nav.omitted_files``); here without mkdocs, and
    naming the page."""
    nav = CONFIG.read_text()
    pages = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md"))
    assert pages
    assert [page for page in pages if f": {page}\n" not in nav] == []
    assert ": README.md\n" in nav


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """A site with the project's configuration and hook: a home page and two pages, linked."""
    (tmp_path / "docs").mkdir()
    shutil.copy(HOOK, tmp_path / HOOK.name)
    config = CONFIG.read_text().split("\nnav:\n", 1)[0]
    config += "\nnav:\n  - Home: README.md\n  - A: docs/a.md\n  - B: docs/b.md\n"
    (tmp_path / "mkdocs.yml").write_text(config)
    (tmp_path / "README.md").write_text("# Home\n\n[a](docs/a.md), [b](docs/b.md#a-heading), [code](code.py)\n")
    (tmp_path / "code.py").write_text("print('linked from the home page')\n")
    (tmp_path / "docs" / "a.md").write_text("# A\n\n[home](../README.md), [b](b.md)\n")
    (tmp_path / "docs" / "b.md").write_text("# B\n\n## A heading\n\n[a](a.md)\n")
    return tmp_path


@needs_mkdocs
def test_the_tiny_site_builds(tiny: Path) -> None:
    done = build(tiny / "mkdocs.yml", tiny / "site")
    assert done.returncode == 0, done.stderr
    assert (tiny / "site" / "code.py").is_file(), "a repository file a page links to is in the site"


@needs_mkdocs
@pytest.mark.parametrize(
    ("page", "text", "said"),
    [
        ("docs/a.md", "# A\n\n[gone](gone.md)\n", "gone.md"),
        ("docs/a.md", "# A\n\n[b](b.md#no-such-heading)\n", "no-such-heading"),
        ("README.md", "# Home\n\n[a](docs/a.md), [b](docs/b.md), [c](docs/c.md)\n", "c.md"),
        ("docs/c.md", "# C, in no nav\n", "c.md"),
        ("docs/a.md", "# A\n\n[source](../nowhere.py)\n", "nowhere.py"),
    ],
    ids=["missing-page", "missing-anchor", "readme-link", "page-not-in-nav", "missing-repository-file"],
)
def test_a_mistake_fails_the_build(tiny: Path, page: str, text: str, said: str) -> None:
    (tiny / page).write_text(text)
    done = build(tiny / "mkdocs.yml", tiny / "site")
    assert done.returncode != 0
    assert any(said in line for line in problems(done)), done.stderr
