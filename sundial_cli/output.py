"""What the commands print: rich tables for people (the default), the API's JSON for scripts
(``--output json``), errors on stderr."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import click
from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from sundial_cli.client import UNEXPECTED, ApiError

TABLE = "table"
JSON = "json"
FORMATS = (TABLE, JSON)

EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_UNAUTHORIZED = 4
EXIT_FAILED = 5
EXIT_RATE_LIMITED = 6
EXIT_RUN_FAILED = 7
EXIT_STILL_RUNNING = 8

EXIT_CODES = f"""Exit codes:

\b
  0  success
  {EXIT_REFUSED}  the API refused the request (a 4xx not listed below)
  {EXIT_USAGE}  usage error (a bad option, a file that cannot be read)
  {EXIT_NOT_FOUND}  not found (404)
  {EXIT_UNAUTHORIZED}  unauthorized or forbidden (401, 403)
  {EXIT_FAILED}  Sundial failed or could not be reached (5xx, connection refused, timeout,
     an answer that is not what the API documents)
  {EXIT_RATE_LIMITED}  rate limited or over quota (429; Retry-After is printed)
  {EXIT_RUN_FAILED}  --wait: the workflow run ended failed or cancelled
  {EXIT_STILL_RUNNING}  --wait: the workflow run was still running when the wait ran out
"""


def exit_code(error: ApiError) -> int:
    if error.status == 0 or error.status >= 500 or error.code == UNEXPECTED:
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
    click.echo(f"error: {error.code}: {error.message}", err=True)
    for field, message in error.details:
        click.echo(f"  {field}: {message}", err=True)
    if error.retry_after is not None:
        click.echo(f"  retry after: {error.retry_after} s", err=True)


@dataclass(frozen=True)
class Column:
    """A table column: its header and how to read a cell from a row (an item as the API answers
    it: a dict of JSON values)."""

    header: str
    value: Callable[[dict[str, Any]], Any]
    no_wrap: bool = False


def field(name: str, header: str | None = None, no_wrap: bool = False) -> Column:
    """A column showing the row's member ``name`` (dotted for nested members)."""

    def read(row: dict[str, Any]) -> Any:
        value: Any = row
        for part in name.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value

    return Column(header or name, read, no_wrap)


def as_json(item: Any) -> Any:
    """A model as the API answers it (times as ``2026-03-01T08:00:00.000Z``)."""
    if isinstance(item, BaseModel):
        return item.model_dump(mode="json", by_alias=True, exclude_none=False)
    return item


def cell(value: Any) -> str:
    """A JSON value as a table shows it: null as ``-``, structures as compact JSON."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


UNWRAPPED = 100_000
"""The width of a console that is not a terminal: wider than any row."""


def console() -> Console:
    """A terminal's console; colourless and never wrapped when stdout is not a terminal: a script
    reads one row a line whatever ``COLUMNS`` says."""
    if sys.stdout.isatty():
        return Console()
    return Console(width=UNWRAPPED, no_color=True, color_system=None, highlight=False)


def _print(renderable: Table) -> None:
    screen = console()
    with screen.capture() as captured:
        screen.print(renderable)
    click.echo("\n".join(line.rstrip() for line in captured.get().splitlines()))


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def table(rows: Sequence[Any], columns: Sequence[Column], title: str | None = None) -> None:
    grid = Table(title=title, show_edge=False, box=None, header_style="bold", pad_edge=False)
    for column in columns:
        grid.add_column(column.header.upper(), no_wrap=column.no_wrap, overflow="fold")
    for row in rows:
        data = as_json(row)
        grid.add_row(*(cell(column.value(data)) for column in columns))
    _print(grid)


def record(model: BaseModel, title: str | None = None) -> None:
    """One object as a two-column table: its members and their values."""
    grid = Table(title=title, show_header=False, show_edge=False, box=None, pad_edge=False)
    grid.add_column("member", style="bold", no_wrap=True)
    grid.add_column("value", overflow="fold")
    for name, value in as_json(model).items():
        grid.add_row(name, cell(value))
    _print(grid)


def note(text: str) -> None:
    """A line for people after a table (on stderr, so stdout stays the table)."""
    click.echo(text, err=True)
