"""What the commands print: rich tables for people (the default), the API's JSON for scripts
(``--output json``), errors on stderr."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import click
from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from sundial_cli.client import UNREACHABLE, ApiError

TABLE = "table"
JSON = "json"
FORMATS = (TABLE, JSON)

EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_UNAUTHORIZED = 4
EXIT_FAILED = 5
EXIT_RATE_LIMITED = 6

EXIT_CODES = f"""Exit codes:

\b
  0  success
  {EXIT_REFUSED}  the API refused the request (a 4xx not listed below)
  {EXIT_USAGE}  usage error (a bad option, a file that cannot be read)
  {EXIT_NOT_FOUND}  not found (404)
  {EXIT_UNAUTHORIZED}  unauthorized or forbidden (401, 403)
  {EXIT_FAILED}  Sundial failed or could not be reached (5xx, connection refused, timeout)
  {EXIT_RATE_LIMITED}  rate limited or over quota (429; Retry-After is printed)
"""


def exit_code(error: ApiError) -> int:
    if error.status == 0 or error.status >= 500:
        return EXIT_FAILED
    if error.status == 404:
        return EXIT_NOT_FOUND
    if error.status in (401, 403):
        return EXIT_UNAUTHORIZED
    if error.status == 429:
        return EXIT_RATE_LIMITED
    return EXIT_REFUSED


def print_error(error: ApiError) -> None:
    """``error: <code>: <message>``, then one line per field at fault."""
    status = "" if error.code == UNREACHABLE or error.status == 0 else f" (HTTP {error.status})"
    click.echo(f"error: {error.code}: {error.message}{status}", err=True)
    for field, message in error.details:
        click.echo(f"  {field}: {message}", err=True)
    if error.retry_after is not None:
        click.echo(f"  retry after: {error.retry_after} s", err=True)


@dataclass(frozen=True)
class Column:
    """A table column: its header and how to read a cell from a row (a model)."""

    header: str
    value: Callable[[Any], Any]
    no_wrap: bool = False


def field(name: str, header: str | None = None, no_wrap: bool = False) -> Column:
    """A column showing the row's attribute ``name`` (dotted for nested members)."""

    def read(row: Any) -> Any:
        for part in name.split("."):
            row = getattr(row, part, None) if not isinstance(row, dict) else row.get(part)
        return row

    return Column(header or name, read, no_wrap)


def cell(value: Any) -> str:
    """A value as a table shows it: times as the API gives them, structures as compact JSON."""
    if value is None:
        return "-"
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    if hasattr(value, "value") and isinstance(value.value, str):  # an enum
        return str(value.value)
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def console() -> Console:
    """stdout, as a terminal shows it; wide and colourless when piped (no wrapped ids)."""
    out = sys.stdout
    if out.isatty():
        return Console(file=out)
    width = int(os.environ.get("COLUMNS", "0") or 0) or 200
    return Console(file=out, width=width, no_color=True, color_system=None, highlight=False, soft_wrap=False)


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def table(rows: Sequence[Any], columns: Sequence[Column], title: str | None = None) -> None:
    grid = Table(title=title, show_edge=False, box=None, header_style="bold", pad_edge=False)
    for column in columns:
        grid.add_column(column.header.upper(), no_wrap=column.no_wrap, overflow="fold")
    for row in rows:
        grid.add_row(*(cell(column.value(row)) for column in columns))
    console().print(grid)


def record(model: BaseModel, title: str | None = None) -> None:
    """One object as a two-column table: its members and their values."""
    data = model.model_dump(mode="json", by_alias=True, exclude_none=False)
    grid = Table(title=title, show_header=False, show_edge=False, box=None, pad_edge=False)
    grid.add_column("member", style="bold", no_wrap=True)
    grid.add_column("value", overflow="fold")
    for name, value in data.items():
        grid.add_row(name, cell(value))
    console().print(grid)


def note(text: str) -> None:
    """A line for people after a table (on stderr, so stdout stays the table)."""
    click.echo(text, err=True)
