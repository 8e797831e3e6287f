"""Report -> the `guards` view: why each recompile happened and what to do, then guards per graph by kind."""

from __future__ import annotations

from typing import Optional

from rich.console import Group, RenderableType
from rich.text import Text

from tcinspect.analysis import findings
from tcinspect.analysis.frames import frames
from tcinspect.analysis.guards import guard_checks, guard_kinds
from tcinspect.render import guard_cost
from tcinspect.render.findings import your_code
from tcinspect.render.grid import Table
from tcinspect.render.parts import _limited
from tcinspect.render.table import ROW_LIMIT, USER_GUARD_KINDS, _guards_without_graph, input_name, recompiles_table
from tcinspect.report import Report


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def guards(rep: Report, all_kinds: bool = False, limit: Optional[int] = ROW_LIMIT) -> RenderableType:
    """Each recompile and its fix first, then the guards per graph (the first ``limit`` rows of each table: a 16-layer
    Llama has 1,500), then what the guards cost."""
    fr = frames(rep)
    entries = ", ".join(f"{f.function}: {f.cache_entries}" for f in fr) or "-"
    head = Text()
    script = rep.target.kind == "script"
    calls = _plural(rep.calls, "call") + (" into compiled code" if script else "")
    head.append(f"{calls} · {_plural(len(rep.compiles), 'compile')} · {_plural(rep.summary.recompiles, 'recompile')}",
                style="bold")
    head.append(f" · cache entries per frame: {entries} · dynamic={rep.options.dynamic or 'auto'}")
    if any(f.limit_hit for f in fr):
        head.append(" · recompile limit hit: the frame ran eagerly after it", style="bold red")
    cost = guard_cost.header(rep)
    if cost:
        head.append(f"\n{cost}")
    parts: list[RenderableType] = [head]
    # the answer first: why it recompiled and what to do, then what each graph assumed
    if rep.stages.dynamo.recompiles:
        parts.append(recompiles_table(rep))
    else:
        parts.append(Text("No recompiles.", style="green"))
    for e in rep.input_errors:
        parts.append(Text(f"{input_name(e.input_set, script)} raised: {e.error}", style="red"))
    overhead = next((f for f in findings.findings(rep) if f.kind == "guard_overhead"), None)
    if overhead is not None:
        parts.append(Text.assemble(("Guard overhead: ", "bold"), f"{overhead.what} — {overhead.cost}\n  ",
                                   ("lever: ", "bold green"), overhead.fix, (" (Levers, below)", "dim")))
    for g in rep.stages.dynamo.graphs:
        checks = [(kind, text, x) for x in g.guards for kind, text in guard_checks(x)]
        kinds = ", ".join(f"{k} {v}" for k, v in guard_kinds(g.guards))
        t = Table(title=f"{g.compile_id} · {g.function} · {len(g.guards)} guards ({kinds})"
                        f"{guard_cost.graph_clause(rep, g.compile_id)}", title_justify="left",
                  header_style="bold")
        t.add_column("kind")
        t.add_column("check", style="cyan")
        t.add_column("guard", style="dim")
        # one line a row (the file and line, then as much of the code as fits); --all wraps it whole
        t.add_column("your code", no_wrap=not all_kinds, overflow="ellipsis", max_width=None if all_kinds else 32)
        hidden = 0
        shown = []
        for kind, text, x in checks:
            if not all_kinds and kind not in (*USER_GUARD_KINDS, "dtype", "device", "attribute"):
                hidden += 1
                continue
            if not all_kinds and x.guard_type == "DIMENSION_DYNAMIC_MARKING_GUARD":
                hidden += 1
                continue
            shown.append((kind, text, x))
        for kind, text, x in _limited(shown, None if all_kinds else limit, t):
            t.add_row(kind, text if len(text) < 110 else text[:109] + "…", x.guard_type, your_code(x.user_code, all_kinds))
        parts.append(t)
        if hidden:
            parts.append(Text(f"  + {hidden} type / identity / bookkeeping checks (--all shows them)", style="dim"))
    parts.extend(_guards_without_graph(rep))
    parts.extend(guard_cost.parts(rep, all_kinds, limit))
    return Group(*parts)
