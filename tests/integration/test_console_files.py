"""The web console's files, as the API function serves them behind the local API Gateway: public,
each with the Content Security Policy the console is built for, nothing outside its folder, and
no file that breaks that policy (inline script, inline style, a handler attribute, another origin)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from functions.api import assets
from tests.integration.conftest import store_admin_key
from tests.support.events import FakeLambdaContext, api_event, gateway

pytestmark = pytest.mark.integration

CONSOLE = Path(assets.__file__).parent / "console"


@pytest.fixture
def get(aws: None, monkeypatch: pytest.MonkeyPatch) -> Any:
    store_admin_key()
    api = gateway()

    def call(path: str, method: str = "GET", headers: dict[str, str] | None = None) -> dict[str, Any]:
        event = api_event(method, path, headers=headers)
        return api(event, FakeLambdaContext())

    return call


def test_the_console_is_public_and_served_with_its_policy(get: Any) -> None:
    index = get("/console/")
    assert index["statusCode"] == 200
    assert index["headers"]["Content-Type"] == "text/html; charset=utf-8"
    policy = index["headers"]["Content-Security-Policy"]
    assert "script-src 'self'" in policy
    assert "default-src 'none'" in policy
    assert "unsafe-inline" not in policy
    assert "unsafe-eval" not in policy
    assert index["headers"]["X-Content-Type-Options"] == "nosniff"
    assert '<script type="module" src="app.js">' in index["body"]
    # the same with a bad key: the files hold no data, the API calls they make take the key
    assert get("/console/", headers={"Authorization": "Bearer sk_nope"})["statusCode"] == 200
    assert get("/console/index.html")["body"] == index["body"]


def test_console_without_slash_redirects_relative_so_a_stage_path_is_kept(get: Any) -> None:
    answer = get("/console")
    assert answer["statusCode"] == 301
    assert answer["headers"]["Location"] == "console/"


@pytest.mark.parametrize(
    "path",
    [
        "/console/../functions/api/handler.py",
        "/console/%2e%2e/handler.py",
        "/console/nothing.js",
        "/console/vendor/",
        "/console/vendor/README.md",
    ],
)
def test_nothing_outside_the_console_files_is_served(get: Any, path: str) -> None:
    answer = get(path)
    assert answer["statusCode"] == 404
    assert '"route_not_found"' in answer["body"]


def test_only_get_and_head(get: Any) -> None:
    refused = get("/console/", method="POST")
    assert refused["statusCode"] == 405
    assert refused["headers"]["Allow"] == "GET, HEAD"
    head = get("/console/", method="HEAD")
    assert head["statusCode"] == 200
    assert head["body"] == ""


def test_an_unchanged_file_is_revalidated_not_sent_again(get: Any) -> None:
    first = get("/console/vendor/uPlot-1.6.32.min.css")
    assert first["statusCode"] == 200
    assert first["headers"]["Content-Type"] == "text/css; charset=utf-8"
    again = get("/console/vendor/uPlot-1.6.32.min.css", headers={"If-None-Match": first["headers"]["ETag"]})
    assert again["statusCode"] == 304
    assert again["body"] == ""


def test_every_file_the_pages_name_is_served(get: Any) -> None:
    """Each ``src``/``href`` of an HTML page and each relative ``import`` of a module is a file
    the console serves (a missing one is a broken console, not a 404 in a browser's console)."""
    named = 0
    for page in CONSOLE.rglob("*.html"):
        base = "/console/" + page.parent.relative_to(CONSOLE).as_posix().strip(".")
        for reference in re.findall(r'(?:src|href)="([^"]+)"', page.read_text()):
            named += 1
            assert get(base.rstrip("/") + "/" + reference)["statusCode"] == 200, reference
    for module in CONSOLE.rglob("*.js"):
        base = "/console/" + module.parent.relative_to(CONSOLE).as_posix()
        for reference in re.findall(r"""\bfrom\s+["'](\.{1,2}/[^"']+)["']""", module.read_text()):
            named += 1
            path = (Path(base) / reference).resolve().as_posix()
            assert get(path)["statusCode"] == 200, f"{module.name} imports {reference}"
    assert named


def test_no_file_breaks_the_policy() -> None:
    """What the policy would block in a browser, found before one runs: inline script, event
    handler attributes, inline styles, anything from another origin, ``eval``."""
    for page in CONSOLE.rglob("*.html"):
        html = page.read_text()
        for tag in re.findall(r"<script\b[^>]*>", html):
            assert "src=" in tag, f"{page.name}: inline script {tag}"
        assert not re.search(r"\son[a-z]+\s*=", html), f"{page.name}: an event handler attribute"
        assert not re.search(r"\sstyle\s*=", html), f"{page.name}: a style attribute"
        assert "<style" not in html, f"{page.name}: an inline style sheet"
        assert not re.search(r"""(src|href)=["'](https?:)?//""", html), f"{page.name}: a file from another origin"
    for module in CONSOLE.glob("*.js"):
        code = module.read_text()
        assert not re.search(r"\beval\(|new Function\(", code), f"{module.name} evaluates strings"
        assert not re.search(r"""["'`]https?://""", code), f"{module.name} names another origin"
