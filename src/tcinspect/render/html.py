"""Report -> one self-contained HTML page: a summary, then every stage, with the graphs drawn in SVG.

Pure: returns a string, never prints, never imports torch. The page loads nothing from anywhere:
its styles and its one small script are inline, and its Content-Security-Policy forbids any request.
Graph pictures come from Graphviz (``render.svg``); without it, from tcinspect's own layered layout, and the
page says so.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Optional

from tcinspect.analysis import coverage as coverage_views
from tcinspect.analysis.breaks import distinct_breaks
from tcinspect.analysis.codegen import fusion_summary
from tcinspect.render import drawing
from tcinspect.render.assets import CSS, SCRIPT
from tcinspect.render.drawing import legend, swatch
from tcinspect.render.highlight import CSS as HIGHLIGHT_CSS
from tcinspect.render.highlight import highlight
from tcinspect.render.htmlparts import OPEN_ROWS, esc, fold, open_attr, slug, status
from tcinspect.render.picture import KernelRef, kernel_refs, pictures
from tcinspect.render.table import USER_GUARD_KINDS, compile_time_note, guard_expression
from tcinspect.report import (
    Graph,
    GraphBreak,
    Guard,
    Node,
    OutputCode,
    Report,
    guards_per_compile,
    sections,
)

OPEN_PICTURE_NODES = 150
#: Characters of code highlighted per page, and per block: Pygments takes about a second per
#: 100,000 characters of FX graph code on 2 CPU cores. Code past either limit is shown plain.
HIGHLIGHT_CHARS = 200_000
HIGHLIGHT_BLOCK_CHARS = 40_000


_INFERRED = '<i title="inferred from the wrapper: Inductor stated no node mapping">~</i> '
_UNKNOWN = '<i title="{why}">?</i>'


def _tensor(n: Node) -> str:
    if not n.dtype:
        return ""
    return "sym" if n.dtype == "sym" else f"{n.dtype}[{', '.join(n.shape)}]"


class _Page:
    """Builds the page; keeps the per-page budgets (highlighted code, drawn nodes)."""

    def __init__(self, rep: Report, progress: Optional[Callable[[int, int], None]] = None, draw: bool = True) -> None:
        self.rep = rep
        self.highlight_left = HIGHLIGHT_CHARS
        self.plain_code = 0
        self.pictures = {p.key: p for p in pictures(rep)} if draw else {}
        self.svgs = drawing.draw(list(self.pictures.values()), progress)

    # ------------------------------------------------------------------ pieces

    def code(self, text: str, language: str = "python") -> str:
        """A code block, highlighted while the page's budget lasts."""
        text = text.rstrip("\n")
        if len(text) <= min(self.highlight_left, HIGHLIGHT_BLOCK_CHARS):
            self.highlight_left -= len(text)
            return f'<pre class="hl">{highlight(text, language)}</pre>'
        self.plain_code += 1
        return f"<pre>{esc(text)}</pre>"

    def picture(self, key: str) -> str:
        """A graph's SVG (or why there is none), with its colour key."""
        pic = self.pictures.get(key)
        if pic is None:
            return ""
        drawing, notes = self.svgs.get(key, ("", ()))
        n = len(pic.graph.nodes)
        body = "".join(f'<p class="note">{note}</p>' for note in notes)
        if drawing:
            body += f'{legend(pic)}<div class="svg">{drawing}</div>'
        return fold(f"picture · {n:,} nodes", body, n <= OPEN_PICTURE_NODES, "picture")

    def nodes(self, graph: Graph, kernels: Mapping[str, KernelRef] = {}, label: str = "nodes") -> str:
        saved = set(graph.saved_for_backward)
        head = "<tr><th>#<th>op<th>name<th>target<th>args<th>tensor<th>source" + ("<th>kernel" if kernels else "")
        rows = []
        for i, n in enumerate(graph.nodes):
            star = ' <span title="saved for backward">★</span>' if n.name in saved else ""
            src = f'<td title="{esc(n.source.code)}">{esc(n.source.short())}' if n.source else "<td>"
            row = (f"<tr><td>{i}<td>{esc(n.op)}<td class=name>{esc(n.name)}{star}<td>{esc(n.target)}"
                   f"<td class=args>{esc(n.args)}<td class=t>{esc(_tensor(n))}{src}")
            if kernels:
                ref = kernels.get(n.name)
                row += f"<td class=t>{swatch(ref)}{esc(ref.name) if ref else ''}"
            rows.append(row)
        count = len(graph.nodes)
        return fold(f"{label} · {count:,}", f'<table class="nodes"><thead>{head}</thead><tbody>{"".join(rows)}'
                     "</tbody></table>", count <= OPEN_ROWS, "table")

    # ------------------------------------------------------------------ sections

    def header(self) -> str:
        rep, t, o = self.rep, self.rep.target, self.rep.options
        model = f" (model `{t.model_name}`)" if t.model_name else ""
        what = {"model": f"{t.path}{model}", "script": f"{t.path} (script)"}.get(t.kind, t.model_name or t.path or "callable")
        extras = [f"backend={o.backend}"] + ([f"mode={o.mode}"] if o.mode else []) + \
            (["fullgraph"] if o.fullgraph else []) + ([f"dynamic={o.dynamic}"] if o.dynamic else [])
        meta = f"torch {rep.torch_version or 'unknown'} · {rep.device} · {' '.join(extras)}"
        if rep.tcinspect_version:
            meta += f" · tcinspect {rep.tcinspect_version}"
        nav = "".join(f'<a href="#{k}">{v}</a>' for k, v in (
            ("findings", "Findings"), ("summary", "Summary"), ("dynamo", "Dynamo graphs"), ("guards", "Guards"), ("breaks", "Graph breaks"),
            ("aot", "AOT graphs"), ("inductor", "Inductor kernels"))
            + ((("compile-time", "Compile time"),) if self.rep.compile_time is not None else ())
            + ((("shapes", "Shapes"),) if self.rep.shapes is not None else ())
            + ((("memory", "Memory"),) if self.rep.memory is not None else ()))
        return f'<header><h1>tcinspect <span class="target">{esc(what)}</span></h1><p class="meta">{esc(meta)}</p>' \
               f"<nav>{nav}</nav></header>"

    def summary(self) -> str:
        rep, s = self.rep, self.rep.summary
        stats = (
            ("graphs", s.graphs, "FX graphs Dynamo captured"
             + (f" · {s.graphs_failed} more the backend failed on (ran eagerly)" if s.graphs_failed else "")),
            ("graph_breaks", s.graph_breaks, f"graph breaks · {s.distinct_graph_breaks} distinct"),
            ("recompiles", s.recompiles, "recompiles"),
            ("guards", s.guards, "guards"),
            ("aot_graphs", s.aot_graphs, "AOT graphs"),
            ("kernels", s.kernels, "kernels launched"),
            ("compile_time_s", f"{s.compile_time_s:.2f} s", f"compile time · {compile_time_note(rep)}"),
            ("cache", f"{s.cache_hits} / {s.cache_misses}", "FX graph cache hit / miss"),
        )
        cov = rep.coverage
        if cov is not None:  # how much of the model runs compiled, first (PyTorch CI's figures)
            runtime = coverage_views.runtime_line(cov.runtime)
            stats = (("calls_captured", cov.calls_captured, f"calls captured in {cov.unique_graphs} graphs"),
                     ("fallbacks_to_eager", cov.fallbacks_to_eager, "frames ran eagerly (fallbacks to eager)"),
                     *((("compiled_ops", runtime[0], "ATen ops of the measured call ran compiled"),)
                       if runtime is not None and cov.runtime is not None and not cov.runtime.not_measured else ()),
                     *stats)
        cards = "".join(f'<div class="stat" data-key="{k}"><b>{esc(v)}</b><span>{esc(label)}</span></div>'
                        for k, v, label in stats)
        st = rep.stages
        stages = "".join(f"<li><b>{name}</b> {status(x.status, x.error)}</li>" for name, x in (
            ("dynamo", st.dynamo), ("aot_autograd", st.aot_autograd), ("inductor", st.inductor)))
        parts = [f'<section id="summary"><h2>Summary</h2><div class="stats">{cards}</div>'
                 f'<ul class="stages">{stages}</ul>']
        if rep.error:
            parts.append(f'<p class="alert">capture incomplete: {esc(rep.error)}</p>')
        for f in coverage_views.eager_frames(rep):
            where = f" at {esc(f.user_frame.short())} <code>{esc(f.user_frame.code)}</code>" if f.user_frame else ""
            parts.append(f'<p class="alert">ran eagerly: {esc(f.function)} ({esc(f.file.rsplit("/", 1)[-1])}:{f.line}): '
                         f'torch gave up{where}: {esc(f.reason or f.fail_type)}</p>')
        if cov is not None and cov.runtime is not None and cov.runtime.islands:
            rows = "".join(f"<tr><td>{esc(i.file.rsplit('/', 1)[-1])}:{i.line}<td>{esc(i.function)}<td><code>{esc(i.code)}"
                           f"</code><td class=num>{i.ops}<td class=num>{i.time_us:.1f}" for i in cov.runtime.islands)
            parts.append(fold(f"eager islands · {len(cov.runtime.islands)} (ATen ops the measured call ran eagerly)",
                               "<table><thead><tr><th>where<th>function<th>line<th>ops<th>µs</thead>"
                               f"<tbody>{rows}</tbody></table>", True, "table"))
        for e in rep.input_errors:
            parts.append(f'<p class="alert">input set {e.input_set} raised: {esc(e.error)}</p>')
        if rep.compiles:
            guards = guards_per_compile(rep.stages, rep.compiles)  # the summary's definition, per compile
            rows = "".join(
                f"<tr><td>{esc(c.compile_id)}<td>{esc(c.function)}<td>{esc(c.file.rsplit('/', 1)[-1])}:{c.line}"
                f"<td class=num>{c.entire_frame_compile_time_s:.3f}<td class=num>{c.backend_compile_time_s:.3f}"
                f"<td class=num>{c.inductor_compile_time_s:.3f}<td class=num>{guards.get(c.compile_id, 0)}"
                f"<td class=num>{c.graph_op_count}<td>{esc(c.aot_autograd_cache)}<td>{esc(c.fail_reason or c.fail_type)}"
                for c in rep.compiles)
            parts.append(fold(f"compiles · {len(rep.compiles)}", "<table><thead><tr><th>compile id<th>function"
                               "<th>where<th>frame s<th>backend s<th>inductor s<th>guards<th>ops<th>AOT cache"
                               f"<th>failure</thead><tbody>{rows}</tbody></table>", len(rep.compiles) <= 20, "table"))
        if rep.timings:
            items = " · ".join(f"{esc(k)} {v:.2f} s" for k, v in rep.timings)
            parts.append(f'<p class="meta">wall times: {items}</p>')
        parts.append("</section>")
        return "".join(parts)

    def dynamo(self) -> str:
        st = self.rep.stages.dynamo
        parts = [f'<section id="dynamo"><h2>Dynamo graphs {status(st.status, st.error)}</h2>']
        if not st.graphs:
            parts.append('<p class="none">No graphs.</p>')
        many = len(st.graphs) > 20
        for g in st.graphs:
            pic = self.pictures.get(g.compile_id)
            loc = f" ({g.file.rsplit('/', 1)[-1]}:{g.line})" if g.file else ""
            parts.append(
                f'<details class="graph" id="dynamo-{slug(g.compile_id)}"{open_attr(not many)}><summary>'
                f'<span class="art">dynamo_output_graph</span> {esc(g.compile_id)} · {esc(g.function)}{esc(loc)} · '
                f"{g.graph.op_count} ops · {len(g.guards)} guards</summary>")
            if g.backend_error:
                parts.append(f'<p class="breaknote">backend {esc(self.rep.options.backend)} failed on this graph, '
                             f'which ran eagerly: {esc(g.backend_error)}</p>')
            for b in pic.breaks if pic else ():
                parts.append(f'<p class="breaknote">ends in a graph break: {esc(_where(b))} — {esc(b.break_type)}'
                             f' (<a href="#breaks">details</a>)</p>')
            parts.append(self.picture(g.compile_id))
            parts.append(self.nodes(g.graph, pic.kernels if pic else {}))
            parts.append(fold("code", self.code(g.graph.code), False, "code"))
            parts.append("</details>")
        if st.recompiles:
            rows = "".join(f"<tr><td>{esc(r.compile_id)}<td>{esc(r.function)}<td>{r.input_set}"
                           f"<td>{'<br>'.join(esc(x) for x in r.reasons) or '(PyTorch gave no reason)'}"
                           f"<td>{'limit hit' if r.limit_hit else ''}<td>{esc(r.suggestion)}"
                           for r in st.recompiles)
            parts.append(f'<h3 id="recompiles">Recompiles · {len(st.recompiles)}</h3><table><thead><tr>'
                         "<th>compile id<th>function<th>input set<th>reason (failed guard)<th><th>suggestion"
                         f"</thead><tbody>{rows}</tbody></table>")
        parts.append("</section>")
        return "".join(parts)

    def guards(self) -> str:
        graphs = self.rep.stages.dynamo.graphs
        parts = ['<section id="guards"><h2>Guards</h2>']
        if not graphs:
            parts.append('<p class="none">No graphs, so no guards.</p>')
        for g in graphs:
            user = [x for x in g.guards if x.kind in USER_GUARD_KINDS]
            other = [x for x in g.guards if x.kind not in USER_GUARD_KINDS]
            parts.append(f'<details class="graph"{open_attr(len(graphs) <= 20)}><summary>guards {esc(g.compile_id)} · '
                         f"{esc(g.function)} · {len(g.guards)}</summary>")
            parts.append(_guard_table(user, "on tensors, shapes, values and global state", len(user) <= OPEN_ROWS))
            if other:
                parts.append(_guard_table(other, "on types, object identity and attributes", False))
            parts.append("</details>")
        parts.append(_guard_cost(self.rep))
        parts.append("</section>")
        return "".join(parts)

    def breaks(self) -> str:
        items = distinct_breaks(self.rep)
        parts = [f'<section id="breaks"><h2>Graph breaks · {self.rep.summary.graph_breaks}</h2>']
        failures = self.rep.stages.dynamo.backend_failures
        if failures:  # not graph breaks: frames Dynamo ran eagerly after the backend failed on their graph
            rows = "".join(f"<tr><td>{esc(f.compile_id)}<td>{esc(f.function)}<td>"
                           f"{esc(f'{f.user_frame.short()} in {f.user_frame.function}' if f.user_frame else '?')}"
                           f"<td>{esc(f.error)}" for f in failures)
            parts.append(f'<h3>Graphs the backend failed on · {len(failures)} (ran eagerly; not graph breaks)</h3>'
                         f"<table><thead><tr><th>compile id<th>frame<th>user line<th>torch's error</thead>"
                         f"<tbody>{rows}</tbody></table>")
        if not items:
            parts.append('<p class="none">None: every frame compiled into one graph.</p>')
        for d in items:
            b = d.first
            kind = b.break_type + (f" ({b.gb_id})" if b.gb_id else "")
            parts.append(f'<details class="break"{open_attr(len(items) <= 20)}><summary><b>{esc(_where(b))}</b> · '
                         f"{esc(kind)} · {d.count}× in {esc(', '.join(d.compile_ids))}</summary>")
            if b.context:
                line = b.user_frame.line if b.user_frame else -1
                rows = "".join(f'<span class="{"hit" if n == line else "ln"}"><i>{n}</i>{esc(text)}\n</span>'
                               for n, text in b.context)
                parts.append(f'<pre class="context">{rows}</pre>')
            elif b.user_frame and b.user_frame.code:
                parts.append(f'<pre class="context"><span class="hit">{esc(b.user_frame.code)}</span></pre>')
            facts = [("reason", b.reason), ("explanation", b.explanation), ("fix", b.fix)]
            if b.model_frame is not None:
                m = b.model_frame
                facts.insert(0, ("reached from", f"{m.file}:{m.line} in {m.function}" + (f"  {m.code}" if m.code else "")))
            dl = "".join(f"<dt>{k}<dd>{esc(v)}" for k, v in facts if v)
            if b.hints:
                dl += "<dt>hints<dd><ul>" + "".join(f"<li>{esc(h)}" for h in b.hints) + "</ul>"
            parts.append(f"<dl>{dl}</dl>")
            if b.raw and not (b.explanation or b.reason):
                parts.append(f"<pre>{esc(b.raw)}</pre>")
            parts.append("</details>")
        parts.append("</section>")
        return "".join(parts)

    def aot(self) -> str:
        st = self.rep.stages.aot_autograd
        parts = [f'<section id="aot"><h2>AOT graphs {status(st.status, st.error)}</h2>']
        if not st.graphs:
            parts.append('<p class="none">No AOTAutograd graphs.</p>')
        for g in st.graphs:
            for label, graph in (("aot_forward_graph", g.forward), ("aot_backward_graph", g.backward),
                                 ("aot_inference_graph", g.inference), ("aot_joint_graph", g.joint)):
                if graph is None:
                    continue
                saved = f" · saved for backward (★): {', '.join(graph.saved_for_backward)}" \
                    if graph.saved_for_backward else ""
                parts.append(f'<details class="graph"{open_attr(len(st.graphs) <= 10 and label != "aot_joint_graph")}>'
                             f'<summary><span class="art">{label}</span> {esc(g.compile_id)} · {graph.op_count} ops'
                             f"{esc(saved)}</summary>")
                if label != "aot_joint_graph":
                    parts.append(self.nodes(graph))
                parts.append(fold("code", self.code(graph.code), False, "code"))
                parts.append("</details>")
        parts.append("</section>")
        return "".join(parts)

    def inductor(self) -> str:
        st = self.rep.stages.inductor
        parts = [f'<section id="inductor"><h2>Inductor kernels {status(st.status, st.error)}</h2>']
        if not st.outputs:
            parts.append('<p class="none">No Inductor output code.</p>')
        for o in st.outputs:
            parts.append(self.output(o, many=len(st.outputs) > 10))
        parts.append("</section>")
        return "".join(parts)

    def output(self, o: OutputCode, many: bool) -> str:
        f = fusion_summary(o)
        key = o.aot_id or f"{o.compile_id} {o.part}"
        refs = kernel_refs(o)
        cache = f" · FX graph cache {o.cache}" if o.cache else ""
        anchor = f"out-{slug(key)}"
        parts = [f'<details class="graph" id="{anchor}"{open_attr(not many)}><summary><span class="art">'
                 f"inductor_output_code</span> {esc(o.compile_id)} {esc(o.part)} · {f.kernels} kernels "
                 f"({f.generated_kernels} generated, {f.extern_kernels} extern) · {f.post_grad_ops} post-grad ops"
                 f"{esc(cache)}</summary>"]
        rows = []
        for i, (k, ref) in enumerate(zip(o.kernels, refs)):
            name = f'<a href="#{anchor}-k{i}">{esc(k.name)}</a>' if k.source else esc(k.name)
            rows.append(f'<tr><td>{i}<td class="kname">{swatch(ref)}{name}<td>{esc(k.kind)}'
                        f"<td>{esc(', '.join(k.modules))}<td>{esc(', '.join(k.aten_ops))}"
                        f"<td>{_INFERRED if k.provenance == 'inferred' else ''}"
                        f"{_UNKNOWN.format(why=esc(o.unknown_provenance)) if k.provenance == 'unknown' else ''}"
                        f"{esc(', '.join(k.source_nodes))}"
                        f"<td>{esc(', '.join(x.rsplit('/', 1)[-1] for x in k.user_lines))}<td>{esc(k.numel)}"
                        f"<td>{'<br>'.join(esc(b) for b in k.buffers)}")
        parts.append(f'<table class="kernels"><thead><tr><th>#<th>kernel<th>kind<th>module<th>fused ATen ops<th>source nodes'
                     f'<th>user lines<th>size<th>buffers</thead><tbody>{"".join(rows)}</tbody></table>')
        if o.post_grad_graph is not None:
            pic = self.pictures.get(key)
            parts.append(self.picture(key))
            parts.append(self.nodes(o.post_grad_graph, pic.kernels if pic else {}, f"{o.post_grad_graph.name} nodes"))
        for i, k in enumerate(o.kernels):
            if k.source:
                lines = k.source.count("\n") + 1
                parts.append(fold(f"kernel {i} · <b>{esc(k.name)}</b> · {esc(k.language or k.kind)} · {lines} lines",
                                   self.code(k.source, "cpp" if k.language == "cpp" else "python"), False, "code",
                                   f"{anchor}-k{i}"))
        parts.append(fold("wrapper (inductor_output_code)", self.code(o.wrapper), False, "code"))
        parts.append("</details>")
        return "".join(parts)


