"""The README and docs/ stay true to the CLI. Fast: no torch import, nothing compiles.

Rules:

- every command of ``tcinspect --help`` has its page, docs/<command>.md, linked from the README and from
  docs/index.md, with at least one example command;
- every option of every command (each name: ``--max-graph-breaks``, ``-o``, ``--no-graphs``; not ``--help``)
  is named in the command's page; an option that several commands share may instead be named in a page
  the command's page links to (docs/model-file.md, docs/distributed.md, ...). An option of one command only
  must be in its own page;
- every example command parses with the CLI's own parser: in ```bash/```sh blocks every line that starts
  with ``tcinspect `` (or ``$ tcinspect ``), in ```console blocks every ``$ tcinspect `` line (the other
  lines there are output; a ``$ tcinspect`` line in any other block fails); the command line stops at ``|``, ``>``, ``&&``, ``;`` and ``#``. Extra
  positional arguments are allowed only after ``--`` (script arguments). A ``sample_models/`` or ``tests/``
  path an example names must exist. The ``Example:`` commands of each command's ``--help`` parse too;
- the README is at most 15,000 bytes;
- every relative link in README.md and docs/*.md points at an existing file, and an ``#anchor`` at an
  existing heading (GitHub's slugs).
"""

from __future__ import annotations

import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer
import typer.main

from tcinspect.cli import app

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
README_LIMIT = 15_000

CLI = typer.main.get_command(app)
COMMANDS = dict(CLI.commands)
# click's UsageError, wherever this typer takes click from (vendored as typer._click, or click itself)
UsageError = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")

#: a page named here documents this command; {command: page}
PAGES = {name: DOCS / f"{name}.md" for name in COMMANDS}
#: tokens that end the tcinspect part of a shell line
STOP = {"|", "||", ">", ">>", "2>", "2>&1", "&&", ";", "&"}
#: an example's path argument that must exist (samples and test models ship with the repository)
SHIPPED = ("sample_models/", "tests/")


def _doc_files() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


# ----------------------------------------------------------------------------- markdown


@dataclass(frozen=True)
class Block:
    lang: str
    start: int  # line number (1-based) of the first line inside the fence
    lines: tuple[str, ...]


def _blocks(text: str) -> list[Block]:
    blocks, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        fence = re.match(r"^(```+)\s*([\w+-]*)", lines[i])
        if fence:
            j = i + 1
            while j < len(lines) and not lines[j].startswith(fence.group(1)):
                j += 1
            blocks.append(Block(fence.group(2).lower(), i + 2, tuple(lines[i + 1:j])))
            i = j + 1
        else:
            i += 1
    return blocks


def _prose(text: str) -> str:
    """The text outside fenced code blocks (line count kept)."""
    out, fence = [], None
    for line in text.split("\n"):
        m = re.match(r"^(```+)", line)
        if fence is None and m:
            fence = m.group(1)
            out.append("")
        elif fence is not None:
            if line.startswith(fence):
                fence = None
            out.append("")
        else:
            out.append(line)
    return "\n".join(out)


