"""``sundial profile``: named endpoints and keys in the config file."""

from __future__ import annotations

import os

import click

from sundial_cli import output
from sundial_cli.commands.common import Group, State, pass_state
from sundial_cli.settings import ConfigError, config_path, masked, read_profiles, save_profile


def _profiles() -> dict[str, dict[str, str]]:
    try:
        return read_profiles(config_path(os.environ))
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from exc


@click.group("profile", cls=Group)
def profile() -> None:
    """Named endpoints and keys ($SUNDIAL_CONFIG, else ~/.config/sundial/config.toml)."""


@profile.command("set")
@click.argument("name")
@click.option("--url", help="The API's URL (with its stage path on API Gateway).")
@click.option("--api-key", help="The API key (stored in the file, mode 0600).")
@pass_state
def set_(state: State, name: str, url: str | None, api_key: str | None) -> None:
    """Create or change a profile (members not given are kept).

    \b
    sundial profile set prod --url https://abc.execute-api.eu-west-1.amazonaws.com/prod --api-key sk_...
    """
    if url is None and api_key is None:
        raise click.UsageError("give --url and/or --api-key")
    path = config_path(os.environ)
    try:
        saved = save_profile(path, name, url, api_key)
    except (ConfigError, OSError) as exc:
        raise click.UsageError(f"cannot write {path}: {exc}") from exc
    _show(state, {name: saved})
    output.note(f"saved in {path}")


@profile.command("list")
@pass_state
def list_(state: State) -> None:
    """Every profile (keys shown by their first characters)."""
    _show(state, _profiles())


@profile.command("show")
@click.argument("name", required=False)
@pass_state
def show(state: State, name: str | None) -> None:
    """The settings a command would use (with NAME: that profile's), and where they come from."""
    if name is not None:
        profiles = _profiles()
        if name not in profiles:
            raise click.UsageError(f"no profile {name!r} in {config_path(os.environ)}")
        _show(state, {name: profiles[name]})
        return
    settings = state.settings()
    row = {
        "profile": settings.profile,
        "url": settings.url,
        "url_from": settings.source,
        "api_key": masked(settings.api_key),
        "config": str(config_path(os.environ)),
    }
    if state.json:
        output.print_json(row)
    else:
        output.table([row], [output.field(name) for name in row])


def _show(state: State, profiles: dict[str, dict[str, str]]) -> None:
    rows = [
        {"name": name, "url": values.get("url"), "api_key": masked(values.get("api_key"))}
        for name, values in sorted(profiles.items())
    ]
    if state.json:
        output.print_json(rows)
    else:
        output.table(rows, (output.field("name"), output.field("url"), output.field("api_key")))