def _where(b: GraphBreak) -> str:
    return f"{b.user_frame.short()} in {b.user_frame.function}" if b.user_frame else "(unknown location)"


def _guard_table(items: Sequence[Guard], label: str, open_: bool) -> str:
    rows = "".join(f"<tr><td>{esc(x.kind)}<td>{esc(x.guard_type)}<td class=name>{esc(x.source)}"
                   f"<td class=args>{esc(guard_expression(x.guard_type, x.expression))}<td>{esc(x.user_code)}"
                   for x in items)
    return fold(f"{label} · {len(items)}", "<table><thead><tr><th>kind<th>guard<th>source<th>check<th>user code"
                 f"</thead><tbody>{rows}</tbody></table>", open_, "table")


def _guard_cost(rep: Report) -> str:
    """The guard cost: latency per compile, lambda guards, guards that grow with the model, timed calls, levers."""
    from tcinspect.analysis import guard_cost as gc

    cost = rep.guard_cost
    if cost is None:
        return ""
    graphs = {g.compile_id: g for g in rep.stages.dynamo.graphs}
    rows, lam, grow = [], [], []
    for c in cost.compiles:
        g = graphs.get(c.compile_id)
        lat = gc.latency_of(c)
        rows.append(f"<tr><td>{esc(c.compile_id)}<td>{esc(c.function)}<td class=num>{len(g.guards) if g else '-'}"
                    f"<td class=num>{'-' if lat is None else f'{lat:,.2f}'}<td class=num>{len(c.lambda_guards)}")
        lam += [f"<tr><td>{esc(c.compile_id)}<td>{esc(x.placement)}<td class=args>{esc(gc.readable(x.expression))}"
                f"<td>{esc(x.user_code)}" for x in c.lambda_guards]
        for f in gc.families(g.guards, tuple(x.expression for x in c.lambda_guards)) if g else []:
            grow.append(f"<tr><td>{esc(c.compile_id)}<td class=name>{esc(f.container)}<td class=num>{f.layers}"
                        f"<td class=num>{min(f.per_layer)}–{max(f.per_layer)}<td class=num>{f.guards}")
    out = ["<h3>Guard cost</h3><table><thead><tr><th>compile id<th>function<th>guards<th>latency us"
           f"<th>lambda guards</thead><tbody>{''.join(rows)}</tbody></table>"
           "<p>Latency: torch's own measure, one cold run of the guards when it built them.</p>"]
    if lam:
        out.append(fold(f"guards evaluated in Python (LAMBDA_GUARD) · {len(lam)}", "<table><thead><tr><th>compile id"
                         f"<th>placement<th>guard<th>user code</thead><tbody>{''.join(lam)}</tbody></table>", False,
                         "table"))
    if grow:
        out.append(fold(f"guards that grow with the model · {len(grow)}", "<table><thead><tr><th>compile id"
                         "<th>container<th>layers<th>guards per layer<th>guards</thead>"
                         f"<tbody>{''.join(grow)}</tbody></table>", True, "table"))
    per = cost.per_call
    if per is not None and per.calls:
        calls = "".join(
            f"<tr><td>{'example_inputs' if s.input_set == 0 else f'input_sets[{s.input_set - 1}]'}"
            f"<td class=num>{s.call_us:,.2f}<td class=num>{s.lookup_us:,.2f}"
            f"<td class=num>{'-' if s.before_first_op_us is None else f'{s.before_first_op_us:,.2f}'}"
            f"<td class=num>{'-' if s.before_share is None else f'{100 * s.before_share:.0f}%'}"
            f"<td>{esc(', '.join(s.compile_ids))}<td class=num>{s.entries_tried}" for s in gc.per_input_set(per.calls))
        out.append(f"<h3>Per call (torch.profiler, CPU; {per.runs} timed calls per input set, medians)</h3>"
                   "<table><thead><tr><th>input set<th>call us<th>cache lookup us<th>before first op us<th>share"
                   f"<th>ran<th>entries tried</thead><tbody>{calls}</tbody></table>")
    elif per is not None:
        out.append(f"<p>Per call: {esc(per.note or 'no call was timed')}</p>")
    for lv in gc.levers(rep):
        out.append(f"<p><b>{esc(lv.name)}</b>: <code>{esc(lv.how)}</code><br>evidence: {esc(lv.evidence)}<br>"
                   f"<b>risk</b>: {esc(lv.risk)}</p>")
    return "".join(out)


