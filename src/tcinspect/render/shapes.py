"""Report -> the `shapes` view: symbols, specializations, shape guards, each input dim and a suggested spec."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any, Optional

from rich.console import Group, RenderableType
from rich.text import Text

from tcinspect.analysis import shapes as views
from tcinspect.render.grid import Table
from tcinspect.report import Report, ShapeGuard, SourceLocation


def _loc(loc: Optional[SourceLocation]) -> str:
    return loc.short() if loc is not None else "-"


def _code(loc: Optional[SourceLocation]) -> str:
    return loc.code if loc is not None else ""


STAGE_NAMES = {"dynamo": "Dynamo", "aot_autograd": "AOTAutograd", "inductor": "Inductor"}
FINAL_NOTE = ("in final guards \"no\": torch evaluated the guard while compiling (or suppressed it, or simplified it "
              "into another), but the guards Dynamo installed do not state it, so no later call checks it: "
              "not a specialization")


def guard_count(guards: Sequence[ShapeGuard]) -> str:
    """ "7 shape guards (0 in the final guards)" where the final guards are known."""
    known = [g for g in guards if g.in_final_guards]
    held = sum(1 for g in known if g.in_final_guards == "yes")
    return f"{len(guards)} shape guards" + (f" ({held} in the final guards)" if known else "")


def guard_line(g: ShapeGuard) -> str:
    """The user line that added it, or torch's reason for none: no frame of the user's code was on its stack."""
    if g.user_frame is not None:
        return _loc(g.user_frame)
    return f"(none: added by {STAGE_NAMES[g.stage]} code)" if g.stage in STAGE_NAMES else "(none logged)"


def shapes(rep: Report, limit: Optional[int] = None) -> RenderableType:
    """Each input dim's fate, then symbols, specializations, shape guards, data-dependent errors, the spec."""
    sh = rep.shapes
    parts: list[RenderableType] = []
    if sh is None:
        return Text("Shapes: torch logged no dynamic-shape event (no symbol was made: every size was static).",
                    style="dim")
    head = Text(f"Shapes · {len(sh.symbols)} symbols · {len(sh.specializations)} specializations · "
                f"{guard_count(sh.guards)} · {len(sh.data_dependent)} data-dependent errors", style="bold")
    parts.append(head)
    dims = views.dims(rep)
    if dims:
        t = Table(title="Input dims over the calls", title_justify="left", header_style="bold")
        for col in ("input", "dim", "sizes seen", "status", "symbols", "made constant by"):
            t.add_column(col)
        for d in dims:
            if d.status == views.STATIC and not d.symbols:
                continue
            first = d.specializations[0] if d.specializations else None
            t.add_row(d.label if d.label == d.name else f"{d.label} ({d.name})", str(d.dim), ", ".join(map(str, d.sizes)), d.status, ", ".join(d.symbols),
                      f"{_loc(first.user_frame)} ({first.reason})" if first else "")
        if t.row_count:
            parts.append(t)
    if sh.specializations:
        t = Table(title="Specializations (a symbol became a constant)", title_justify="left", header_style="bold")
        t.add_column("compile")
        t.add_column("source", no_wrap=True)
        t.add_column("value")
        t.add_column("torch's reason", no_wrap=True)
        t.add_column("your line")
        t.add_column("torch line", style="dim")
        for s in sh.specializations:
            mine = _loc(s.user_frame) + (f" `{_code(s.user_frame)}`" if _code(s.user_frame) else "")
            t.add_row(s.compile_id, ", ".join(s.sources), s.value, s.reason, mine, _loc(s.library_frame))
        parts.append(t)
    if sh.symbols:
        t = Table(title="Symbols", title_justify="left", header_style="bold")
        for col in ("compile", "symbol", "source", "hint", "range", "your line"):
            t.add_column(col)
        for y in sh.symbols:
            t.add_row(y.compile_id, y.symbol, y.source or "(unbacked)", y.hint, y.value_range, _loc(y.user_frame))
        parts.append(t)
    if sh.guards:
        t = Table(title="Shape guards added while compiling", title_justify="left", header_style="bold")
        for col in ("compile", "guard", "symbols", "added by", "in final guards", "your line", "code"):
            t.add_column(col)
        for g in sh.guards:
            t.add_row(g.compile_id, g.expression, ", ".join(g.sources), STAGE_NAMES.get(g.stage, "?"),
                      g.in_final_guards or "?", guard_line(g), _code(g.user_frame))
        if any(g.in_final_guards == "no" for g in sh.guards):
            t.caption = FINAL_NOTE
            t.caption_justify = "left"
        parts.append(t)
    if sh.data_dependent:
        t = Table(title="Data-dependent errors", title_justify="left", header_style="bold")
        for col in ("compile", "expression", "your line"):
            t.add_column(col)
        for e in sh.data_dependent:
            t.add_row(e.compile_id, e.expression, _loc(e.user_frame))
        parts.append(t)
    for v in views.violations(rep):
        vs = v.specialization
        parts.append(Text(f"constraint violation: {v.source} was marked dynamic, but "
                          + (f"{_loc(vs.user_frame)} `{_code(vs.user_frame)}` forced {v.source} == {v.value} "
                             f"({vs.reason})" if vs is not None else "torch named no line that forced it"),
                          style="bold red"))
    for line in views.advice(rep):
        parts.append(Text(f"why: {line}", style="yellow"))
    spec = views.suggested_spec(rep)
    if spec is not None:
        parts.append(Text("Suggested spec (from the sizes of the calls observed):", style="bold"))
        if spec.mark_dynamic:
            parts.append(Text("\n".join(f"  {m}" for m in spec.mark_dynamic)))
            parts.append(Text(f"  torch.export dynamic_shapes={spec.dynamic_shapes}"))
        else:
            parts.append(Text("  nothing to mark dynamic: every dim that varies is made a constant by the code"
                              if spec.blocked else "  every dim had one size: nothing to mark dynamic"))
        if spec.blocked:
            parts.append(Text(f"  cannot compile once: {spec.blocked}", style="yellow"))
    return Group(*parts)


