"""`tcinspect mcp` through the MCP SDK's own client over stdio: one tool per question, each answering with the data
its command prints as JSON for the same input, bad input as a tool error with the CLI's one line, a capture in a
child process with progress, the reports as resources, and a bug that stays a tool error. TORCH_TRACE logs need
no compile (torch-free); one test compiles sample_models/graph_breaks.py with the eager backend."""

from __future__ import annotations

import concurrent.futures
import importlib.abc
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from helpers import DATA, ROOT, SAMPLES, cli
from tcinspect.mcp_server import reports, tools

LOGS = DATA / "torch_trace" / "torch-2.13.0"
LOG = str(LOGS / "graph_breaks.log.gz")
TINY_LOG = str(LOGS / "tiny.log.gz")
RANKS = str(LOGS / "ddp_mlp-nproc2")


def _serve(tmp_path: Path, calls, args=("-m", "tcinspect", "mcp"), cwd: Path = ROOT):
    """Start the server (``python -m tcinspect mcp``) with the SDK's stdio client, run ``await calls(session)``,
    return what it returns and the server's stderr."""
    pytest.importorskip("mcp")
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    from tcinspect.mcp_server import server

    params = StdioServerParameters(command=sys.executable, args=list(args), env=dict(os.environ), cwd=str(cwd))
    errlog = tmp_path / "server-stderr.txt"

    async def main():
        with open(errlog, "w") as err:
            async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
                hello = await session.initialize()
                return hello, await calls(session)

    # a thread of its own: an earlier test in this worker may have left an event loop running in this one
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        hello, got = pool.submit(anyio.run, main).result()
    assert hello.server_info.name == "tcinspect" and hello.instructions == server.INSTRUCTIONS
    return got, errlog.read_text()


def _json(capsys, *args):
    code, out, err = cli(capsys, *args, "--format", "json")
    assert out and code in (0, 1), err  # check: 1 is a budget that failed
    return json.loads(out)


def test_one_tool_per_question_each_taking_its_commands_options(tmp_path):
    async def calls(session):
        return (await session.list_tools()).tools

    listed, _ = _serve(tmp_path, calls)
    assert [t.name for t in listed] == [t.name for t in tools.TOOLS] == [
        "trace", "breaks", "guards", "shapes", "codegen", "compile_time", "memory", "cudagraphs", "ranks", "check",
        "diff", "coverage", "verify", "export"]
    schemas = {t.name: t.input_schema for t in listed}
    assert all(s["type"] == "object" and s["additionalProperties"] is False for s in schemas.values())
    # named as the flags; what writes files, shapes only a table or compiles in the server's process is not offered
    assert {"file", "backend", "dynamic", "timeout", "nproc", "fresh"} <= set(schemas["breaks"]["properties"])
    assert schemas["check"]["properties"]["max_graph_breaks"] == {
        "type": "integer", "minimum": 0, "description": "Fail when graph breaks exceed this."}
    assert schemas["breaks"]["properties"]["backend"]["default"] == "eager"
    assert schemas["diff"]["required"] == ["a", "b"]
    for name, gone in (("trace", "output"), ("trace", "format"), ("trace", "debug"), ("codegen", "save"),
                       ("compile_time", "perfetto"), ("check", "update"), ("check", "junit"), ("shapes", "verify_spec"),
                       ("breaks", "fullgraph")):
        assert gone not in schemas[name]["properties"], (name, gone)
    assert schemas["trace"]["properties"]["sections"]["type"] == "array"


