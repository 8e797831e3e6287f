"""The module -> test table of docs/testing.md: which test modules cover each module of src/tcinspect.

A test module covers a source module it imports (``import tcinspect.x``, ``from tcinspect.x import ...``,
``from tcinspect import x``, at its top or inside a test) and, for the commands, the ``cli/<command>.py`` of
every command it runs through the CLI (``cli(capsys, "trace", ...)``, ``run_cli("trace", ...)``, a
``CliRunner`` invocation). No torch, no imports of the modules: read from the source.

    python tests/module_table.py           # print the table
    python tests/module_table.py --write   # rewrite it in docs/testing.md (tests/test_suite.py checks it)
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "tcinspect"
TESTS = ROOT / "tests"
DOC = ROOT / "docs" / "testing.md"
BEGIN, END = "<!-- module-table: python tests/module_table.py --write -->", "<!-- /module-table -->"


def source_modules() -> list[str]:
    """Every module of the package, dotted (``tcinspect.parse.events``; a package's ``__init__`` is the package)."""
    names = []
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return sorted(set(names))


def _commands(tree: ast.AST) -> set[str]:
    """The commands a test module runs through the CLI: the first string argument after ``capsys`` of ``cli``,
    the first of ``run_cli``, the first of a list handed to ``invoke``."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        args: list[ast.expr] = []
        if name == "cli":
            args = node.args[1:2]
        elif name == "run_cli" or name == "main":
            args = node.args[:1]
            if args and isinstance(args[0], ast.List):
                args = args[0].elts[:1]
        elif name == "invoke" and len(node.args) > 1 and isinstance(node.args[1], ast.List):
            args = node.args[1].elts[:1]
        if args and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
            found.add(args[0].value)
    return found


def covered_by(test: Path, modules: set[str]) -> set[str]:
    """The source modules one test module covers."""
    tree = ast.parse(test.read_bytes(), filename=str(test))
    hit: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            hit |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # ``from tcinspect.parse import events`` covers the module events, not the package parse
            names = {f"{node.module}.{a.name}" for a in node.names}
            hit |= names & modules
            if names - modules:
                hit.add(node.module)
    hit |= {f"tcinspect.cli.{c.replace('-', '_')}" for c in _commands(tree)}
    return hit & modules


def table() -> str:
    modules = source_modules()
    tests = sorted(TESTS.glob("test_*.py"))
    by_module: dict[str, list[str]] = {m: [] for m in modules}
    for test in tests:
        for module in covered_by(test, set(modules)):
            by_module[module].append(test.stem)
    rows = ["| module (src/tcinspect/) | test modules (tests/) |", "| --- | --- |"]
    for module in modules:
        path = module.removeprefix("tcinspect").lstrip(".").replace(".", "/") or "__init__"
        names = ", ".join(f"`{t}`" for t in sorted(by_module[module])) or "– (none imports it)"
        rows.append(f"| `{path}` | {names} |")
    return "\n".join(rows) + "\n"


def documented() -> str:
    """The table as docs/testing.md holds it now."""
    text = DOC.read_text()
    return text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip("\n") + "\n"


def write() -> None:
    text = DOC.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    DOC.write_text(text[:start] + "\n" + table() + text[end:])


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write()
    else:
        sys.stdout.write(table())
