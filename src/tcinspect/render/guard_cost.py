"""Report -> the guard-cost part of the `guards` view: latency per compile, lambda guards, guards that grow
with the model, the timed calls, and the levers. Pure."""

from __future__ import annotations

from typing import Optional

from rich.console import RenderableType
from rich.text import Text

from tcinspect.analysis import guard_cost as gc
from tcinspect.render.findings import your_code
from tcinspect.render.grid import Table
from tcinspect.render.parts import _clip, _limited
from tcinspect.report import Report


def _us(v: Optional[float]) -> str:
    return "-" if v is None else f"{v:,.2f}"


def header(rep: Report) -> str:
    """The header's guard-cost clause: the largest latency torch measured, lambda guards, the lookup per call."""
    cost = rep.guard_cost
    if cost is None or not cost.compiles:
        return ""
    worst = max(cost.compiles, key=lambda c: gc.latency_of(c) or -1.0)
    lat = gc.latency_of(worst)
    text = (f"guard latency {_us(lat)} us ({worst.compile_id}, torch at compile time)" if lat is not None
            else "guard latency not recorded by this torch")
    text += f" · lambda guards {sum(len(c.lambda_guards) for c in cost.compiles)}"
    if cost.per_call is not None and cost.per_call.calls:
        sets = gc.per_input_set(cost.per_call.calls)
        text += f" · cache lookup {_us(sum(s.lookup_us for s in sets) / len(sets))} us/call"
    return text


def graph_clause(rep: Report, compile_id: str) -> str:
    """A graph title's guard-cost clause: its latency and lambda guards."""
    cost = rep.guard_cost
    c = next((x for x in (cost.compiles if cost else ()) if x.compile_id == compile_id), None)
    if c is None:
        return ""
    lat = gc.latency_of(c)
    return (f" · latency {_us(lat)} us" if lat is not None else "") + f" · {len(c.lambda_guards)} lambda guards"


def parts(rep: Report, all_rows: bool = False, limit: Optional[int] = 50) -> list[RenderableType]:
    cost = rep.guard_cost
    if cost is None:
        return [Text("Guard cost: not in this report (a saved report from before it, or --no-timings).", style="dim")]
    graphs = {g.compile_id: g for g in rep.stages.dynamo.graphs}
    out: list[RenderableType] = []
    t = Table(title="Guard cost per compile (torch's guard latency: one cold run of the guards, at compile time)",
              title_justify="left", header_style="bold")
    for name, justify in (("compile id", "left"), ("function", "left"), ("guards", "right"),
                          ("latency us", "right"), ("lambda guards", "left"), ("grows with the model", "left")):
        t.add_column(name, justify=justify)  # type: ignore[arg-type]
    growing: list[tuple[str, gc.Family]] = []
    for c in cost.compiles:
        g = graphs.get(c.compile_id)
        fams = gc.families(g.guards, tuple(x.expression for x in c.lambda_guards)) if g else []
        growing += [(c.compile_id, f) for f in fams]
        placed = ", ".join(f"{p} {n}" for p, n in _placements(c))
        grows = "; ".join(f"{f.container}: {f.layers} layers × {_per_layer(f)}" for f in fams[:2]) or "-"
        t.add_row(c.compile_id, c.function, str(len(g.guards)) if g else "-", _us(gc.latency_of(c)),
                  f"{len(c.lambda_guards)}" + (f" ({placed})" if placed else ""), grows)
    out.append(t)
    lam = [(c.compile_id, x) for c in cost.compiles for x in c.lambda_guards]
    if lam:
        t = Table(title="Guards evaluated in Python (LAMBDA_GUARD), where they sit in the guard tree",
                  title_justify="left", header_style="bold")
        t.add_column("compile id")
        t.add_column("placement")
        t.add_column("guard", style="cyan")
        t.add_column("your code", no_wrap=not all_rows, overflow="ellipsis", max_width=None if all_rows else 44)
        for cid, x in _limited(lam, None if all_rows else limit, t):
            t.add_row(cid, x.placement, _clip(gc.readable(x.expression), 110), your_code(x.user_code, all_rows))
        out.append(t)
    if growing:
        t = Table(title="Guards that grow with the model (layer index normalised to [*])", title_justify="left",
                  header_style="bold")
        t.add_column("compile id")
        t.add_column("container", style="cyan")
        t.add_column("layers", justify="right")
        t.add_column("guards per layer", justify="right")
        t.add_column("guards", justify="right")
        t.add_column("lambda", justify="right")
        for cid, f in _limited(growing, None if all_rows else limit, t):
            t.add_row(cid, f.container, str(f.layers), _per_layer(f), str(f.guards), str(f.lambda_guards))
        out.append(t)
    if cost.per_call is not None:
        out.extend(_per_call(rep))
    levers = gc.levers(rep)
    if levers:
        out.append(Text("Levers (PyTorch's \"Reducing Guard Overhead\"; the evidence is this report's):", style="bold"))
        for lv in levers:
            out.append(Text.assemble(("  " + lv.name, "bold"), f": {lv.how}\n    evidence: {lv.evidence}\n",
                                     ("    risk: ", "bold red"), lv.risk))
    return out


def _placements(c: object) -> list[tuple[str, int]]:
    from collections import Counter

    counts = Counter(x.placement for x in getattr(c, "lambda_guards", ()))
    return [(p, counts[p]) for p in ("root", "leaf", "epilogue") if counts[p]]


def _per_layer(f: gc.Family) -> str:
    lo, hi = min(f.per_layer), max(f.per_layer)
    return str(lo) if lo == hi else f"{lo}–{hi}"


def _per_call(rep: Report) -> list[RenderableType]:
    cost = rep.guard_cost
    p = cost.per_call if cost else None
    if p is None:
        return []
    if not p.calls:
        return [Text(f"Per call: {p.note or 'no call was timed'}", style="yellow")]
    t = Table(title=f"Per call (torch.profiler, CPU; {p.runs} timed calls per input set after a warm-up, forward "
                    "only; medians)", title_justify="left", header_style="bold")
    for name in ("input set", "call us", "cache lookup us", "before first op us", "share", "ran",
                 "entries tried"):
        t.add_column(name, justify="left" if name in ("input set", "ran") else "right")
    for s in gc.per_input_set(p.calls):
        share = "-" if s.before_share is None else f"{100 * s.before_share:.0f}%"
        t.add_row("example_inputs" if s.input_set == 0 else f"input_sets[{s.input_set - 1}]", _us(s.call_us),
                  _us(s.lookup_us), _us(s.before_first_op_us), share, ", ".join(s.compile_ids) or "-",
                  str(s.entries_tried))
    out: list[RenderableType] = [t]
    frames = ", ".join(f"{f.function} ({f.file.rsplit('/', 1)[-1]}:{f.line}): {len(f.compile_ids)} "
                       f"[{', '.join(f.compile_ids)}]" for f in p.frames)
    out.append(Text(f"  cache entries per frame, in the order Dynamo tries them: {frames or '-'}", style="dim"))
    if p.compiled_during:
        out.append(Text(f"  compiled during the timed calls: {', '.join(p.compiled_during)} (those calls include "
                        "compiling)", style="yellow"))
    return out