def document(rep: Report, check: Any = None) -> dict[str, Any]:
    """The `shapes` command's YAML/JSON; with ``--verify-spec``, its ``spec_check`` (``check``: a SpecCheck, or None
    when asked for and not run)."""
    from tcinspect import serialize

    spec = views.suggested_spec(rep)
    sh = rep.shapes
    doc: dict[str, Any] = {
        "target": rep.target.path or rep.target.model_name,
        "dynamic": rep.options.dynamic or "auto",
        "shapes": serialize.plain(sh) if sh is not None else None,
        "dims": [{"input": d.label, "argument": d.name, "dim": d.dim, "source": d.source, "sizes": list(d.sizes), "status": d.status,
                  "symbols": list(d.symbols)} for d in views.dims(rep)],
        "violations": [{"source": v.source, "value": v.value,
                        "line": _loc(v.specialization.user_frame) if v.specialization else ""}
                       for v in views.violations(rep)],
        "advice": views.advice(rep),
        "suggested_spec": None if spec is None else {
            "mark_dynamic": list(spec.mark_dynamic), "dynamic_shapes": spec.dynamic_shapes, "blocked": spec.blocked},
    }
    if check is not None:
        doc["spec_check"] = {"compiles": check.compiles, "calls": check.calls, "error": check.error}
    return doc


def section_html(rep: Report) -> str:
    """The HTML report's Shapes section ("" without a shapes section)."""
    sh = rep.shapes
    if sh is None:
        return ""
    e = html.escape

    def table(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
        if not rows:
            return ""
        return ("<table><tr>" + "".join(f"<th>{e(h)}" for h in head) + "</tr>"
                + "".join("<tr>" + "".join(f"<td>{e(c)}" for c in r) + "</tr>" for r in rows) + "</table>")

    parts = [f'<section id="shapes"><h2>Shapes</h2><p class="meta">{len(sh.symbols)} symbols · '
             f"{len(sh.specializations)} specializations · {guard_count(sh.guards)} · "
             f"{len(sh.data_dependent)} data-dependent errors</p>"]
    parts.append(table(("compile", "symbol", "source", "value", "reason", "your line", "code", "torch line"),
                       [(s.compile_id, s.symbol, ", ".join(s.sources), s.value, s.reason, _loc(s.user_frame),
                         _code(s.user_frame), _loc(s.library_frame)) for s in sh.specializations]))
    parts.append(table(("compile", "symbol", "source", "hint", "range", "your line"),
                       [(y.compile_id, y.symbol, y.source or "(unbacked)", y.hint, y.value_range, _loc(y.user_frame))
                        for y in sh.symbols]))
    parts.append(table(("compile", "guard", "symbols", "added by", "in final guards", "your line", "code"),
                       [(g.compile_id, g.expression, ", ".join(g.sources), STAGE_NAMES.get(g.stage, "?"),
                         g.in_final_guards or "?", guard_line(g), _code(g.user_frame)) for g in sh.guards]))
    if any(g.in_final_guards == "no" for g in sh.guards):
        parts.append(f'<p class="note">{e(FINAL_NOTE)}</p>')
    parts.append(table(("compile", "data-dependent expression", "your line"),
                       [(x.compile_id, x.expression, _loc(x.user_frame)) for x in sh.data_dependent]))
    parts.extend(f'<p class="note">{e(line)}</p>' for line in views.advice(rep))
    spec = views.suggested_spec(rep)
    if spec is not None and spec.mark_dynamic:
        parts.append("<pre>" + e("\n".join(spec.mark_dynamic)) + "</pre>")
    parts.append("</section>")
    return "".join(parts)


def with_check(rep: Report, check: Any) -> RenderableType:
    """The view, then the outcome of compiling again with the suggested spec (``shapes --verify-spec``)."""
    view = shapes(rep)
    if check is None:
        return view
    before = len(rep.compiles)
    line = (f"Spec check: the {check.calls} calls compiled {check.compiles} time(s) with the suggested spec "
            f"(this run: {before})")
    if check.error:
        line += f"; torch raised {check.error}"
    return Group(view, Text(line, style="bold green" if check.compiles <= 1 and not check.error else "bold yellow"))