#: tool, its arguments, the CLI command line that prints the same data (measured timings left out of both)
CASES = [
    ("trace", {"file": LOG, "no_timings": True}, ["trace", LOG, "--no-timings"]),
    ("trace", {"file": LOG, "no_timings": True, "sections": ["all"]}, ["trace", LOG, "--no-timings"]),
    ("breaks", {"file": LOG}, ["breaks", LOG]),
    ("guards", {"file": LOG}, ["guards", LOG]),
    ("shapes", {"file": LOG}, ["shapes", LOG]),
    ("codegen", {"file": LOG}, ["codegen", LOG]),
    ("codegen", {"file": LOG, "kernel": "cpp_fused*"}, ["codegen", LOG, "--kernel", "cpp_fused*"]),
    ("compile_time", {"file": LOG}, ["compile-time", LOG]),
    ("memory", {"file": LOG}, ["memory", LOG]),
    ("cudagraphs", {"file": LOG, "no_timings": True}, ["trace", LOG, "--no-timings"]),
    ("coverage", {"file": LOG, "no_timings": True}, ["trace", LOG, "--no-timings"]),
    ("ranks", {"file": RANKS, "no_timings": True}, ["trace", RANKS, "--no-timings"]),
    ("check", {"files": [LOG], "max_graph_breaks": 1}, ["check", LOG, "--max-graph-breaks", "1"]),
    ("diff", {"a": TINY_LOG, "b": LOG}, ["diff", TINY_LOG, LOG]),
]


def test_each_tool_answers_with_its_commands_json(tmp_path, capsys):
    async def calls(session):
        return [await session.call_tool(name, arguments) for name, arguments, _ in CASES]

    results, stderr = _serve(tmp_path, calls)
    for (name, arguments, command), result in zip(CASES, results):
        assert not result.is_error, (name, result.content)
        doc = _json(capsys, *command)
        data = result.structured_content
        assert json.loads(result.content[0].text) == data  # the same data as text, for clients without structure
        tool = tools.BY_NAME[name]
        if tool.keys is None or arguments.get("sections") == ["all"]:
            assert data == doc, name
            continue
        # a tool built on trace: the report's header, summary and its own part, each exactly as the CLI prints it
        # (a rank without its stages: trace gives them, with rank=N)
        expected = {k: doc[k] for k in data}
        if "ranks" in expected:
            expected["ranks"] = [{k: r[k] for k in tools.RANK_KEYS if k in r} for r in doc["ranks"]]
        assert data == expected, name
        assert {"summary", "target", "status"} <= set(data) and "stages" not in data
        assert set(data) - set(tools.HEADER_KEYS) == {k for k in tool.keys if k in doc}, name
    by_name = dict(zip([c[0] for c in CASES], results))
    # the ids an agent follows: a break's gb_id and compile ids, kernel names, each rank's summary and the divergence
    breaks = by_name["breaks"].structured_content["breaks"]
    assert [b["gb_id"] for b in breaks] == ["GB0059", "GB0170", "GB0207"] and breaks[0]["compile_ids"] == ["0/0"]
    assert all(k["name"].startswith("cpp_fused") for k in results[6].structured_content["kernels"])
    ranks = by_name["ranks"].structured_content
    assert [r["rank"] for r in ranks["ranks"]] == [0, 1] and set(ranks["ranks"][0]) <= set(tools.RANK_KEYS)
    assert "divergence" in ranks and "summary" in ranks["ranks"][1]
    # what the trace tool left out is named, and where the command said where its report came from
    notes = [c.text for c in results[0].content[1:]]
    assert any("left out of this answer: stages" in n for n in notes), notes
    assert any(n.startswith("tcinspect: read TORCH_TRACE log") for n in notes), notes
    assert by_name["cudagraphs"].content[-2].text.startswith("tcinspect: this report has no cudagraphs section")
    # a failed budget is the answer (exit 1 in the CLI), not a tool error
    assert by_name["check"].structured_content["passed"] is False
    assert by_name["check"].content[-1].text.startswith("tcinspect: exit 1: a check failed")
    assert "Traceback" not in stderr


