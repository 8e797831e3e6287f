"""The layout is the pipeline, one way: capturing -> parse -> report <- analysis <- render <- cli.

The stages that build a report (capturing runs torch and hands events to parse) and the stages that read
one (analysis, render) meet only at the data model (report.py, and vocabulary.py: the words both sides
use); cli, request and the public API sit on top. LAYERS below says, for every package and top-level
module, what it may import, and the tests check every import statement in src/ against it.

The import graph is built with ``ast`` from every import statement in src/ (inside functions too), so
a lazy import cannot hide a cycle or a stage reaching back.
"""

from __future__ import annotations

import ast
import functools
import gzip
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "tcinspect"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name: str) -> bool:
    rel = Path(*name.split("."))
    return (SRC / rel).with_suffix(".py").is_file() or (SRC / rel / "__init__.py").is_file()


@functools.cache
def _tree(path: Path) -> ast.Module:
    """A source file's syntax tree, parsed once per run (the tests here read every module several times)."""
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.cache
def _imports(path: Path) -> frozenset[str]:
    """Every module ``path`` imports: ``from X import y`` counts X.y when y is a module of ours, else X.

    (Python runs X's ``__init__`` either way; ours import nothing at module level, so that is no edge.)"""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")
                parent = parent[: len(parent) - (node.level - 1)]
                base = ".".join(parent + ([base] if base else []))
            for a in node.names:
                out.add(f"{base}.{a.name}" if _is_module(f"{base}.{a.name}") else base)
    return frozenset(out)


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in files.items():
        graph[name] = {m for m in _imports(path) if m in files and m != name}
    return graph


def _external(prefix: str) -> dict[str, frozenset[str]]:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: _imports(path) for name, path in files.items() if name.startswith(prefix)}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), or a module importing itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles_inside_src():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    # the check above must be able to fail: a two-module and a three-module cycle
    graph = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}}
    assert sorted(_cycles(graph)) == [["a", "b"], ["c", "d", "e"]]


#: What each part of tcinspect may import besides itself: a package (its modules) or a top-level module.
#: Lowest first. The data model and its words are at the bottom; the stages that build a report
#: (parse, then capturing, which hands parse its events) and those that read one (analysis, render) are
#: two branches above it that never import each other; request, the public API and cli are on top.
FOUNDATION = ("tcinspect._version", "tcinspect.errors", "tcinspect.collector", "tcinspect.jsonfast")
LAYERS: dict[str, tuple[str, ...]] = {
    "tcinspect._version": (),
    "tcinspect.errors": (),
    "tcinspect.collector": (),  # the cycle collector paused while a large structure is built or read
    "tcinspect.jsonfast": (),  # JSON read as json.loads reads it, by msgspec: logs, events, saved reports
    "tcinspect.display": (),  # how a Report shows itself: installed from above (tcinspect/__init__.py)
    "tcinspect.report": ("tcinspect.errors", "tcinspect.display"),  # a Request checks itself when built (UsageError)
    "tcinspect.interrupts": FOUNDATION,
    "tcinspect.vocabulary": ("tcinspect.report",),
    "tcinspect.plaindata": (),  # report objects as plain data: serialize and analysis both use it
    # what follows from recorded data alone (collectives per graph, divergences between ranks): both sides use it
    "tcinspect.derived": ("tcinspect.report", "tcinspect.vocabulary"),
    "tcinspect.outfile": (*FOUNDATION, "tcinspect.interrupts"),
    "tcinspect.serialize": (*FOUNDATION, "tcinspect.report", "tcinspect.outfile", "tcinspect.plaindata",
                            "tcinspect.derived"),  # an older report's rank divergence, found on reading it
    "tcinspect.cache": (*FOUNDATION, "tcinspect.report", "tcinspect.outfile", "tcinspect.serialize"),
    # the stages that build a report
    "tcinspect.parse": (*FOUNDATION, "tcinspect.report", "tcinspect.vocabulary", "tcinspect.derived", "tcinspect.outfile"),
    "tcinspect.capturing": (*FOUNDATION, "tcinspect.report", "tcinspect.vocabulary", "tcinspect.interrupts",
                            "tcinspect.outfile", "tcinspect.serialize", "tcinspect.cache", "tcinspect.parse", "tcinspect.plaindata"),
    # the stages that read one
    "tcinspect.analysis": (*FOUNDATION, "tcinspect.report", "tcinspect.vocabulary", "tcinspect.derived",
                           "tcinspect.plaindata"),
    "tcinspect.render": (*FOUNDATION, "tcinspect.report", "tcinspect.vocabulary", "tcinspect.derived",
                         "tcinspect.serialize", "tcinspect.analysis"),
    # on top: a report obtained (saved, cached, read from logs or captured), the library's API, the commands
    "tcinspect.request": (*FOUNDATION, "tcinspect.report", "tcinspect.vocabulary", "tcinspect.interrupts",
                          "tcinspect.outfile", "tcinspect.serialize", "tcinspect.cache", "tcinspect.parse",
                          "tcinspect.capturing", "tcinspect.analysis", "tcinspect.plaindata", "tcinspect.derived"),
    "tcinspect.assertions": (*FOUNDATION, "tcinspect.report", "tcinspect.capturing", "tcinspect.analysis"),
    "tcinspect.pytest_plugin": ("tcinspect.assertions",),
    # a report in a notebook: the page's sections, the terminal's tables, the files -o writes
    "tcinspect.notebook": (*FOUNDATION, "tcinspect.report", "tcinspect.serialize", "tcinspect.outfile",
                           "tcinspect.render"),
    "tcinspect": (*FOUNDATION, "tcinspect.report", "tcinspect.serialize", "tcinspect.capturing",
                  "tcinspect.request", "tcinspect.assertions", "tcinspect.display", "tcinspect.notebook"),
    "tcinspect.cli": (*FOUNDATION, "tcinspect.report", "tcinspect.vocabulary", "tcinspect.interrupts",
                      "tcinspect.outfile", "tcinspect.serialize", "tcinspect.cache", "tcinspect.parse",
                      "tcinspect.capturing", "tcinspect.analysis", "tcinspect.render", "tcinspect.request", "tcinspect.plaindata",
                      "tcinspect.mcp_server"),  # `tcinspect mcp` starts the server
    # the MCP server: the commands `tcinspect mcp` hands it, run for an agent, and the reports as resources
    "tcinspect.mcp_server": (*FOUNDATION, "tcinspect.cache", "tcinspect.interrupts"),
    "tcinspect.__main__": ("tcinspect.cli", "tcinspect.capturing"),  # the capture's child started before the CLI
}

