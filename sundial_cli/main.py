"""The ``sundial`` command: every route of Sundial's API from a terminal or a script."""

from __future__ import annotations

from typing import Any

import click

from sundial_cli import output
from sundial_cli.client import ApiError
from sundial_cli.commands.admin import keys, tenants
from sundial_cli.commands.admin_key import admin_key
from sundial_cli.commands.backfills import backfill, backfill_cancel, backfills
from sundial_cli.commands.bulk import bulk
from sundial_cli.commands.common import State
from sundial_cli.commands.overview import overview
from sundial_cli.commands.profiles import profile
from sundial_cli.commands.resources import dead_letters, jobs, limits, signing_secrets
from sundial_cli.commands.status_index import status_index
from sundial_cli.commands.tasks import schedules, tasks
from sundial_cli.commands.workflows import workflow_runs, workflows
from sundial_cli.settings import (
    CONFIG_ENV,
    DEFAULT_PORT,
    KEY_ENV,
    LOCAL_HOST,
    OUTPUT_ENV,
    PORT_ENV,
    PROFILE_ENV,
    URL_ENV,
)

EPILOG = f"""Settings: --url and --api-key, else ${URL_ENV} and ${KEY_ENV}, else the profile
(--profile, else ${PROFILE_ENV}, else "default") in ${CONFIG_ENV} or
~/.config/sundial/config.toml, else http://{LOCAL_HOST}:${PORT_ENV} ({DEFAULT_PORT} when unset, as
make run) with no key (make run's tenant "default").

{output.EXIT_CODES}"""


class Sundial(click.Group):
    """Prints an API error (``error: <code>: <message>``, a line per field) and exits with its code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ApiError as error:
            output.print_error(error)
            ctx.exit(output.exit_code(error))
        finally:
            state = ctx.find_object(State)
            if state is not None:
                state.close()


@click.group("sundial", cls=Sundial, epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--url", metavar="URL", help=f"The API's URL (default http://{LOCAL_HOST}:${PORT_ENV}, else :{DEFAULT_PORT})."
)
@click.option("--api-key", metavar="KEY", help="The API key (the admin key for tenants and keys).")
@click.option("--profile", metavar="NAME", help="A profile of the config file.")
@click.option(
    "--output",
    "-o",
    type=click.Choice(output.FORMATS),
    default=output.TABLE,
    show_default=True,
    envvar=OUTPUT_ENV,
    help=f"Tables for people, or the API's JSON for scripts (also ${OUTPUT_ENV}).",
)
@click.option("--timeout", type=click.FloatRange(min=0.1), default=30.0, show_default=True, help="Seconds per request.")
@click.version_option(package_name="sundial", prog_name="sundial")
@click.pass_context
def cli(
    ctx: click.Context, url: str | None, api_key: str | None, profile: str | None, output: str, timeout: float
) -> None:
    """Sundial's command line: every route of the API."""
    given = ctx.obj if isinstance(ctx.obj, State) else State()
    ctx.obj = State(
        url=url, api_key=api_key, profile=profile, output=output, timeout=timeout, transport=given.transport
    )


for group in (
    overview,
    tasks,
    schedules,
    workflows,
    workflow_runs,
    dead_letters,
    jobs,
    limits,
    signing_secrets,
    tenants,
    keys,
    admin_key,
    status_index,
    profile,
):
    cli.add_command(group)
tasks.add_command(bulk)  # sundial tasks bulk pause|resume|cancel (sundial_cli/commands/bulk.py)
for command in (backfill, backfills, backfill_cancel):  # sundial_cli/commands/backfills.py
    tasks.add_command(command)


def main() -> None:
    cli(prog_name="sundial")
