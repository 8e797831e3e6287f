"""The Typer application every command registers on (``@app.command``); ``tcinspect.cli`` runs it."""

from __future__ import annotations

import sys

import typer

from tcinspect._version import __version__
from tcinspect.cli.common import EXIT_CODES_HELP

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
                                       callback=_version, is_eager=True)) -> None:
    """Inspect every stage of torch.compile (Dynamo, AOTAutograd, Inductor) from one compile."""