def _links(text: str) -> list[tuple[int, str]]:
    """(line, target) of every Markdown link and image outside code."""
    found = []
    prose = re.sub(r"`[^`]*`", lambda m: "x" + "\n" * m.group(0).count("\n"), _prose(text))  # code spans
    for n, line in enumerate(prose.split("\n"), 1):
        for m in re.finditer(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", line):
            found.append((n, m.group(1)))
    return found


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for line in _prose(path.read_text()).split("\n"):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            slug = _slug(m.group(1))
            k = seen.get(slug, 0)
            seen[slug] = k + 1
            anchors.add(slug if k == 0 else f"{slug}-{k}")
    return anchors


def _linked_pages(page: Path) -> list[Path]:
    out = []
    for _, target in _links(page.read_text()):
        path = target.split("#", 1)[0]
        if path.endswith(".md") and "://" not in path:
            out.append((page.parent / path).resolve())
    return out


# ----------------------------------------------------------------------------- examples


@dataclass(frozen=True)
class Example:
    where: str  # file:line, or the command's --help
    line: str
    check_paths: bool = True


def _join_continued(lines: tuple[str, ...], start: int) -> list[tuple[int, str]]:
    out, buf, first = [], "", None
    for n, line in enumerate(lines, start):
        if first is None:
            first = n
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        out.append((first, buf + line))
        buf, first = "", None
    if buf:
        out.append((first, buf))
    return out


def _doc_examples() -> list[Example]:
    examples = []
    for path in _doc_files():
        for block in _blocks(path.read_text()):
            if block.lang not in ("bash", "sh", "shell", "console"):
                continue
            for n, line in _join_continued(block.lines, block.start):
                line = line.strip()
                if line.startswith("$ "):
                    line = line[2:].strip()
                elif block.lang == "console":
                    continue  # output
                if line.startswith("tcinspect "):
                    examples.append(Example(f"{_rel(path)}:{n}", line))
    return examples


def _epilog_examples() -> list[Example]:
    examples = []
    for name, command in COMMANDS.items():
        epilog = command.epilog or ""
        for m in re.finditer(r"tcinspect\s[^·;]*", epilog):
            examples.append(Example(f"`tcinspect {name} --help` (Example:)", " ".join(m.group(0).split()),
                                    check_paths=True))
    return examples


def _tokens(line: str) -> list[str]:
    tokens = shlex.split(line, comments=True)
    for i, token in enumerate(tokens):
        if token in STOP or token.startswith(">") or token.startswith("2>"):
            return tokens[:i]
    return tokens


def _parse(example: Example) -> str | None:
    """None when the example parses as the CLI would parse it; else what is wrong."""
    try:
        tokens = _tokens(example.line)
    except ValueError as exc:
        return f"not a shell command line ({exc})"
    args = tokens[1:]
    if not args:
        return "no command"
    if args[0] not in COMMANDS:
        top = {name for p in CLI.params for name in (*p.opts, *p.secondary_opts)} | {"--help"}
        if all(a in top for a in args):
            return None
        return f"{args[0]!r} is not a tcinspect command (commands: {', '.join(COMMANDS)})"
    name, rest = args[0], args[1:]
    command = COMMANDS[name]
    try:
        ctx = command.make_context(name, list(rest), resilient_parsing=False)
    except typer.Exit:  # --help inside an example: it parsed
        return None
    except UsageError as exc:
        return f"usage error: {exc.format_message()}"
    extra = ctx.params.get("script_args")
    if extra and "--" not in rest:
        return f"unexpected argument(s) {extra}: only a script takes arguments, after --"
    if example.check_paths:
        for token in rest:
            value = token.split("=", 1)[-1]
            if value.startswith(SHIPPED):
                file = value.split(":", 1)[0]
                if not (ROOT / file).exists():
                    return f"{file} does not exist"
    return None


DOC_EXAMPLES = _doc_examples()
EPILOG_EXAMPLES = _epilog_examples()


# ----------------------------------------------------------------------------- the tests


def test_the_docs_test_does_not_import_torch():
    import subprocess

    code = ("import sys, typer.main; from tcinspect.cli import app; typer.main.get_command(app); "
            "sys.exit(9 if 'torch' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0


def test_readme_is_short():
    size = len(README.read_bytes())
    assert size <= README_LIMIT, f"README.md is {size} bytes; at most {README_LIMIT}: move detail into docs/"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_a_page_linked_from_the_readme_and_the_index(name):
    page = PAGES[name]
    assert page.exists(), f"tcinspect {name} has no page: write {_rel(page)}"
    for index in (README, DOCS / "index.md"):
        assert page.resolve() in {(index.parent / t.split("#")[0]).resolve() for _, t in _links(index.read_text())}, \
            f"{_rel(index)} does not link {_rel(page)}"
    assert any(e.where.startswith(_rel(page) + ":") and _tokens(e.line)[1:2] == [name] for e in DOC_EXAMPLES), \
        f"{_rel(page)} has no example command `tcinspect {name} ...` in a bash or console block"


def _option_names(command) -> list[str]:
    names = []
    for param in command.params:
        if getattr(param, "param_type_name", "") == "option":
            names += [n for n in (*param.opts, *param.secondary_opts) if n != "--help"]
    return names


def _mentions(text: str, option: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text) is not None


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_is_documented(name):
    page = PAGES[name]
    text = page.read_text()
    shared_by = {}
    for other in COMMANDS.values():
        for option in _option_names(other):
            shared_by[option] = shared_by.get(option, 0) + 1
    linked = [p for p in _linked_pages(page) if p.exists() and p != page.resolve()]
    missing = []
    for option in _option_names(COMMANDS[name]):
        if _mentions(text, option):
            continue
        if shared_by[option] > 1 and any(_mentions(p.read_text(), option) for p in linked):
            continue
        missing.append(option if shared_by[option] > 1 else f"{option} (only {name} has it: name it in {page.name})")
    assert not missing, (f"{_rel(page)} does not document {', '.join(missing)} (a shared option may be "
                         f"documented in a page {page.name} links to: {', '.join(p.name for p in linked)})")


def test_there_are_examples_to_check():
    assert len(DOC_EXAMPLES) >= 30, DOC_EXAMPLES
    assert {_tokens(e.line)[1] for e in EPILOG_EXAMPLES} == set(COMMANDS), "a command's --help has no Example:"


@pytest.mark.parametrize("path", _doc_files(), ids=_rel)
def test_example_commands_sit_in_blocks_that_are_checked(path):
    hidden = [f"{_rel(path)}:{block.start + i}: {line.strip()}"
              for block in _blocks(path.read_text()) if block.lang not in ("bash", "sh", "shell", "console")
              for i, line in enumerate(block.lines) if line.strip().startswith("$ tcinspect ")]
    assert not hidden, "a `$ tcinspect` line in a block that is not ```bash/```sh/```console:\n" + "\n".join(hidden)


@pytest.mark.parametrize("example", DOC_EXAMPLES, ids=lambda e: e.where)
def test_doc_examples_parse(example):
    problem = _parse(example)
    assert problem is None, f"{example.where}: `{example.line}`: {problem}"


@pytest.mark.parametrize("example", EPILOG_EXAMPLES, ids=lambda e: e.line)
def test_help_examples_parse(example):
    problem = _parse(example)
    assert problem is None, f"{example.where}: `{example.line}`: {problem}"


@pytest.mark.parametrize("path", _doc_files(), ids=_rel)
def test_relative_links_resolve(path):
    broken = []
    for n, target in _links(path.read_text()):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            broken.append(f"{_rel(path)}:{n}: {target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{_rel(path)}:{n}: {target} (no heading #{anchor} in {dest.name})")
    assert not broken, "\n".join(broken)
