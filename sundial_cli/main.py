"""The ``sundial`` command's entry point."""

from __future__ import annotations

import click


@click.group()
@click.version_option(package_name="sundial", prog_name="sundial")
def cli() -> None:
    """Sundial's command line."""


def main() -> None:
    cli()
