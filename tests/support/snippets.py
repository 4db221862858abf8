"""The snippets a document says are tested: a fenced block right after ``<!-- tested: NAME -->``.
The tests run them as written, with only ``make run``'s address replaced by the test runtime's."""

from __future__ import annotations

import re

from tests.support.suites import TESTS_ROOT

MAKE_RUN = "http://127.0.0.1:8080"
_SNIPPET = re.compile(r"<!-- tested: ([a-z0-9-]+) -->\n```[a-z]*\n(.*?)\n```", re.DOTALL)


def snippets(document: str) -> dict[str, str]:
    """Name -> the snippet's text, from ``document`` (a path under the repository's root)."""
    text = (TESTS_ROOT.parent / document).read_text()
    return dict(_SNIPPET.findall(text))


def snippet(document: str, name: str, base: str) -> str:
    """The snippet ``name`` of ``document``, pointed at ``base`` instead of ``make run``'s address."""
    found = snippets(document)
    assert name in found, f"{document} has no snippet marked <!-- tested: {name} -->"
    return found[name].replace(MAKE_RUN, base)