def test_bad_input_is_a_tool_error_with_the_clis_one_line(tmp_path, capsys):
    not_a_model = tmp_path / "notes.txt"
    not_a_model.write_text("not python at all (\n")
    asked = [
        ("breaks", {"file": str(tmp_path / "missing.py")}, ["breaks", str(tmp_path / "missing.py")]),
        ("trace", {"file": str(not_a_model)}, ["trace", str(not_a_model)]),
        ("guards", {"file": LOG, "dynamic": "maybe"}, ["guards", LOG, "--dynamic", "maybe"]),
        ("trace", {"file": LOG, "device": "tpu"}, ["trace", LOG, "--device", "tpu"]),
        ("codegen", {"file": LOG, "line": "nowhere"}, ["codegen", LOG, "--line", "nowhere"]),
        ("diff", {"a": LOG, "b": str(tmp_path / "missing.yaml")}, ["diff", LOG, str(tmp_path / "missing.yaml")]),
        ("breaks", {"file": LOG, "try_fixes": True}, ["breaks", LOG, "--try-fixes"]),
    ]

    async def calls(session):
        return [await session.call_tool(name, arguments) for name, arguments, _ in asked] + [
            await session.call_tool("breaks", {"file": LOG, "nproc": "two"}),
            await session.call_tool("breaks", {"file": LOG, "fullgraph": True}),
            await session.call_tool("breaks", {"file": LOG, "check_fullgraph": "yes"}),
            await session.call_tool("nope", {}),
            await session.call_tool("trace", {"file": LOG, "no_timings": True}),  # the server lives on
        ]

    results, stderr = _serve(tmp_path, calls)
    for (name, _, command), result in zip(asked, results):
        code, out, err = cli(capsys, *command)
        assert code == 2 and out == "" and result.is_error and result.structured_content is None, (name, result.content)
        assert [c.text for c in result.content] == [err.strip().splitlines()[-1]], name  # the CLI's line, whole
    nproc, unknown, not_bool, nope, fine = results[len(asked):]
    assert nproc.is_error and nproc.content[0].text.startswith("tcinspect: error: Invalid value for '--nproc'")
    assert unknown.content[0].text.startswith("tcinspect: error: breaks takes no argument 'fullgraph' — its "
                                              "arguments: file, script_args, check_fullgraph")
    assert not_bool.content[0].text == ('tcinspect: error: check_fullgraph="yes" is not true or false — give '
                                        "check_fullgraph true or false")
    assert nope.is_error and "there is no tool 'nope'" in nope.content[0].text
    assert not fine.is_error and fine.structured_content["summary"]["graph_breaks"] == 3
    assert "Traceback" not in stderr


@pytest.mark.torch
def test_a_model_file_compiles_in_a_child_process_with_progress(tmp_path, capsys):
    """graph_breaks.py prints while it runs: the child's output reaches the server's stderr, never the protocol."""
    model = str(SAMPLES / "graph_breaks.py")
    heard = []

    async def calls(session):
        async def progress(done, total, message):
            heard.append((done, total, message))

        return await session.call_tool("breaks", {"file": model, "timeout": 300}, progress_callback=progress)

    result, stderr = _serve(tmp_path, calls)
    assert not result.is_error, result.content
    assert "Input norm:" in stderr  # the model's print, forwarded from the child
    assert any(m.startswith(f"compiling {model}") for _, _, m in heard), heard
    assert [d for d, _, _ in heard] == sorted(d for d, _, _ in heard)
    # the CLI reads the report the server's capture left in the cache, and prints the same data
    code, out, err = cli(capsys, "breaks", model, "--timeout", "300", "--format", "json")
    assert code == 0 and "reusing the current report" in err
    assert result.structured_content == json.loads(out)
    assert result.structured_content["summary"]["graph_breaks"] == 3


