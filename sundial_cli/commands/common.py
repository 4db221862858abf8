"""What every command group shares: the invocation's state (settings, output, the client),
reading JSON/YAML files, pages, and the options lists take."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import click
import httpx
import yaml

from sundial_cli import output
from sundial_cli.client import Answer, Client
from sundial_cli.settings import ConfigError, Settings, resolve

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class State:
    """The global options of one invocation; the client is made when a command first needs it."""

    url: str | None = None
    api_key: str | None = None
    profile: str | None = None
    output: str = output.TABLE
    timeout: float = 30.0
    transport: httpx.BaseTransport | None = None
    """Where requests go instead of the network (tests pass an ``httpx.MockTransport``)."""
    _client: Client | None = field(default=None, repr=False)

    def settings(self) -> Settings:
        try:
            return resolve(self.url, self.api_key, self.profile)
        except ConfigError as exc:
            raise click.UsageError(str(exc)) from exc

    def client(self) -> Client:
        if self._client is None:
            settings = self.settings()
            self._client = Client(settings.url, settings.api_key, timeout=self.timeout, transport=self.transport)
        return self._client

    @property
    def json(self) -> bool:
        return self.output == output.JSON

    def show(self, answer: Answer[Any], render: Callable[[], None]) -> None:
        """The answer's JSON as it came with ``--output json``, else what ``render`` prints."""
        if self.json:
            output.print_json(answer.data)
        else:
            render()

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


pass_state = click.make_pass_decorator(State)


def _set_output(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    state = ctx.find_object(State)
    if value is not None and state is not None:
        state.output = value


class Command(click.Command):
    """A command that also takes ``-o/--output`` after its name (``sundial tasks list -o json``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params.append(
            click.Option(
                ["-o", "--output"],
                type=click.Choice(output.FORMATS),
                expose_value=False,
                callback=_set_output,
                help="table or json (as the global option).",
            )
        )


class Group(click.Group):
    """A command group whose commands take ``-o/--output`` too."""

    command_class = Command


class _Loader(yaml.SafeLoader):
    """YAML without implicit timestamps: ``at: 2026-03-01T08:00:00Z`` stays the string the API reads."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def parse_document(text: str, name: str) -> Any:
    """A JSON or YAML document (JSON first: YAML would read some JSON numbers differently)."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader without timestamps
    except yaml.YAMLError as exc:
        raise click.BadParameter(f"{name} is neither JSON nor YAML: {exc}") from exc


def read_document(path: str) -> Any:
    """The JSON or YAML in a file (``-``: standard input)."""
    if path == "-":
        return parse_document(sys.stdin.read(), "standard input")
    try:
        with open(path, encoding="utf-8") as file:
            return parse_document(file.read(), path)
    except OSError as exc:
        raise click.BadParameter(f"cannot read {path}: {exc.strerror}", param_hint="--file") from exc


def read_object(path: str | None) -> dict[str, Any]:
    """A file holding one JSON/YAML object (nothing: an empty one)."""
    if path is None:
        return {}
    data = read_document(path)
    if not isinstance(data, dict):
        raise click.BadParameter(f"{path} must hold an object (a mapping)", param_hint="--file")
    return data


def json_value(text: str, option: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise click.BadParameter(f"is not valid JSON: {exc}", param_hint=option) from exc


PAGE_SIZE = 50
"""A list's page size when ``--limit`` is not given (the API's default)."""
MOST_REQUESTS = 10
"""The most requests one page of a list makes (without ``--all``)."""


def paging(command: F) -> F:
    """``--limit``, ``--cursor`` and ``--all`` on a list."""
    command = click.option("--all", "all_pages", is_flag=True, help="Follow next_cursor to the last page.")(command)
    command = click.option("--cursor", help="next_cursor of the page before.")(command)
    return click.option("--limit", type=click.IntRange(1, 100), help=f"Items per page (1-100; default {PAGE_SIZE}).")(
        command
    )


@dataclass(frozen=True)
class Page:
    """One page of a list as the command shows it: its items (models, and the JSON as it came),
    where the next one starts (None: the end) and how many requests it took."""

    rows: list[Any]
    data: dict[str, Any]
    next_cursor: str | None
    requests: int


def read_page(fetch: Callable[..., Answer[Any]], **params: Any) -> Page:
    """``limit`` items (default :data:`PAGE_SIZE`) from ``cursor`` on. A list's page may come back
    short, even empty, with a cursor (a filtered list reads a bounded number of items a request):
    that is not the end, so the cursor is followed, each request asking for what is still
    missing, until the page is full or the list ends, at most :data:`MOST_REQUESTS` requests."""
    size = params.pop("limit", None) or PAGE_SIZE
    cursor = params.pop("cursor", None)
    rows: list[Any] = []
    items: list[Any] = []
    requests = 0
    while requests < MOST_REQUESTS:
        answer = fetch(**params, limit=size - len(rows), cursor=cursor)
        requests += 1
        rows += answer.model.items
        items += answer.data["items"]
        cursor = answer.model.next_cursor
        if not cursor or len(rows) >= size:
            break
    return Page(rows, {"items": items, "next_cursor": cursor}, cursor, requests)


def listing(
    state: State,
    fetch: Callable[..., Answer[Any]],
    columns: Sequence[output.Column],
    all_pages: bool,
    **params: Any,
) -> None:
    """A list's page (:func:`read_page`), or all its pages with ``--all``; JSON: one page holding
    its items, with the cursor to go on from (null with ``--all``). A table is followed on stderr
    by how to get more when there is more."""
    if all_pages:
        pages = list(state.client().pages(fetch, **params))
        rows = [item for page in pages for item in page.model.items]
        page = Page(
            rows,
            {"items": [item for page in pages for item in page.data["items"]], "next_cursor": None},
            None,
            len(pages),
        )
    else:
        page = read_page(fetch, **params)
    if state.json:
        output.print_json(page.data)
        return
    output.table(page.rows, columns)
    if page.next_cursor:
        onwards = f"--cursor {page.next_cursor} (or --all for every page)"
        if page.rows:
            output.note(f"more: {len(page.rows)} shown, the list goes on: {onwards}")
        else:
            output.note(f"more: none found in the {page.requests} pages read, but the list goes on: {onwards}")


def choice(values: Iterable[Any]) -> click.Choice[str]:
    """The values an option takes, from the API's own enum or literal (never a copy of them)."""
    return click.Choice([str(getattr(value, "value", value)) for value in values])


def options(**given: Any) -> dict[str, Any]:
    """The options that were given (not None)."""
    return {name: value for name, value in given.items() if value is not None}
