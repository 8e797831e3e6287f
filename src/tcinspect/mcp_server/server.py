"""The MCP server on stdio, built on the official SDK's low-level ``Server``: tcinspect's tools (``tools``), and its
saved and cached reports as resources (``reports``).

Standard output is the protocol, and nothing else may reach it: the SDK points file descriptor 1 at stderr while
it serves (a child process's output goes there too), ``sys.stdout`` is stderr meanwhile, and every capture runs in
a child process. Tool calls run one at a time, each in a worker thread, while the client hears how long it has run
and what it is doing (progress notifications, when it sent a progress token). A bad input or a failed run is a tool
error with the CLI's one line; a bug in tcinspect is one too, its traceback on stderr.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from tcinspect import interrupts
from tcinspect._version import __version__
from tcinspect.errors import ExitCode, TcinspectError
from tcinspect.mcp_server import reports, tools

#: Seconds between two progress notifications while a tool runs.
PROGRESS_EVERY_S = 2.0

INSTRUCTIONS = (
    "tcinspect answers questions about one torch.compile run: graph breaks, guards and recompiles, dynamic shapes, "
    "Inductor's kernels, compile time and caches, memory, CUDA graphs, ranks, coverage, budgets. Give a tool a model "
    "file (a .py defining `model` and `example_inputs`, or a script), a saved report (.yaml/.json) or a TORCH_TRACE "
    "log; paths are relative to the server's working directory. Start with `trace`; a capture is cached, so the "
    "other tools asked with the same options read it instead of compiling again. backend='eager' or 'aot_eager' "
    "is much faster than Inductor where kernels are not the question. Follow the ids across tools: a compile_id "
    "(0/1) names one compile everywhere, a break's gb_id is PyTorch's, a kernel name from `codegen` is its kernel= "
    "argument."
)

_VERDICTS = {int(ExitCode.CHECK_FAILED): "a check failed (a budget, verify's comparison, an export, ranks that diverged)"}


def serve(toolbox: tools.Toolbox, debug: bool = False) -> None:
    """Serve ``toolbox``'s tools on stdin and stdout until the client closes them."""
    anyio.run(_serve, toolbox, debug)


async def _serve(toolbox: tools.Toolbox, debug: bool) -> None:
    server = build(toolbox, debug)
    async with stdio_server() as (read, write):
        with contextlib.redirect_stdout(sys.stderr):
            try:
                await server.run(read, write, server.create_initialization_options())
            finally:
                interrupts.end_children()  # a client that leaves mid-capture: the compile ends with it


def build(toolbox: tools.Toolbox, debug: bool = False, root: Path | None = None) -> Server:
    """The server: ``toolbox``'s tools, and the reports under ``root`` (the working directory) and in the cache as
    resources. ``debug`` also writes each tool error's line on stderr."""
    one_at_a_time = threading.Lock()  # each call may compile: one machine's cores, one Inductor cache

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=t.name, title=t.name.replace("_", " "), description=t.description,
                       input_schema=toolbox.input_schema(t.name),
                       annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False))
            for t in tools.TOOLS])

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        name, arguments = params.name, dict(params.arguments or {})
        if name not in tools.BY_NAME:
            return _error(f"there is no tool {name!r} — the tools: {', '.join(tools.BY_NAME)}")
        status = _Status(f"starting {name}")

        def work() -> tools.Answer:
            if not one_at_a_time.acquire(blocking=False):
                status.set("waiting for another tool call to finish")
                one_at_a_time.acquire()
            try:
                return toolbox.answer(name, arguments, status.set)
            finally:
                one_at_a_time.release()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_tell_progress, ctx, status)
            try:
                got = await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
            except Exception as exc:  # noqa: BLE001 - a bug in tcinspect: a tool error, its traceback on stderr
                traceback.print_exc(file=sys.stderr)
                first = (str(exc).strip().splitlines() or [""])[0]
                return _error(f"internal error: {type(exc).__name__}: {first} — the traceback is on the server's "
                              "stderr; this is a bug in tcinspect, please report it")
            finally:
                tasks.cancel_scope.cancel()
        if got.error and debug:
            sys.stderr.write(f"tcinspect: {name}: {got.error}\n")
        return _result(got)

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[
            types.Resource(uri=r.uri, name=r.name, description=r.description, mime_type=r.mime_type, size=r.size)
            for r in await anyio.to_thread.run_sync(reports.listed, root)])

    async def read_resource(ctx: Any, params: Any) -> types.ReadResourceResult:
        try:
            item, text = await anyio.to_thread.run_sync(reports.read, str(params.uri), root)
        except TcinspectError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=exc.one_line()) from None
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=item.uri, text=text,
                                                                             mime_type=item.mime_type)])

    return Server("tcinspect", version=__version__, instructions=INSTRUCTIONS, on_list_tools=list_tools,
                  on_call_tool=call_tool, on_list_resources=list_resources, on_read_resource=read_resource)


class _Status:
    """What the running tool is doing, as its command's progress line says (set from the worker thread)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.started = time.monotonic()

    def set(self, label: str) -> None:
        self.label = label


async def _tell_progress(ctx: Any, status: _Status) -> None:
    """A progress notification now and every PROGRESS_EVERY_S seconds (a no-op without the client's token)."""
    while True:
        elapsed = time.monotonic() - status.started
        await ctx.session.report_progress(round(elapsed, 1), None, f"{status.label} ({elapsed:.0f} s)")
        await anyio.sleep(PROGRESS_EVERY_S)


def _result(got: tools.Answer) -> types.CallToolResult:
    """The tool's result: the data as structured content and as JSON text, the error line first, then the notes."""
    content: list[types.ContentBlock] = [types.TextContent(text=f"tcinspect: error: {got.error}")] if got.error else []
    if got.data is not None:
        content.append(types.TextContent(text=json.dumps(got.data, ensure_ascii=False)))
    content += [types.TextContent(text=f"tcinspect: {note}") for note in got.notes]
    if got.exit_code and not got.error:
        content.append(types.TextContent(text=f"tcinspect: exit {got.exit_code}: "
                                              f"{_VERDICTS.get(got.exit_code, 'see docs/errors.md')}"))
    return types.CallToolResult(content=content, structured_content=got.data, is_error=bool(got.error))


def _error(line: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=f"tcinspect: error: {line}")], is_error=True)
