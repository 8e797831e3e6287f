"""The layout is the pipeline: capturing -> parse -> report -> analysis -> render -> cli, one direction.

The import graph is built with ``ast`` from every import statement in src/ (inside functions too), so
a lazy import cannot hide a cycle or a stage reaching back.
"""

from __future__ import annotations

import ast
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


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports: ``from X import y`` counts X.y when y is a module of ours, else X.

    (Python runs X's ``__init__`` either way; ours import nothing at module level, so that is no edge.)"""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
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
    return out


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in files.items():
        graph[name] = {m for m in _imports(path) if m in files and m != name}
    return graph


def _external(prefix: str) -> dict[str, set[str]]:
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


#: What each pure stage may not import: torch, and the stages after it or the one that runs torch.
PURE = {
    "tcinspect.parse": ("torch", "triton", "tcinspect.capturing", "tcinspect.analysis", "tcinspect.render",
                        "tcinspect.cli", "tcinspect.request", "tcinspect.cache"),
    "tcinspect.analysis": ("torch", "triton", "tcinspect.capturing", "tcinspect.render", "tcinspect.cli",
                           "tcinspect.request"),
    "tcinspect.render": ("torch", "triton", "tcinspect.capturing", "tcinspect.cli", "tcinspect.request"),
    "tcinspect.report": ("torch", "triton", "tcinspect.capturing", "tcinspect.parse", "tcinspect.analysis",
                         "tcinspect.render", "tcinspect.cli"),
    "tcinspect.serialize": ("torch", "triton", "tcinspect.capturing", "tcinspect.parse", "tcinspect.render",
                            "tcinspect.cli"),
}


@pytest.mark.parametrize("stage", sorted(PURE))
def test_pure_stages_import_neither_torch_nor_a_later_stage(stage):
    bad = {mod: sorted(i for i in imps if i.startswith(PURE[stage]) and (i in PURE[stage] or
                                                                          i.startswith(tuple(p + "." for p in PURE[stage]))))
           for mod, imps in _external(stage).items()}
    assert {m: b for m, b in bad.items() if b} == {}


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
