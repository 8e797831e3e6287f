"""FixTrial -> the `breaks --try-fixes` table: each config fix tried, before -> after, and its verdict (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from rich.console import Group, RenderableType
from rich.text import Text

from tcinspect.analysis.breaks import break_costs
from tcinspect.analysis.coverage import frames_by_id
from tcinspect.analysis.fixes import CODE_CHANGE, NOT_VERIFIED, FixTrial, candidates, fix_status
from tcinspect.render.grid import Table
from tcinspect.render.parts import plural
from tcinspect.report import Report

_STYLES = {"helps": "bold green", "mixed": "yellow", "no effect": "yellow", "worse": "bold red", "error": "bold red",
           "not tried": "dim"}


def _change(before: int, after: Optional[int], lower_is_better: bool = True) -> Text:
    if after is None:
        return Text(f"{before} -> ?", style="dim")
    if before < 0 or after < 0:  # a count the report does not have
        return Text(f"{before if before >= 0 else '?'} -> {after if after >= 0 else '?'}", style="dim")
    better = after < before if lower_is_better else after > before
    style = "" if after == before else ("green" if better else "red")
    return Text(f"{before} -> {after}", style=style)


def fixes_table(trials: Sequence[FixTrial]) -> RenderableType:
    """One row per trial: the setting, its verdict, the counts before -> after and outputs against eager; then, per
    trial, what is still at the breaks it was for (torch's one line) or why it failed."""
    if not trials:
        return Text("--try-fixes: no torch._dynamo.config setting to try; the suggested fixes are code changes.",
                    style="yellow")
    table = Table(header_style="bold", title="Config fixes tried (each a fresh capture, verified against eager)",
                  title_justify="left")
    table.add_column("#", justify="right", style="dim", no_wrap=True)
    table.add_column("torch._dynamo.config", style="cyan", overflow="fold")  # folds where the table is too wide
    table.add_column("verdict", no_wrap=True)
    for name in ("graph\nbreaks", "eager\nframes", "calls\ncaptured", "recompiles"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("outputs\nvs eager", no_wrap=True)
    notes = Text()
    for i, t in enumerate(trials, 1):
        a = t.after
        outputs = {True: Text("match", style="green"), False: Text("differ", style="bold red"),
                   None: Text("-", style="dim")}[t.outputs_match_eager]
        table.add_row(str(i), t.fix.setting, Text(t.verdict, style=_STYLES.get(t.verdict, "")),
                      _change(t.before.graph_breaks, a.graph_breaks if a else None),
                      _change(t.before.fallbacks_to_eager, a.fallbacks_to_eager if a else None),
                      _change(t.before.calls_captured, a.calls_captured if a else None, lower_is_better=False),
                      _change(t.before.recompiles, a.recompiles if a else None), outputs)
        why = t.error or (f"still at {_places(t)}: {t.reason}" if t.reason else
                          f"nothing left at {_places(t)}" if t.verdict in ("helps", "mixed") else f"for {_places(t)}")
        notes.append(f"{i}. ", style="dim")
        notes.append(f"{t.fix.setting}: ")
        notes.append(f"{why}\n", style="bold red" if t.error else "")
    return Group(table, notes)


def _places(t: FixTrial) -> str:
    return ", ".join(p.rsplit("/", 1)[-1] for p in t.fix.places)


def fixes_view(rep: Report, trials: Optional[Sequence[FixTrial]]) -> RenderableType:
    """What follows the breaks: the trials' table, or (no --try-fixes) a line saying that the suggested fixes are
    not verified and which settings --try-fixes would try; either way, which suggestions are code changes."""
    groups = [d for d, _ in break_costs(rep)]  # numbered as the breaks view numbers them
    frames = frames_by_id(rep)
    code = [str(i) for i, d in enumerate(groups, 1)
            if fix_status(d.first, trials, frames.get(d.first.compile_id)).startswith(CODE_CHANGE)]
    parts: list[RenderableType] = []
    todo = candidates(rep)
    if trials is not None:
        parts.append(fixes_table(trials))
    elif todo:
        settings = ", ".join(f.setting for f in todo)
        parts.append(Text(f"Suggested fixes: {NOT_VERIFIED} to try {plural(len(todo), 'config setting')} "
                          f"({settings}).", style="dim"))
    if code:
        parts.append(Text(f"Suggested fix of {'break' if len(code) == 1 else 'breaks'} {', '.join(code)}: "
                          f"{CODE_CHANGE}.", style="dim"))
    return Group(*parts)
