"""Views of what the user brought to the compile: passes, user Triton kernels, custom ops, verify, export.

Pure functions of the report (no torch, no printing).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, JustifyMethod, RenderableType
from rich.text import Text

from tcinspect.render.grid import Table
from tcinspect.render.htmlparts import esc
from tcinspect.report import ExportRun, FirstDivergence, Report, TensorCheck

_CHANGE_STYLE = {"removed": "red", "added": "green", "replaced": "yellow", "changed": "yellow"}


def passes(rep: Report) -> RenderableType:
    """Each pass on each ATen graph: node counts, lint, and the nodes it removed/added/replaced."""
    parts: list[RenderableType] = [Text("Graph passes (before Inductor)", style="bold magenta")]
    for p in rep.passes:
        verdict = Text("lint ok", style="green") if p.lint == "ok" and not p.error else Text(
            p.error or f"lint failed: {p.lint}", style="bold red")
        head = Text.assemble((f"{p.name}", "cyan"), f" on {p.graph} {p.compile_id} · nodes {p.nodes_before} → "
                             f"{p.nodes_after} · {len(p.changes)} changes · ", verdict)
        parts.append(head)
        if p.changes:
            t = Table(header_style="bold", show_edge=False)
            t.add_column("change")
            t.add_column("before", overflow="fold")
            t.add_column("after", overflow="fold")
            for c in p.changes:
                t.add_row(Text(c.change, style=_CHANGE_STYLE.get(c.change, "")), c.before, c.after)
            parts.append(t)
        if p.decomposed:
            parts.append(Text(f"  decomposed for Inductor: {', '.join(p.decomposed)} (Inductor has no lowering, "
                              "only a decomposition it applies before AOTAutograd; decomposed again with its table "
                              "after the passes)", style="yellow"))
    return Group(*parts)


def user_kernels(rep: Report, code: bool = False) -> RenderableType:
    """User Triton kernels the AOT graphs call, and whether each custom op is transparent or opaque."""
    st = rep.stages.aot_autograd
    parts: list[RenderableType] = []
    if st.user_kernels:
        t = Table(title="User Triton kernels", title_justify="left", header_style="bold")
        for col in ("graph", "node", "kernel", "grid", "tensor args", "mutates", "constants"):
            t.add_column(col, overflow="fold")
        for k in st.user_kernels:
            name = k.name or f"kernel_idx {k.kernel_idx}"
            t.add_row(f"{k.graph} {k.compile_id}", k.node, Text(name, style="cyan"), k.grid, ", ".join(k.tensor_args),
                      ", ".join(k.mutated), k.constant_args)
        parts.append(t)
        if code:
            from tcinspect.render.parts import code_panel

            seen = set()
            for k in st.user_kernels:
                if k.source and k.name not in seen:
                    seen.add(k.name)
                    parts.append(code_panel(k.source, f"{k.name} (user Triton kernel)"))
    if st.custom_ops:
        t = Table(title="Custom ops", title_justify="left", header_style="bold")
        t.add_column("op", style="cyan")
        t.add_column("to the compiler")
        t.add_column("why", overflow="fold")
        for op in st.custom_ops:
            t.add_row(op.name, Text(op.visibility, style="green" if op.visibility == "transparent" else "yellow"),
                      op.detail)
        parts.append(t)
    return Group(*parts)


def _err(value: float) -> str:
    return f"{value:.3g}"


def tensor_table(checks: Sequence[TensorCheck], title: str) -> Table:
    t = Table(title=title, title_justify="left", header_style="bold")
    noise = any(c.fp64_rmse or c.eager_fp64_rmse for c in checks)
    columns: list[tuple[str, JustifyMethod]] = [("tensor", "left"), ("dtype", "left"), ("shape", "left"),
                                                 ("max abs err", "right"), ("max rel err", "right"),
                                                 ("rtol / atol", "right")]
    if noise:
        columns.append(("RMSE vs float64 compiled / eager", "right"))
    columns.append(("", "left"))
    for col, just in columns:
        # a parameter name is shown whole, folded onto more lines when the terminal is narrow
        t.add_column(col, justify=just, overflow="fold" if col == "tensor" else "ellipsis",
                     min_width=16 if col == "tensor" else None)
    for c in checks:
        judged = bool(c.fp64_rmse or c.eager_fp64_rmse)
        verdict = Text("ok (rounding noise)" if judged else "ok", style="green") if c.ok else \
            Text("MISMATCH", style="bold red")
        row = [c.name, c.dtype, "[" + ", ".join(str(s) for s in c.shape) + "]", _err(c.max_abs_error),
               _err(c.max_rel_error), f"{c.rtol:g} / {c.atol:g}"]
        if noise:
            row.append(f"{_err(c.fp64_rmse)} / {_err(c.eager_fp64_rmse)}" if judged else "")
        t.add_row(*row, verdict)
    return t


def mismatches(checks: Sequence[TensorCheck]) -> list[RenderableType]:
    """One line per mismatched tensor, its name and why: below the table, so the table stays narrow."""
    return [Text.assemble((f"  {c.name}: ", "bold red"), c.message) for c in checks if not c.ok and c.message]


def verification(rep: Report) -> RenderableType:
    """`tcinspect verify`: every output and gradient, eager against compiled."""
    v = rep.verification
    backend = rep.options.backend + "".join(f" --pass {p}" for p in rep.options.passes)
    if v is None:
        return Text("verify: no comparison in this report (run `tcinspect verify FILE`)", style="yellow")
    head = Text.assemble(("verify  ", "bold magenta"), f"eager vs torch.compile(backend={backend}) · ",
                         ("PASS", "bold green") if v.ok else ("FAIL", "bold red"))
    parts: list[RenderableType] = [head]
    if v.error:
        parts.append(Text(v.error, style="red"))
    if v.tensors:
        bad = sum(1 for c in v.tensors if not c.ok)
        parts.append(tensor_table(v.tensors, f"{len(v.tensors)} tensors compared, {bad} mismatched"))
        parts.extend(mismatches(v.tensors))
        if v.reference:
            parts.append(Text("outside the dtype tolerances a tensor is judged by its RMSE from a float64 eager run: "
                              "compiled's may be 2x eager's (3x for float16, bfloat16 and under 1,000 elements) "
                              "+ rtol/10", style="dim"))
    if v.first_divergence is not None:
        parts.extend(first_divergence(v.first_divergence))
    return Group(*parts)


def first_divergence(d: FirstDivergence) -> list[RenderableType]:
    """Where compiled results first depart from eager: the node (or backend stage), then each step the search ran."""
    if d.stage:
        where = Text.assemble(("first departs  ", "bold red"), "backend stage ", (d.stage, "bold"))
        if d.subsystem:
            where.append(f" · {bisected(d)}")
        if d.node:
            where.append(f" · node {d.node} ({d.op})")
            where.append(f" · {d.line}" if d.line else "")
            where.append(f" · module {d.module}" if d.module else "")
    elif d.node:
        where = Text.assemble(("first departs  ", "bold red"), f"{d.graph} · node ", (d.node, "bold"), f" ({d.op})")
        if d.line:
            where.append(f" · {d.line}")
        if d.module:
            where.append(f" · module {d.module}")
        where.append(f" · max abs {_err(d.max_abs)} · RMSE {_err(d.rmse)}")
    else:
        where = Text.assemble(("first departs  ", "bold yellow"), "not found")
    lines: list[RenderableType] = [where]
    if d.note:
        lines.append(Text(f"  {d.note}", style="dim"))
    for s in d.steps:
        lines.append(Text.assemble("  ", ("matches" if s.ok else "differs", "green" if s.ok else "red"),
                                   f"  {s.what} ({s.seconds:.1f} s)", (f": {s.detail}" if s.detail else "", "dim")))
    lines.append(Text(f"  searched {d.seconds:.1f} s" + (f"; stopped: {d.stopped}" if d.stopped else "")
                      + " (--no-locate skips this, --locate-budget bounds it)", style="dim"))
    return lines


def bisected(d: FirstDivergence) -> str:
    """torch's CompilerBisector's subsystem, its application and debug info, in a few words."""
    number = f" #{d.bisect_number}" if d.bisect_number else ""
    return f"{d.subsystem}{number}" + (f" ({d.debug_info})" if d.debug_info and d.debug_info != d.subsystem else "")


def _export_head(e: ExportRun) -> Text:
    verdict = ("ok", "bold green") if e.ok else ("FAILED", "bold red")
    text = Text.assemble((f"torch.export {e.mode}  ", "bold magenta"), verdict)
    if e.dynamic_shapes:
        text.append(f"  dynamic: {e.dynamic_shapes}", style="dim")
    return text


def exports(rep: Report, graphs: bool = True) -> RenderableType:
    """`tcinspect export`: the matrix, then per mode the failure or the graph and its signature."""
    from tcinspect.render.parts import node_table

    matrix = Table(title="torch.export", title_justify="left", header_style="bold")
    matrix.add_column("mode")
    matrix.add_column("result")
    matrix.add_column("nodes", justify="right")
    matrix.add_column("AOTInductor")
    matrix.add_column("where / why", overflow="fold")
    for e in rep.exports:
        aoti = "" if e.aoti is None else ("ok (max abs err " + _err(e.aoti.max_abs_error) + ")" if e.aoti.ok
                                          else f"FAILED: {e.aoti.error}")
        where = ""
        if e.user_frame is not None:
            where = f"{e.user_frame.file.rsplit('/', 1)[-1]}:{e.user_frame.line}"
            where += f"  {e.user_frame.code}" if e.user_frame.code else ""
        matrix.add_row(e.mode, Text("ok", style="green") if e.ok else Text("failed", style="bold red"),
                       str(len(e.graph.nodes)) if e.graph else "", aoti,
                       (e.error + ("\n" + where if where else "")) if not e.ok else "")
    parts: list[RenderableType] = [matrix]
    if graphs:
        for e in rep.exports:
            if not e.ok or e.graph is None:
                continue
            parts.append(Text(""))
            parts.append(_export_head(e))
            if e.signature is not None:
                s = e.signature
                sig = Table(title="graph signature", title_justify="left", header_style="bold", show_header=False)
                sig.add_column("kind", style="bold")
                sig.add_column("names", overflow="fold")
                for label, names in (("user inputs", s.user_inputs), ("parameters", s.parameters),
                                     ("buffers", s.buffers), ("constants", s.constants),
                                     ("outputs", s.user_outputs)):
                    if names:
                        sig.add_row(label, ", ".join(names))
                parts.append(sig)
            parts.append(node_table(e.graph, f"exported graph ({e.mode}) · {e.graph.op_count} ops"))
    return Group(*parts)


def verification_html(rep: Report) -> str:
    """``verify``: each output and gradient against eager, and where compiled results first depart."""
    v = rep.verification
    if v is None:
        return ""
    verdict = "matches eager" if v.ok else (v.error or "differs from eager")
    parts = [f'<section id="verification"><h2>Verification · {esc(verdict)}</h2>']
    rows = "".join(f"<tr><td>{esc(t.name)}<td>{esc(t.dtype)}<td class=num>{t.max_abs_error:.3g}"
                   f"<td class=num>{t.max_rel_error:.3g}<td>{'ok' if t.ok else 'differs'}" for t in v.tensors)
    if rows:
        parts.append("<table><thead><tr><th>tensor<th>dtype<th>max abs<th>max rel<th></thead>"
                     f"<tbody>{rows}</tbody></table>")
    d = v.first_divergence
    if d is not None:
        node = (f" · node <code>{esc(d.node)}</code> ({esc(d.op)}) · {esc(d.line)}"
                f"{' · ' + esc(d.module) if d.module else ''}") if d.node else ""
        if d.stage:
            from tcinspect.render.extensions import bisected

            where = f"backend stage {esc(d.stage)}" + (f" · {esc(bisected(d))}" if d.subsystem else "") + node
        else:
            where = (f"{esc(d.graph)}{node} · max abs {d.max_abs:.3g} · RMSE {d.rmse:.3g}" if d.node
                     else "not found")
        parts.append(f'<p class="alert">first departs: {where}</p>')
        if d.note:
            parts.append(f'<p class="note">{esc(d.note)}</p>')
        steps = "".join(f"<li>{'matches' if s.ok else 'differs'} · {esc(s.what)} ({s.seconds:.1f} s)"
                        f"{' · ' + esc(s.detail) if s.detail else ''}</li>" for s in d.steps)
        if steps:
            parts.append(f"<ul>{steps}</ul>")
        if d.stopped:
            parts.append(f'<p class="note">stopped: {esc(d.stopped)}</p>')
    parts.append("</section>")
    return "".join(parts)
