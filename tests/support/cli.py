"""Driving ``sundial`` in tests: in-process with click's CliRunner (fast), against a URL and a key."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from click.testing import CliRunner, Result

from sundial_cli.main import cli
from sundial_cli.settings import KEY_ENV, OUTPUT_ENV, PROFILE_ENV, URL_ENV
from tests.support.eventually import until as eventually_until

CLEAN_ENV = {URL_ENV: "", KEY_ENV: "", PROFILE_ENV: "", OUTPUT_ENV: ""}
"""No setting leaks in from the environment the tests run in."""


@dataclass
class Sundial:
    """``sundial --url URL --api-key KEY ...``."""

    url: str
    key: str | None

    def run(self, *args: str, stdin: str | None = None) -> Result:
        given = ["--url", self.url] + (["--api-key", self.key] if self.key else [])
        return CliRunner().invoke(cli, [*given, *args], input=stdin, env=CLEAN_ENV)

    def ok(self, *args: str, stdin: str | None = None) -> Result:
        result = self.run(*args, stdin=stdin)
        assert result.exit_code == 0, (args, result.exit_code, result.stdout, result.stderr, result.exception)
        return result

    def json(self, *args: str, stdin: str | None = None) -> Any:
        return json.loads(self.ok("--output", "json", *args, stdin=stdin).stdout)

    def table(self, *args: str, stdin: str | None = None) -> str:
        return self.ok(*args, stdin=stdin).stdout

    def fails(self, code: int, *args: str) -> Result:
        result = self.run(*args)
        assert result.exit_code == code, (args, result.exit_code, result.stdout, result.stderr)
        return result


def new_tenant(admin: Sundial, prefix: str = "cli") -> tuple[str, str]:
    """A tenant of its own (id, key), made with the admin key through the CLI."""
    created = admin.json("tenants", "create", f"{prefix}-{secrets.token_hex(4)}")
    return created["id"], created["key"]["secret"]


def rows(table: str) -> list[list[str]]:
    """A table's lines split into cells (two spaces or more between cells), header first."""
    import re

    return [re.split(r"\s{2,}", line.strip()) for line in table.splitlines() if line.strip()]


def until(probe: Callable[[], Any], timeout: float = 20, every: float = 0.3) -> Any:
    """The first truthy answer of ``probe`` within ``timeout`` seconds (the last answer otherwise)."""
    return eventually_until(probe, timeout, poll=every)
