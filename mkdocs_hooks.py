"""The docs site's one hook (mkdocs.yml, `make docs`): the site is laid out as the checkout is.

README.md stays the single source of the home page and docs/ of the others, and every link is
written once, for a reader of the checkout (README's ``docs/api.md``, a page's ``../README.md``
or ``../functions/api/assets.py``). So that the same links work on the site, and ``mkdocs build
--strict`` checks them as written (nothing copied or rewritten), the files mkdocs found in docs/
are put back under ``docs/``, README.md is added at the root (mkdocs makes a README its folder's
index page), and each other file of the repository a page links to is added at its own path
(a Markdown one is a page, and its links are followed in turn). A link to a file that does not
exist is left alone: the strict build reports it.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files, InclusionLevel

ROOT = Path(__file__).resolve().parent
DOCS = "docs"
HOME = "README.md"
_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
"""A Markdown link's or image's target: ``[text](target)``, ``![alt](target "title")``."""


def _targets(markdown: str, src_uri: str) -> set[str]:
    """The repository paths the relative links of a page at ``src_uri`` point to."""
    found = set()
    for target in _LINK.findall(markdown):
        path = target.split("#", 1)[0].split("?", 1)[0]
        if not path or re.match(r"^[a-z][a-z0-9+.-]*:", path, re.IGNORECASE) or path.startswith("/"):
            continue
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(src_uri), path))
        if not joined.startswith("../"):
            found.add(joined)
    return found


def on_files(files: Files, config: MkDocsConfig) -> Files:
    docs = Path(config.docs_dir).resolve()
    laid = Files([])
    for file in files:
        if file.abs_src_path is None or not Path(file.abs_src_path).resolve().is_relative_to(docs):
            laid.append(file)  # the theme's assets, where the theme put them
            continue
        moved = File.generated(
            config, f"{DOCS}/{file.src_uri}", abs_src_path=file.abs_src_path, inclusion=file.inclusion
        )
        laid.append(moved)
    laid.append(File.generated(config, HOME, abs_src_path=str(ROOT / HOME)))
    pages = [file for file in laid if file.is_documentation_page()]
    while pages:
        page = pages.pop()
        assert page.abs_src_path is not None
        for target in sorted(_targets(Path(page.abs_src_path).read_text(encoding="utf-8"), page.src_uri)):
            source = ROOT / target
            if laid.get_file_from_path(target) is not None or not source.is_file():
                continue
            added = File.generated(config, target, abs_src_path=str(source), inclusion=InclusionLevel.INCLUDED)
            laid.append(added)
            if added.is_documentation_page():
                pages.append(added)
    return laid
