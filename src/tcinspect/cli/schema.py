"""`tcinspect schema`: the saved report's JSON Schema, as shipped in the package."""

from __future__ import annotations

import typer

from tcinspect.cli._app import app


@app.command(epilog="Example: tcinspect schema > report.schema.json")
def schema() -> None:
    """Print the JSON Schema of a saved report (YAML or JSON): every key, its type, which are always there."""
    from tcinspect.serialize.schema import shipped

    typer.echo(shipped(), nl=False)
