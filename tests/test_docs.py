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
  existing heading (GitHub's slugs);
- every code fence closes (a fence line with text after it closes nothing, and the rest of the page renders
  as code), and every block names its language, so a bare fence only closes;
- a default a page states for an option (the forms: "option defaults" below) is the one the command's
  ``--help`` gives, and a clause that names an option and says "default" in another form fails;
  ``--opt`` (on ``a``, ``b``, ...) lists exactly the commands that have the option.
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
    opened: int = 0  # line number of the opening fence
    closed: bool = True  # False: no closing fence before the end of the file (the rest renders as code)
    marker: str = "```"


#: a fence line, as CommonMark reads one: three or more backticks or tildes, indented or not (a fence inside a
#: list item is indented with it), then an info string (its language first); a backtick fence's info string
#: holds no backtick, so "``` `code` text" is a paragraph's line, not a fence
_FENCE = re.compile(r"^(?P<indent>[ ]*)(?P<marker>`{3,}|~{3,})(?P<info>.*)$")


def _blocks(text: str) -> list[Block]:
    """The fenced code blocks: a block ends at a line of the opening fence's character, at least as many, and
    nothing else but spaces (```` ``` ```` closes ```` ```console ````; a tilde fence, a shorter fence or a fence
    line with text after it does not); one left open runs to the end of the file."""
    blocks, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if fence is None or (fence["marker"][0] == "`" and "`" in fence["info"]):
            i += 1
            continue
        marker, indent = fence["marker"], len(fence["indent"])
        closer = re.compile(rf"^[ ]*{re.escape(marker[0])}{{{len(marker)},}}[ \t]*$")
        j = i + 1
        while j < len(lines) and not closer.match(lines[j]):
            j += 1
        body = tuple(line[min(indent, len(line) - len(line.lstrip(" "))):] for line in lines[i + 1:j])
        info = fence["info"].strip().split()
        blocks.append(Block(info[0].lower() if info else "", i + 2, body, i + 1, j < len(lines), marker))
        i = j + 1
    return blocks


def _prose(text: str) -> str:
    """The text outside fenced code blocks (line count kept)."""
    lines = text.split("\n")
    for block in _blocks(text):
        last = block.start + len(block.lines) - (0 if block.closed else 1)  # the closing fence, or the last line
        for n in range(block.opened, last + 1):
            lines[n - 1] = ""
    return "\n".join(lines)


def _fence_problems(name: str, text: str) -> list[str]:
    """Where a page's code fences go wrong: one left open (the rest of the page renders as code, and the line
    meant to close it is named), and one opened without a language (every page gives its blocks one, ```text
    for plain output, so a bare fence only closes: a bare fence that opens a block is a closer out of place)."""
    problems = []
    for block in _blocks(text):
        if not block.closed:
            near = [f"line {block.start + k} starts with {block.marker[0] * 3} but has text after it, so it does "
                    "not close the block" for k, line in enumerate(block.lines)
                    if line.lstrip(" ").startswith(block.marker[0] * 3)]
            problems.append(f"{name}:{block.opened}: the {block.marker}{block.lang} block opened here is never "
                            f"closed: the rest of the page renders as code" + (f" ({near[0]})" if near else ""))
        elif not block.lang:
            problems.append(f"{name}:{block.opened}: a code block opens with a bare {block.marker} (give it a "
                            "language, ```text for plain output): is it a closing fence out of place?")
    return problems


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


# ----------------------------------------------------------------------------- option defaults
#
# The docs state an option's default in these forms (a code span for the option, and for a value where it is
# one word or a name), each read in its clause (a sentence, or a part of one between top-level `;`, `:` or
# ` — `; a parenthesis stays whole):
#
#   `--sort step`, the default          `--graphs`, the default (a flag: on; `--no-graphs`, the default: off)
#   `--backend inductor` by default     default `--timeout 1800`
#   `--per-call` is off by default      `--x` defaults to `y`
#   `--bench-runs` runs (default 100)   `--backend` (eager by default: ...)
#   `--all` ... (default: the 15 largest of each graph)      `--all` ... (by default the first 50 of each)
#   `--backend NAME` (a registered backend; default `inductor`, `eager` for `breaks`, `guards` and `shapes`)
#   a table with a `default` column: each row's options
#
# A statement is about the commands its clause names (`check`), else the page's command (docs/<command>.md),
# else every command with the option; `VALUE for CMDS` / `for CMDS VALUE` after the default are exceptions.
# The value must be what the command's --help gives: its `[default: ...]` (a flag's `on`/`off`, a 0 or no
# value also `off`), or a `(default: ...)` its help text states. A clause that names an option and says
# "default" in none of these forms fails, so a default the docs state is always one this test reads.


@dataclass(frozen=True)
class Claim:
    where: str  # file:line
    option: str
    value: str  # normalized
    commands: tuple[str, ...]


#: a code span stands in the prose as \x00k\x01 (k: its index); quoted text as \x02
_SPAN = r"\x00(\d+)\x01"
_WORDS = r"[^,;:()\x00]+?"  # a value in words, up to a comma, semicolon, colon or parenthesis


def _option_params() -> dict[str, dict[str, tuple[object, bool]]]:
    """{option name: {command: (param, negated)}} for every option name of every command (short ones too)."""
    table: dict[str, dict[str, tuple[object, bool]]] = {}
    for name, command in COMMANDS.items():
        for param in command.params:
            if getattr(param, "param_type_name", "") != "option":
                continue
            for opt in param.opts:
                table.setdefault(opt, {})[name] = (param, False)
            for opt in param.secondary_opts:
                table.setdefault(opt, {})[name] = (param, True)
    table.pop("--help", None)
    return table


OPTIONS = _option_params()


def _norm(value: str) -> str:
    value = re.sub(r"\s+", " ", value.replace("`", "").replace('"', "")).strip().strip(".,;:").strip()
    return value.lower()


def _real_defaults(param, negated: bool) -> set[str]:
    """What a doc may call this option's default: its --help ``[default: ...]`` (flags as on/off, 0 and no value
    also as off) and any ``(default: ...)`` its help text states."""
    default = getattr(param, "default", None)
    default = getattr(default, "value", default)  # typer's DefaultPlaceholder
    accepted: set[str] = set()
    if isinstance(default, bool):
        accepted |= {"on", "true"} if default != negated else {"off", "false"}
    elif default is None:
        accepted |= {"off", "none"}
    elif not callable(default) and default != "":
        accepted.add(_norm(str(default)))
        if default == 0:
            accepted |= {"off", "none"}
    for m in re.finditer(r"\(default:?\s+([^)]*)\)", " ".join((param.help or "").split())):
        accepted.add(_norm(m.group(1)))
    return accepted


def _help_default(param, negated: bool) -> str:
    default = getattr(param.default, "value", param.default)
    stated = re.findall(r"\(default:?\s+([^)]*)\)", " ".join((param.help or "").split()))
    if stated:
        return f"(default: {stated[0]})"
    if isinstance(default, bool):
        return "off" if default == negated else "on"
    return f"[default: {default}]" if default not in (None, "") else "no default"


def _masked_units(text: str) -> list[tuple[str, list[tuple[str, int]]]]:
    """The prose as units (paragraphs, list items, headings; each table row alone), each as its text with
    code spans replaced by \x00k\x01 and quoted text by \x02, and the spans [(content, line)]."""
    units, current = [], []
    for n, line in enumerate(_prose(text).split("\n"), 1):
        # a heading, a table row, a list item (an ordered one interrupts a paragraph only from 1, so a line that
        # wraps to "100) ..." goes on) and a blank line end a unit
        item = re.match(r"^\s*(?:#|[-*+] |\||(\d+)[.)] )", line)
        if not line.strip() or (item and (not current or item.group(1) in (None, "1"))):
            if current:
                units.append(current)
            current = []
        if line.strip():
            current.append((n, line))
            if line.lstrip().startswith(("|", "#")):
                units.append(current)
                current = []
    if current:
        units.append(current)
    out = []
    for lines in units:
        joined, offsets = "", []
        for n, line in lines:
            offsets.append((len(joined), n))
            joined += line.strip() + " "
        spans: list[tuple[str, int]] = []

        def span(m, spans=spans, offsets=offsets):
            line = max(n for start, n in offsets if start <= m.start())
            spans.append((m.group(2).strip(), line))
            return f"\x00{len(spans) - 1}\x01"

        masked = re.sub(r"(`+)(.+?)\1", span, joined)
        masked = re.sub(r"\[([^\]]*)\]\([^)\s]*\)", r"\1", masked)  # a link: its text
        masked = re.sub(r'"[^"]{0,200}"|“[^”]{0,200}”', "\x02", masked).replace("**", "")
        out.append((masked, spans))
    return out


def _clauses(masked: str) -> list[str]:
    """A unit split at sentence ends and top-level ``;``, ``:`` and `` — `` (a parenthesis stays whole)."""
    out, depth, start, i = [], 0, 0, 0
    while i < len(masked):
        ch = masked[i]
        depth += (ch == "(") - (ch == ")" and depth > 0)
        sentence_end = ch in ".!?" and re.match(r"\s+[A-Z\x00*\[]", masked[i + 1:])
        if depth == 0 and (ch in ";:" or masked.startswith(" — ", i) or sentence_end):
            out.append(masked[start:i + 1])
            start = i + 1
        i += 1
    out.append(masked[start:])
    return out


def _option_span(content: str) -> tuple[str, str | None] | None:
    """(option, value or None) where a code span is an option (``--sort step``, ``-o``); a metavariable
    (``NAME``, ``N``, ``true|false|auto``) is no value."""
    m = re.match(r"^(--?[A-Za-z][\w-]*)(?:[ =](.+))?$", content)
    if m is None or m.group(1) not in OPTIONS:
        return None
    value = m.group(2)
    if value is not None and (value.isupper() or "|" in value or value.startswith("-")):
        value = None
    return m.group(1), value


def _value(text: str, spans) -> tuple[str, str] | None:
    """A value at the start of text (a code span, or words up to punctuation), and the rest."""
    m = re.match(rf"\s*(?:{_SPAN}|({_WORDS}))(?=\s*(?:[,;:)]|$))", text)
    if m is None:
        return None
    value = spans[int(m.group(1))][0] if m.group(1) is not None else m.group(2)
    return value, text[m.end():]


def _command_list(text: str, spans) -> list[str] | None:
    """Commands named as code spans: `a`, `b` and `c` (the whole text)."""
    names = re.findall(_SPAN, text)
    if not names or re.sub(_SPAN, "", text).replace(",", " ").replace(" and ", " ").strip():
        return None
    found = [spans[int(k)][0] for k in names]
    return found if all(c in COMMANDS for c in found) else None


def _exceptions(rest: str, spans) -> dict[str, str]:
    """`, VALUE for CMDS` or `, for CMDS VALUE` after a default: other defaults for those commands."""
    out: dict[str, str] = {}
    cmds = rf"{_SPAN}(?:\s*,\s*{_SPAN})*(?:,?\s+and\s+{_SPAN})?"
    for m in re.finditer(rf",\s*(?:for\s+(?P<c1>{cmds})\s+(?P<v1>{_SPAN}|\w+)|(?P<v2>{_SPAN}|\w+)\s+for\s+(?P<c2>{cmds}))",
                         rest):
        names = _command_list(m.group("c1") or m.group("c2"), spans)
        raw = m.group("v1") or m.group("v2")
        value = spans[int(raw[1:-1])][0] if raw.startswith("\x00") else raw
        for name in names or ():
            out[name] = value
    return out


#: a parenthesis that belongs to the option before it: up to 12 plain words between (no punctuation, no code)
_ATTACHED = re.compile(r"(?:\s+[^\s(),;:\x00]+){0,12}\s*\(")


def _parenthesis(clause: str, start: int) -> str | None:
    """The text of the parenthesis opening at clause[start] (nested ones kept)."""
    depth = 0
    for i in range(start, len(clause)):
        depth += (clause[i] == "(") - (clause[i] == ")")
        if depth == 0:
            return clause[start + 1:i]
    return clause[start + 1:]


def _clause_defaults(clause: str, spans) -> list[tuple[int, str | None, dict[str, str]]]:
    """[(span index of the option, the default stated, {command: another default})] in one clause."""
    found = []
    for m in re.finditer(_SPAN, clause):
        k = int(m.group(1))
        option = _option_span(spans[k][0])
        if option is None:
            continue
        after, before = clause[m.end():], clause[:m.start()]
        # `--sort step`, the default / `--backend inductor` by default / `--x y` is the default
        if re.match(r"\s*(?:,\s*the default\b|\(the default\)|\s(?:is\s+)?(?:the|by)\s+default\b)", after):
            found.append((k, option[1], {}))
            continue
        # default `--timeout 1800`
        if option[1] is not None and re.search(r"\bdefault:?\s*$", before):
            found.append((k, option[1], {}))
            continue
        # `--per-call` is off by default / `--x` defaults to `y`
        d = re.match(rf"\s+(?:is|are)\s+({_SPAN}|[\w.-]+)\s+by default\b", after) or \
            re.match(rf"\s+defaults\s+to\s+({_SPAN}|[\w.-]+)", after)
        if d:
            raw = d.group(1)
            found.append((k, spans[int(d.group(2))][0] if d.group(2) else raw, {}))
            continue
        # `--x ...` (…; default VALUE[, exceptions]) / (VALUE by default …) / (by default VALUE)
        p = _ATTACHED.match(after)
        if p is None:
            continue
        inside = _parenthesis(after, p.end() - 1) or ""
        for segment in re.split(r";\s*", inside):
            segment = segment.strip()
            s = re.match(r"(?:by\s+)?default(?:s\s+to)?:?\s+", segment)
            if s and (v := _value(segment[s.end():], spans)):
                found.append((k, v[0], _exceptions(v[1], spans)))
                break
            s = re.match(rf"({_SPAN}|[\w.-]+)\s+by default\b", segment)
            if s:
                found.append((k, spans[int(s.group(2))][0] if s.group(2) else s.group(1), {}))
                break
    return found


def _table_defaults(masked_rows: list[tuple[str, list]]) -> list[tuple[int, str, list]]:
    """(span index, value, spans) for tables with a `default` column: each row's options take that cell."""
    out, column = [], None
    for masked, spans in masked_rows:
        cells = [c.strip() for c in masked.strip().strip("|").split("|")]
        if column is None:
            column = next((i for i, c in enumerate(cells) if c.lower() == "default"), None)
            continue
        if re.fullmatch(r"[\s:|-]+", masked) or column >= len(cells):
            continue
        value = re.sub(_SPAN, lambda m, spans=spans: spans[int(m.group(1))][0], cells[column])
        for i, cell in enumerate(cells):
            if i != column:
                out += [(int(k), value, spans) for k in re.findall(_SPAN, cell) if _option_span(spans[int(k)][0])]
    return out


def _says_default(clause: str, spans) -> bool:
    """Whether the clause says "default" of an option it names: outside parentheses, or in a parenthesis that
    names an option or belongs to one (not "the default pool" in an aside, nor the possessive "the default's")."""
    for m in re.finditer(r"\bdefaults?\b(?!['’]s)", clause, re.IGNORECASE):
        depth, start = 0, None
        for i, ch in enumerate(clause[:m.start()]):
            if ch == "(":
                depth, start = depth + 1, (i if depth == 0 else start)
            elif ch == ")" and depth:
                depth -= 1
        if depth == 0:
            return True
        assert start is not None
        region = clause[start:start + len(_parenthesis(clause, start) or "") + 2]
        if any(_option_span(spans[int(k)][0]) for k in re.findall(_SPAN, region)):
            return True
        for o in re.finditer(_SPAN, clause[:start]):
            if _option_span(spans[int(o.group(1))][0]) and (a := _ATTACHED.match(clause, o.end())) \
                    and a.end() - 1 == start:
                return True
    return False


def _default_claims(name: str, text: str) -> tuple[list[Claim], list[str]]:
    """The defaults a page states, and its clauses that name an option and say "default" in no form read."""
    page = Path(name).stem if Path(name).stem in COMMANDS else None
    claims, unread = [], []

    def scope(option: str, named: list[str], exceptions: dict[str, str]) -> list[str]:
        having = OPTIONS[option]
        for pick in ([c for c in named if c not in exceptions], [page] if page else []):
            if any(c in having for c in pick):
                return [c for c in pick if c in having]
        return [c for c in having if c not in exceptions]

    def add(option, value, spans, k, commands):
        if value is None:  # a flag named alone: it is on by default
            value = "on"
        claims.append(Claim(f"{name}:{spans[k][1]}", option, _norm(value), tuple(commands)))

    units = _masked_units(text)
    rows: list[tuple[str, list]] = []
    for masked, spans in [*units, ("", [])]:
        if masked.lstrip().startswith("|"):
            rows.append((masked, spans))
            continue
        for row_k, value, row_spans in _table_defaults(rows):
            option = _option_span(row_spans[row_k][0])
            assert option is not None
            add(option[0], value, row_spans, row_k, scope(option[0], [], {}))
        rows = []
        for clause in _clauses(masked):
            ks = [int(k) for k in re.findall(_SPAN, clause)]
            named = [spans[k][0].removeprefix("tcinspect ").split()[0] for k in ks if spans[k][0]]
            named = [c for c in named if c in COMMANDS]
            stated = _clause_defaults(clause, spans)
            for k, value, exceptions in stated:
                option = _option_span(spans[k][0])
                assert option is not None
                add(option[0], value, spans, k, scope(option[0], named, exceptions))
                for command, other in exceptions.items():
                    add(option[0], other, spans, k, [command])
            options = [k for k in ks if _option_span(spans[k][0])]
            if options and not stated and _says_default(clause, spans):
                unread.append(f"{name}:{spans[options[0]][1]}: `{spans[options[0]][0]}`: "
                              + " ".join(re.sub(_SPAN, lambda m, spans=spans: f"`{spans[int(m.group(1))][0]}`",
                                                clause).replace("\x02", '"…"').split()))
    return claims, unread


def _default_problems(name: str, text: str) -> list[str]:
    """Where a page's stated defaults differ from the commands' --help, or cannot be read."""
    claims, unread = _default_claims(name, text)
    problems = [f"{u}\n    states a default in a form this test does not read: write `--opt VALUE`, the default; "
                "or `--opt` (default `VALUE`)" for u in unread]
    for claim in claims:
        having = OPTIONS[claim.option]
        for command in claim.commands:
            if command not in having:
                problems.append(f"{claim.where}: `tcinspect {command}` has no {claim.option}")
                continue
            param, negated = having[command]
            if claim.value not in _real_defaults(param, negated):
                problems.append(f"{claim.where}: {claim.option} defaults to `{claim.value}` here, but "
                                f"`tcinspect {command} --help` gives {_help_default(param, negated)}")
    return problems


def _command_list_problems(name: str, text: str) -> list[str]:
    """`--opt` (…, on `a`, `b` and `c`): the commands named are exactly those that have the option."""
    problems = []
    for masked, spans in _masked_units(text):
        for m in re.finditer(rf"{_SPAN}(?:\s+[\w-]+){{0,3}}\s*\((?:[^()]*?,\s*)?on\s+([^()]*)\)", masked):
            option = _option_span(spans[int(m.group(1))][0])
            listed = _command_list(m.group(2), spans)
            if option is None or listed is None:
                continue
            having = set(OPTIONS[option[0]])
            if set(listed) != having:
                missing, extra = sorted(having - set(listed)), sorted(set(listed) - having)
                problems.append(f"{name}:{spans[int(m.group(1))][1]}: {option[0]} is said to be on "
                                f"{', '.join(listed)}" + (f"; also on {', '.join(missing)}" if missing else "")
                                + (f"; not on {', '.join(extra)}" if extra else ""))
    return problems


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


@pytest.mark.parametrize("path", _doc_files(), ids=_rel)
def test_code_fences_are_balanced(path):
    problems = _fence_problems(_rel(path), path.read_text())
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", _doc_files(), ids=_rel)
def test_stated_defaults_are_the_help_defaults(path):
    problems = _default_problems(_rel(path), path.read_text()) + _command_list_problems(_rel(path), path.read_text())
    assert not problems, "\n".join(problems)


def test_the_docs_state_defaults_this_test_reads():
    """The reader finds the defaults the docs state (an extractor that reads nothing passes everything)."""
    claims = {(c.option, command): c.value for path in _doc_files()
              for c in _default_claims(_rel(path), path.read_text())[0] for command in c.commands}
    assert claims[("--backend", "trace")] == claims[("--backend", "memory")] == "inductor"
    assert claims[("--backend", "breaks")] == claims[("--backend", "guards")] == claims[("--backend", "shapes")] \
        == "eager"
    assert {("--timeout", "check"), ("--sort", "codegen"), ("--bench-runs", "codegen"), ("--graphs", "export"),
            ("--per-call", "guards"), ("--all", "trace"), ("--all", "memory")} <= set(claims)


# what the checks above catch, on pages as they were (HEAD before the fix: docs/compile-time.md's fence, the
# default backend of guards and shapes in docs/model-file.md)

_UNCLOSED = """# page

```console
$ tcinspect compile-time tests/models/cache_bypass.py
…
``` `tcinspect diff A B` (two reports, two logs) lists the look-ups whose key changed with the changed
components.

## Options shared with other commands

- text
"""

_FENCES_FINE = """1. a step:

   ```bash
   tcinspect trace sample_models/tiny.py
   ```

~~~markdown
```python
x = 1
```
~~~

````text
```
````
"""


def test_the_fence_check_finds_an_unclosed_fence():
    assert _fence_problems("page.md", _UNCLOSED) == [
        "page.md:3: the ```console block opened here is never closed: the rest of the page renders as code "
        "(line 6 starts with ``` but has text after it, so it does not close the block)"]
    assert _fence_problems("page.md", "text\n\n```\nprint(1)\n```\n") == [
        "page.md:3: a code block opens with a bare ``` (give it a language, ```text for plain output): is it a "
        "closing fence out of place?"]
    assert _fence_problems("page.md", _FENCES_FINE) == []
    assert [(b.lang, b.start, b.lines) for b in _blocks(_FENCES_FINE)] == [
        ("bash", 4, ("tcinspect trace sample_models/tiny.py",)), ("markdown", 8, ("```python", "x = 1", "```")),
        ("text", 14, ("```",))]
    assert "tcinspect diff" not in _prose(_UNCLOSED)  # the rest of the page is code, as GitHub renders it


def test_the_default_check_finds_wrong_and_unread_defaults():
    old = ("**Compile options** reach `torch.compile` unchanged: `--backend NAME` (a registered backend; default\n"
           "`inductor`, for `breaks` `eager`), `--mode`, `--fullgraph`, `--dynamic true|false|auto`.\n")
    assert _default_problems("docs/model-file.md", old) == [
        "docs/model-file.md:1: --backend defaults to `inductor` here, but `tcinspect guards --help` gives "
        "[default: eager]",
        "docs/model-file.md:1: --backend defaults to `inductor` here, but `tcinspect shapes --help` gives "
        "[default: eager]"]
    wrong = {
        "docs/codegen.md": "sorted by it (`--sort time`, the default; `--sort step` sorts by the step).",
        "docs/export.md": "It leaves out the graphs (`--no-graphs`, the default, hides them).",
        "docs/guards.md": "`--per-call` is on by default.",
        "docs/trace.md": "`--all` shows every row of the tables (by default the first 20 of each).",
        "docs/errors.md": "**`check` always isolates** (default `--timeout 600`): a CI gate ...",
        "docs/index.md": "| option | default |\n| --- | --- |\n| `--bench-runs` | 50 |\n",
    }
    for page, text in wrong.items():
        assert len(_default_problems(page, text)) == 1, (page, _default_problems(page, text))
    assert "in a form this test does not read" in _default_problems("docs/trace.md", "`--all`, default none.")[0]
    assert _default_problems("docs/memory.md", "under `--mode reduce-overhead`, the bytes of the pool "
                                               "(`torch.cuda.memory_snapshot()` segments outside the default pool)") == []
    assert _command_list_problems("docs/model-file.md", "`--pass module:fn` (repeatable, on `trace`, `verify`)") == [
        "docs/model-file.md:1: --pass is said to be on trace, verify; also on codegen"]
