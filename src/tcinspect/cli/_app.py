"""The Typer application every command registers on (``@app.command``); ``tcinspect.cli`` runs it."""

from __future__ import annotations

import sys

import typer

from tcinspect._version import __version__
from tcinspect.cli.common import DEBUG, EXIT_CODES_HELP

app = typer.Typer(
    name="tcinspect",
    help="Inspect every stage of torch.compile (Dynamo, AOTAutograd, Inductor) from one compile.\n\n" + EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"tcinspect {__version__}\n")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", help="Print tcinspect's version and exit.",
                                       callback=_version, is_eager=True),
          debug: bool = typer.Option(False, "--debug", help="Show tracebacks of errors, and torch's own log output "
                                     "(compiles in tcinspect's own process); every command also takes it.")) -> None:
    """Inspect every stage of torch.compile (Dynamo, AOTAutograd, Inductor) from one compile."""
    # the global flags, before the command parses its own options (its own --debug turns it on too); only
    # what comes before the command's name is tcinspect's, so a script's `-- --debug` never reaches here
    DEBUG[:] = [True] if debug else []
