"""`tcinspect mcp`: every question tcinspect answers, as tools of a Model Context Protocol server on stdio."""

from __future__ import annotations

from tcinspect.cli import common as c
from tcinspect.cli._app import app
from tcinspect.errors import UsageError


@app.command(epilog="Example: tcinspect mcp")
def mcp(debug: c.DebugOpt = False) -> None:
    """Serve coding agents over MCP (stdio): one tool per question (trace, breaks, guards, shapes, codegen, compile time, memory, CUDA graphs, ranks, check, diff, coverage, verify, export), each answering with its command's JSON."""
    try:
        from tcinspect.mcp_server import server
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types"):
            raise
        raise UsageError("`tcinspect mcp` needs the MCP Python SDK (the `mcp` package), which is not installed",
                         "pip install 'tcinspect[mcp]'") from None
    import typer.main

    from tcinspect.mcp_server.tools import Toolbox

    # the server runs these very commands, for an agent instead of a terminal (common.served)
    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    server.serve(Toolbox(commands, c.served), debug=debug or bool(c.DEBUG))