#: Imports against LAYERS that are still there, each with what removes it (the test below fails once one goes,
#: so that the list only shrinks).
AGAINST_THE_LAYERS = {
}

#: Parts that never import torch (or Triton): everything but capturing and what sits on top of it.
NO_TORCH = ("tcinspect._version", "tcinspect.errors", "tcinspect.collector", "tcinspect.report", "tcinspect.plaindata", "tcinspect.interrupts",
            "tcinspect.vocabulary", "tcinspect.derived", "tcinspect.outfile", "tcinspect.serialize", "tcinspect.cache", "tcinspect.parse",
            "tcinspect.analysis", "tcinspect.render")


def _part(module: str) -> str:
    """The key of LAYERS a module belongs to: its package below tcinspect, else the module itself."""
    parts = module.split(".")
    return ".".join(parts[:2])


def _against(graph: dict[str, set[str]], layers: dict[str, tuple[str, ...]]) -> list[tuple[str, str]]:
    """Every import (module, imported module) whose part may not import the imported module's part."""
    return sorted((mod, imp) for mod, imps in graph.items() for imp in imps
                  if _part(imp) != _part(mod) and _part(imp) not in layers.get(_part(mod), ()))


def test_every_package_and_module_has_a_layer():
    assert sorted({_part(m) for m in _graph()} - LAYERS.keys()) == []
    assert all(dep in LAYERS for deps in LAYERS.values() for dep in deps)


def test_the_layers_have_no_cycle():
    assert _cycles({part: set(deps) for part, deps in LAYERS.items()}) == []


def test_every_import_follows_the_layers():
    assert [edge for edge in _against(_graph(), LAYERS) if edge not in AGAINST_THE_LAYERS] == []


def test_each_import_allowed_against_the_layers_is_still_there():
    graph = _graph()
    assert [edge for edge in AGAINST_THE_LAYERS if edge[1] not in graph.get(edge[0], set())] == []


def test_the_layer_check_finds_an_import_against_the_layers():
    # the check above must be able to fail: a capture reading an analysis view, a renderer reading a parser's
    # constant, a parser importing a renderer; a stage importing its own modules or a lower part is fine
    graph = {"tcinspect.capturing.engine": {"tcinspect.analysis.views", "tcinspect.parse.events",
                                            "tcinspect.capturing.modelfile"},
             "tcinspect.render.ranks": {"tcinspect.parse.ranks", "tcinspect.analysis.divergence", "tcinspect.report"},
             "tcinspect.parse.events": {"tcinspect.render.table"}}
    assert _against(graph, LAYERS) == [("tcinspect.capturing.engine", "tcinspect.analysis.views"),
                                       ("tcinspect.parse.events", "tcinspect.render.table"),
                                       ("tcinspect.render.ranks", "tcinspect.parse.ranks")]


@pytest.mark.parametrize("part", NO_TORCH)
def test_torch_free_parts_never_import_torch(part):
    found = {mod: sorted(i for i in imps if i.split(".")[0] in ("torch", "triton"))
             for mod, imps in _external(part).items() if _part(mod) == part}
    assert {m: f for m, f in found.items() if f} == {}


#: The one package that touches torch's private APIs, one module per topic (a name of torch's with a leading
#: underscore: ``torch._dynamo``, ``torch._inductor.config``, ``torch.cuda._sleep``); each says which torch it handles.
COMPAT = "tcinspect.capturing._compat"