def render(rep: Report, progress: Optional[Callable[[int, int], None]] = None) -> str:
    """The whole report as one self-contained HTML page (``progress(done, total)`` as graphs are drawn)."""
    page = _Page(rep, progress)
    try:
        body = [page.header(), "<main>", _findings(rep), page.summary(), *_views(rep, "top"), page.dynamo(),
                page.guards(), page.breaks(), page.aot(), page.inductor(), *_views(rep, "after"), *_views(rep, "end")]
    finally:
        page.svgs.close()
    if page.plain_code:
        body.append(f'<p class="note">{page.plain_code} code blocks are shown without highlighting (this page '
                    f"highlights blocks of up to {HIGHLIGHT_BLOCK_CHARS:,} characters, {HIGHLIGHT_CHARS:,} in all)."
                    "</p>")
    body.append("</main>")
    body.append('<noscript><p class="note">Large tables and code blocks are inserted when opened, which needs '
                "JavaScript.</p></noscript>")
    body.append(f"<footer>Written by tcinspect{' ' + esc(rep.tcinspect_version) if rep.tcinspect_version else ''} "
                f"from a report of torch {esc(rep.torch_version or 'unknown')}. Self-contained: this page loads nothing else."
                "</footer>")
    t = rep.target
    title = f"tcinspect · {(t.path or t.model_name or 'report').rsplit('/', 1)[-1]}"
    # the policy makes "self-contained" enforced, not just intended: the browser refuses any fetch,
    # and runs no script but the page's own (by its hash)
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii")
    csp = f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-{digest}'"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{CSS}{HIGHLIGHT_CSS}</style></head><body>"
            + "".join(body) + f"<script>{SCRIPT}</script></body></html>\n")