def test_saved_and_cached_reports_are_resources(tmp_path, capsys):
    work = tmp_path / "project"
    (work / "reports").mkdir(parents=True)
    code, _, _ = cli(capsys, "trace", LOG, "-o", str(work / "reports" / "before.yaml"))
    assert code == 0
    shutil.copy(work / "reports" / "before.yaml", work / "after.yaml")
    (work / "notes.json").write_text('{"not": "a report"}')
    cache = Path(os.environ["TCINSPECT_CACHE_DIR"])  # a cache entry, named and laid out as cache.store writes them
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "m-0a0b0c0d-0123456789abcdef.json").write_text(json.dumps(
        {"schema_version": 1, "tcinspect_version": "0.1.0", "torch_version": "2.13.0", "device": "cpu",
         "target": {"kind": "model", "path": "m.py"}, "options": {"backend": "eager"}}))

    async def calls(session):
        listed = (await session.list_resources()).resources
        saved = await session.read_resource(next(r.uri for r in listed if r.name == "after.yaml"))
        try:
            await session.read_resource((work / "notes.json").resolve().as_uri())
            refused = ""
        except Exception as exc:  # noqa: BLE001 - the SDK raises the server's error
            refused = str(exc)
        return listed, saved, refused

    (listed, saved, refused), _ = _serve(tmp_path, calls, cwd=work)
    assert [r.name for r in listed] == ["cached: m.py (backend=eager)", "after.yaml", "reports/before.yaml"] or \
        [r.name for r in listed] == ["cached: m.py (backend=eager)", "reports/before.yaml", "after.yaml"]
    assert all(r.uri.startswith("file:///") for r in listed)
    assert "graph_breaks.log.gz" in listed[1].description and listed[0].mime_type == "application/json"
    assert saved.contents[0].text == (work / "after.yaml").read_text()
    assert "is not a report this server lists" in refused
    # found from its first lines alone: a file that merely ends .json is no report
    assert sorted(str(r.path.relative_to(work)) for r in reports.listed(work) if r.path.is_relative_to(work)) == [
        "after.yaml", "reports/before.yaml"]


def test_a_bug_in_tcinspect_is_a_tool_error_and_its_traceback_stays_off_the_protocol(tmp_path):
    # a server whose breaks view raises: the first call is an internal error, the next still answers
    code = ("import tcinspect.analysis.breaks as b\n"
            "def broken(*args, **kwargs):\n    print('noise on stdout'); raise ZeroDivisionError('boom')\n"
            "b.breaks_document = broken\n"
            "from tcinspect.cli import main\nraise SystemExit(main(['mcp']))\n")

    async def calls(session):
        return (await session.call_tool("breaks", {"file": LOG}),
                await session.call_tool("trace", {"file": LOG, "no_timings": True}))

    (broken, fine), stderr = _serve(tmp_path, calls, args=("-c", code))
    assert broken.is_error and broken.structured_content is None
    assert [c.text for c in broken.content] == [
        "tcinspect: error: internal error: ZeroDivisionError: boom — the traceback is on the server's stderr; this is "
        "a bug in tcinspect, please report it"]
    assert "Traceback" in stderr and "ZeroDivisionError: boom" in stderr and "noise on stdout" in stderr
    assert not fine.is_error and fine.structured_content["summary"]["graphs"] == 4


class _NoSdk(importlib.abc.MetaPathFinder):
    """An environment without the `mcp` extra: its packages cannot be imported."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("mcp", "mcp_types"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def test_without_the_sdk_the_command_says_what_to_install(capsys, monkeypatch):
    monkeypatch.setattr(sys, "meta_path", [_NoSdk(), *sys.meta_path])
    for name in [m for m in sys.modules if m.split(".")[0] in ("mcp", "mcp_types") or m.startswith("tcinspect.mcp_")]:
        monkeypatch.delitem(sys.modules, name)
    code, out, err = cli(capsys, "mcp")
    assert code == 2 and out == ""
    assert err.splitlines() == [
        "tcinspect: error: `tcinspect mcp` needs the MCP Python SDK (the `mcp` package), which is not installed — "
        "pip install 'tcinspect[mcp]'"]