def _private_torch(tree: ast.AST) -> list[str]:
    """The private torch names a module imports or reaches, each up to its first private part: ``import
    torch._dynamo``, ``from torch._inductor import config``, ``from torch import _logging``, ``torch._dynamo.reset()``,
    ``torch.cuda._sleep(n)`` (dunders such as ``torch.__version__`` are public)."""
    def private_prefix(dotted: str) -> str:
        parts = dotted.split(".")
        if parts[0] != "torch":
            return ""
        for i, part in enumerate(parts[1:], 1):
            if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
                return ".".join(parts[:i + 1])
        return ""

    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Attribute):
            chain, value = [node.attr], node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name):
                names = [".".join([value.id, *reversed(chain)])]
        found.update(filter(None, map(private_prefix, names)))
    return sorted(found)


def test_private_torch_is_touched_only_in_compat():
    outside = {name: _private_torch(_tree(path)) for path in PACKAGE.rglob("*.py")
               if (name := _module_name(path)) != COMPAT and not name.startswith(COMPAT + ".")}
    assert {name: found for name, found in outside.items() if found} == {}
    # the check looks where they are: _compat's topics reach them
    assert "torch._dynamo" in _private_torch(_tree(PACKAGE / "capturing" / "_compat" / "dynamo.py"))


def test_the_private_torch_check_finds_each_way_in():
    # the check above must be able to fail: an import, a from-import of a private module or name, an attribute
    tree = ast.parse("import torch._dynamo\nfrom torch._inductor import config\nfrom torch import _logging\n"
                     "from torch.cuda import _sleep\nimport torch\ntorch._functorch.config.patch()\n"
                     "torch.compile(f)\nv = torch.__version__\n")
    assert _private_torch(tree) == ["torch._dynamo", "torch._functorch", "torch._inductor", "torch._logging",
                                    "torch.cuda._sleep"]


def test_compat_is_its_topics_and_re_exports_nothing():
    """A caller names the topic (``_compat.dynamo.reset_dynamo()``): the package's __init__ binds its topic modules
    and nothing else."""
    init = PACKAGE / "capturing" / "_compat" / "__init__.py"
    topics = sorted(p.stem for p in init.parent.glob("*.py") if p.name != "__init__.py")
    body = _tree(init).body
    bound = sorted(a.asname or a.name for node in body if isinstance(node, (ast.Import, ast.ImportFrom))
                   for a in node.names)
    defined = [node for node in body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    assert bound == topics and defined == []


def test_parse_runs_without_torch(tmp_path):
    """Importing every parse module and building a report from recorded events leaves torch unimported."""
    trace = Path(__file__).parent / "data" / "cpu-traces" / "2.13.0" / "graph_breaks.jsonl.gz"
    raw = tmp_path / "events.jsonl"
    raw.write_bytes(gzip.decompress(trace.read_bytes()))
    modules = sorted(_module_name(p) for p in (PACKAGE / "parse").glob("*.py"))
    code = (f"import importlib, sys\nfor m in {modules!r}: importlib.import_module(m)\n"
            "from tcinspect.parse.events import read_jsonl\n"
            "from tcinspect.parse.fromevents import report_from_events\n"
            "from tcinspect.report import Options, Target\n"
            f"rep = report_from_events(read_jsonl({str(raw)!r}), target=Target(kind='model'), options=Options(),\n"
            "                         device='cpu', torch_version='?')\n"
            "assert rep.summary.graph_breaks > 0, rep.summary\n"
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith(('torch.', 'triton'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _exception_classes(tree: ast.AST, known: set[str]) -> list[str]:
    """Classes defined in ``tree`` whose base is an exception: a built-in one or one of ``known``."""
    bases = known | {"Exception", "BaseException", "ValueError", "RuntimeError", "KeyError", "TypeError"}
    return [node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
            and any((isinstance(b, ast.Name) and b.id in bases) or (isinstance(b, ast.Attribute) and b.attr in bases)
                    for b in node.bases)]


def test_every_exception_is_defined_in_errors_and_drawn_in_its_tree():
    errors = PACKAGE / "errors.py"
    tree = _tree(errors)
    defined = set(_exception_classes(tree, set()))
    while True:  # subclasses of subclasses
        more = set(_exception_classes(tree, defined))
        if more <= defined:
            break
        defined |= more
    assert {"TcinspectError", "UsageError", "Interrupted", "GraphvizTimeout"} <= defined
    drawn = ast.get_docstring(tree) or ""
    assert sorted(name for name in defined if f" {name} " not in drawn.replace("\n", " \n")) == []
    # elsewhere only private ones, which never leave their module
    stray = {str(p.relative_to(SRC)): [c for c in _exception_classes(_tree(p), defined)
                                       if not c.startswith("_")]
             for p in PACKAGE.rglob("*.py") if p != errors}
    assert {path: names for path, names in stray.items() if names} == {}