def fragment(rep: Report) -> str:
    """The summary and each section with content, for a notebook cell (``Report._repr_html_``): the page's own
    renderers, without the graphs (drawn or listed), the page's styles or its script."""
    page = _Page(rep, draw=False)
    dyn = rep.stages.dynamo
    return "".join((_findings(rep), page.summary(), *_views(rep, "top"),
                    page.breaks() if dyn.graph_breaks or dyn.backend_failures else "", *_views(rep, "after"),
                    *_views(rep, "end")))


def _views(rep: Report, slot: str) -> list[str]:
    """The HTML sections of the registered views in ``slot`` (report/sections.py), each "" when it has nothing."""
    return [sections.implementation(s.html)(rep) for s in sections.html_views(slot)]


def _findings(rep: Report) -> str:
    """The answer first: the verdict and what needs action, costliest first (analysis/findings.py)."""
    from tcinspect.analysis import findings

    items = []
    for f in findings.findings(rep)[:findings.SHOWN]:
        torch_says = f' <span class="meta">(torch: "{esc(f.torch_says)}")</span>' if f.torch_says else ""
        cost = f" — {esc(f.cost)}" if f.cost else ""
        where = f" · at <code>{esc(f.where)}</code>" if f.where else ""
        label = "torch's hint" if f.fix_from == "torch" else "fix"
        fix = f"<br><b>{label}:</b> {esc(f.fix)}" if f.fix else ""
        detail = f' <span class="meta">→ {esc(f.detail)}</span>' if f.detail else ""
        items.append(f"<li><b>{esc(f.what)}</b>{torch_says}{cost}{where}{fix}{detail}</li>")
    body = f"<ol>{''.join(items)}</ol>" if items else '<p class="meta">nothing needs action</p>'
    return f'<section id="findings"><h2>Findings</h2><p><b>{esc(findings.verdict(rep))}</b></p>{body}</section>'


