"""Report -> one self-contained HTML page: a summary, then every stage, with the graphs drawn in SVG.

Pure: returns a string, never prints, never imports torch. The page loads nothing from anywhere:
its styles and its one small script are inline, and its Content-Security-Policy forbids any request.
Graph pictures come from Graphviz (``render.svg``); without it, from tcinspect's own layered layout, and the
page says so.
"""

from __future__ import annotations

import base64
import hashlib
import html
import os
import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

from tcinspect.analysis import coverage as coverage_views
from tcinspect.analysis.breaks import distinct_breaks
from tcinspect.analysis.codegen import fusion_summary
from tcinspect.errors import GraphvizError, GraphvizTimeout
from tcinspect.render import dot
from tcinspect.render.layered import LAYERED_MAX_NODES, layered
from tcinspect.render.picture import KernelRef, Picture, kernel_refs, pictures
from tcinspect.render.svg import DOT_NODES, inline
from tcinspect.render.table import USER_GUARD_KINDS, compile_time_note, guard_expression
from tcinspect.report import (
    FAILED,
    NOT_RUN,
    OK,
    Graph,
    GraphBreak,
    Guard,
    Node,
    OutputCode,
    Report,
    guards_per_compile,
    sections,
)

#: Tables with more rows, and pictures with more nodes, start collapsed: a 10,000-node page must
#: open at once and stay readable.
OPEN_ROWS = 200
OPEN_PICTURE_NODES = 150
#: Nodes drawn on one page in all. Each graph is laid out alone, in parallel, so a page affords
#: more than one standalone picture (``dot.MAX_PICTURE_NODES``); large graphs are drawn by
#: ``layered.layered``, and every picture above OPEN_PICTURE_NODES stays inert text until opened.
MAX_PAGE_NODES = 12000
#: Bodies of closed blocks larger than this many bytes are inserted only when opened.
LAZY_BYTES = 4_000
#: Characters of code highlighted per page, and per block: Pygments takes about a second per
#: 100,000 characters of FX graph code on 2 CPU cores. Code past either limit is shown plain.
HIGHLIGHT_CHARS = 200_000
HIGHLIGHT_BLOCK_CHARS = 40_000

_GRAPHVIZ_MISSING = ("Drawn by tcinspect's own layered layout: Graphviz's <code>dot</code> was not found. Install "
                     "Graphviz (<code>apt-get install graphviz</code> or <code>brew install graphviz</code>) for "
                     "dot's layout.")


_INFERRED = '<i title="inferred from the wrapper: Inductor stated no node mapping">~</i> '
_UNKNOWN = '<i title="{why}">?</i>'


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text)


def _status(status: str, error: str = "") -> str:
    css = {OK: "ok", FAILED: "failed", NOT_RUN: "notrun"}.get(status, "notrun")
    out = f'<span class="badge {css}">{_e(status)}</span>'
    return out + (f' <span class="err">{_e(error)}</span>' if error else "")


def _tensor(n: Node) -> str:
    if not n.dtype:
        return ""
    return "sym" if n.dtype == "sym" else f"{n.dtype}[{', '.join(n.shape)}]"


def _open(flag: bool) -> str:
    return " open" if flag else ""


_SCRIPT_END = re.compile(r"</(?=script)", re.I)


def _fold(summary: str, body: str, open_: bool, cls: str, anchor: str = "") -> str:
    """A <details> block. A large body of a closed block is kept as inert text until it is opened.

    Parsing a 10,000-node page's tables and code as HTML took most of its load time; kept as text,
    they cost almost nothing until someone opens them (the page's one script inserts them then).
    """
    ident = f' id="{anchor}"' if anchor else ""
    if not open_ and len(body) > LAZY_BYTES:
        # our markup never holds "</script" (every text is escaped), so this only guards the invariant
        body = f'<script type="text/html">{_SCRIPT_END.sub("&lt;/", body)}</script>'
    return f'<details class="{cls}"{ident}{_open(open_)}><summary>{summary}</summary>{body}</details>'


def _swatch(ref: Optional[KernelRef]) -> str:
    if ref is None:
        return ""
    css = "sw ext" if ref.extern else "sw"
    return f'<span class="{css}" style="background:{ref.colour}"></span>'


class _Page:
    """Builds the page; keeps the per-page budgets (highlighted code, drawn nodes)."""

    def __init__(self, rep: Report, progress: Optional[Callable[[int, int], None]] = None, draw: bool = True) -> None:
        self.rep = rep
        self.highlight_left = HIGHLIGHT_CHARS
        self.plain_code = 0
        self.pictures = {p.key: p for p in pictures(rep)} if draw else {}
        self.svgs = _draw(list(self.pictures.values()), progress)

    # ------------------------------------------------------------------ pieces

    def code(self, text: str, language: str = "python") -> str:
        """A code block, highlighted while the page's budget lasts."""
        text = text.rstrip("\n")
        if len(text) <= min(self.highlight_left, HIGHLIGHT_BLOCK_CHARS):
            self.highlight_left -= len(text)
            from pygments import highlight  # Rich's dependency; imported only when a page is written
            from pygments.formatters import HtmlFormatter
            from pygments.lexers import CppLexer, PythonLexer

            lexer = CppLexer() if language == "cpp" else PythonLexer()
            return f'<pre class="hl">{highlight(text, lexer, HtmlFormatter(nowrap=True))}</pre>'
        self.plain_code += 1
        return f"<pre>{_e(text)}</pre>"

    def picture(self, key: str) -> str:
        """A graph's SVG (or why there is none), with its colour key."""
        pic = self.pictures.get(key)
        if pic is None:
            return ""
        drawing, notes = self.svgs.get(key, ("", ()))
        n = len(pic.graph.nodes)
        body = "".join(f'<p class="note">{note}</p>' for note in notes)
        if drawing:
            body += f'{_legend(pic)}<div class="svg">{drawing}</div>'
        return _fold(f"picture · {n:,} nodes", body, n <= OPEN_PICTURE_NODES, "picture")

    def nodes(self, graph: Graph, kernels: Mapping[str, KernelRef] = {}, label: str = "nodes") -> str:
        saved = set(graph.saved_for_backward)
        head = "<tr><th>#<th>op<th>name<th>target<th>args<th>tensor<th>source" + ("<th>kernel" if kernels else "")
        rows = []
        for i, n in enumerate(graph.nodes):
            star = ' <span title="saved for backward">★</span>' if n.name in saved else ""
            src = f'<td title="{_e(n.source.code)}">{_e(n.source.short())}' if n.source else "<td>"
            row = (f"<tr><td>{i}<td>{_e(n.op)}<td class=name>{_e(n.name)}{star}<td>{_e(n.target)}"
                   f"<td class=args>{_e(n.args)}<td class=t>{_e(_tensor(n))}{src}")
            if kernels:
                ref = kernels.get(n.name)
                row += f"<td class=t>{_swatch(ref)}{_e(ref.name) if ref else ''}"
            rows.append(row)
        count = len(graph.nodes)
        return _fold(f"{label} · {count:,}", f'<table class="nodes"><thead>{head}</thead><tbody>{"".join(rows)}'
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
        return f'<header><h1>tcinspect <span class="target">{_e(what)}</span></h1><p class="meta">{_e(meta)}</p>' \
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
        cards = "".join(f'<div class="stat" data-key="{k}"><b>{_e(v)}</b><span>{_e(label)}</span></div>'
                        for k, v, label in stats)
        st = rep.stages
        stages = "".join(f"<li><b>{name}</b> {_status(x.status, x.error)}</li>" for name, x in (
            ("dynamo", st.dynamo), ("aot_autograd", st.aot_autograd), ("inductor", st.inductor)))
        parts = [f'<section id="summary"><h2>Summary</h2><div class="stats">{cards}</div>'
                 f'<ul class="stages">{stages}</ul>']
        if rep.error:
            parts.append(f'<p class="alert">capture incomplete: {_e(rep.error)}</p>')
        for f in coverage_views.eager_frames(rep):
            where = f" at {_e(f.user_frame.short())} <code>{_e(f.user_frame.code)}</code>" if f.user_frame else ""
            parts.append(f'<p class="alert">ran eagerly: {_e(f.function)} ({_e(f.file.rsplit("/", 1)[-1])}:{f.line}): '
                         f'torch gave up{where}: {_e(f.reason or f.fail_type)}</p>')
        if cov is not None and cov.runtime is not None and cov.runtime.islands:
            rows = "".join(f"<tr><td>{_e(i.file.rsplit('/', 1)[-1])}:{i.line}<td>{_e(i.function)}<td><code>{_e(i.code)}"
                           f"</code><td class=num>{i.ops}<td class=num>{i.time_us:.1f}" for i in cov.runtime.islands)
            parts.append(_fold(f"eager islands · {len(cov.runtime.islands)} (ATen ops the measured call ran eagerly)",
                               "<table><thead><tr><th>where<th>function<th>line<th>ops<th>µs</thead>"
                               f"<tbody>{rows}</tbody></table>", True, "table"))
        for e in rep.input_errors:
            parts.append(f'<p class="alert">input set {e.input_set} raised: {_e(e.error)}</p>')
        if rep.compiles:
            guards = guards_per_compile(rep.stages, rep.compiles)  # the summary's definition, per compile
            rows = "".join(
                f"<tr><td>{_e(c.compile_id)}<td>{_e(c.function)}<td>{_e(c.file.rsplit('/', 1)[-1])}:{c.line}"
                f"<td class=num>{c.entire_frame_compile_time_s:.3f}<td class=num>{c.backend_compile_time_s:.3f}"
                f"<td class=num>{c.inductor_compile_time_s:.3f}<td class=num>{guards.get(c.compile_id, 0)}"
                f"<td class=num>{c.graph_op_count}<td>{_e(c.aot_autograd_cache)}<td>{_e(c.fail_reason or c.fail_type)}"
                for c in rep.compiles)
            parts.append(_fold(f"compiles · {len(rep.compiles)}", "<table><thead><tr><th>compile id<th>function"
                               "<th>where<th>frame s<th>backend s<th>inductor s<th>guards<th>ops<th>AOT cache"
                               f"<th>failure</thead><tbody>{rows}</tbody></table>", len(rep.compiles) <= 20, "table"))
        if rep.timings:
            items = " · ".join(f"{_e(k)} {v:.2f} s" for k, v in rep.timings)
            parts.append(f'<p class="meta">wall times: {items}</p>')
        parts.append("</section>")
        return "".join(parts)

    def dynamo(self) -> str:
        st = self.rep.stages.dynamo
        parts = [f'<section id="dynamo"><h2>Dynamo graphs {_status(st.status, st.error)}</h2>']
        if not st.graphs:
            parts.append('<p class="none">No graphs.</p>')
        many = len(st.graphs) > 20
        for g in st.graphs:
            pic = self.pictures.get(g.compile_id)
            loc = f" ({g.file.rsplit('/', 1)[-1]}:{g.line})" if g.file else ""
            parts.append(
                f'<details class="graph" id="dynamo-{_slug(g.compile_id)}"{_open(not many)}><summary>'
                f'<span class="art">dynamo_output_graph</span> {_e(g.compile_id)} · {_e(g.function)}{_e(loc)} · '
                f"{g.graph.op_count} ops · {len(g.guards)} guards</summary>")
            if g.backend_error:
                parts.append(f'<p class="breaknote">backend {_e(self.rep.options.backend)} failed on this graph, '
                             f'which ran eagerly: {_e(g.backend_error)}</p>')
            for b in pic.breaks if pic else ():
                parts.append(f'<p class="breaknote">ends in a graph break: {_e(_where(b))} — {_e(b.break_type)}'
                             f' (<a href="#breaks">details</a>)</p>')
            parts.append(self.picture(g.compile_id))
            parts.append(self.nodes(g.graph, pic.kernels if pic else {}))
            parts.append(_fold("code", self.code(g.graph.code), False, "code"))
            parts.append("</details>")
        if st.recompiles:
            rows = "".join(f"<tr><td>{_e(r.compile_id)}<td>{_e(r.function)}<td>{r.input_set}"
                           f"<td>{'<br>'.join(_e(x) for x in r.reasons) or '(PyTorch gave no reason)'}"
                           f"<td>{'limit hit' if r.limit_hit else ''}<td>{_e(r.suggestion)}"
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
            parts.append(f'<details class="graph"{_open(len(graphs) <= 20)}><summary>guards {_e(g.compile_id)} · '
                         f"{_e(g.function)} · {len(g.guards)}</summary>")
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
            rows = "".join(f"<tr><td>{_e(f.compile_id)}<td>{_e(f.function)}<td>"
                           f"{_e(f'{f.user_frame.short()} in {f.user_frame.function}' if f.user_frame else '?')}"
                           f"<td>{_e(f.error)}" for f in failures)
            parts.append(f'<h3>Graphs the backend failed on · {len(failures)} (ran eagerly; not graph breaks)</h3>'
                         f"<table><thead><tr><th>compile id<th>frame<th>user line<th>torch's error</thead>"
                         f"<tbody>{rows}</tbody></table>")
        if not items:
            parts.append('<p class="none">None: every frame compiled into one graph.</p>')
        for d in items:
            b = d.first
            kind = b.break_type + (f" ({b.gb_id})" if b.gb_id else "")
            parts.append(f'<details class="break"{_open(len(items) <= 20)}><summary><b>{_e(_where(b))}</b> · '
                         f"{_e(kind)} · {d.count}× in {_e(', '.join(d.compile_ids))}</summary>")
            if b.context:
                line = b.user_frame.line if b.user_frame else -1
                rows = "".join(f'<span class="{"hit" if n == line else "ln"}"><i>{n}</i>{_e(text)}\n</span>'
                               for n, text in b.context)
                parts.append(f'<pre class="context">{rows}</pre>')
            elif b.user_frame and b.user_frame.code:
                parts.append(f'<pre class="context"><span class="hit">{_e(b.user_frame.code)}</span></pre>')
            facts = [("reason", b.reason), ("explanation", b.explanation), ("fix", b.fix)]
            if b.model_frame is not None:
                m = b.model_frame
                facts.insert(0, ("reached from", f"{m.file}:{m.line} in {m.function}" + (f"  {m.code}" if m.code else "")))
            dl = "".join(f"<dt>{k}<dd>{_e(v)}" for k, v in facts if v)
            if b.hints:
                dl += "<dt>hints<dd><ul>" + "".join(f"<li>{_e(h)}" for h in b.hints) + "</ul>"
            parts.append(f"<dl>{dl}</dl>")
            if b.raw and not (b.explanation or b.reason):
                parts.append(f"<pre>{_e(b.raw)}</pre>")
            parts.append("</details>")
        parts.append("</section>")
        return "".join(parts)

    def aot(self) -> str:
        st = self.rep.stages.aot_autograd
        parts = [f'<section id="aot"><h2>AOT graphs {_status(st.status, st.error)}</h2>']
        if not st.graphs:
            parts.append('<p class="none">No AOTAutograd graphs.</p>')
        for g in st.graphs:
            for label, graph in (("aot_forward_graph", g.forward), ("aot_backward_graph", g.backward),
                                 ("aot_inference_graph", g.inference), ("aot_joint_graph", g.joint)):
                if graph is None:
                    continue
                saved = f" · saved for backward (★): {', '.join(graph.saved_for_backward)}" \
                    if graph.saved_for_backward else ""
                parts.append(f'<details class="graph"{_open(len(st.graphs) <= 10 and label != "aot_joint_graph")}>'
                             f'<summary><span class="art">{label}</span> {_e(g.compile_id)} · {graph.op_count} ops'
                             f"{_e(saved)}</summary>")
                if label != "aot_joint_graph":
                    parts.append(self.nodes(graph))
                parts.append(_fold("code", self.code(graph.code), False, "code"))
                parts.append("</details>")
        parts.append("</section>")
        return "".join(parts)

    def inductor(self) -> str:
        st = self.rep.stages.inductor
        parts = [f'<section id="inductor"><h2>Inductor kernels {_status(st.status, st.error)}</h2>']
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
        anchor = f"out-{_slug(key)}"
        parts = [f'<details class="graph" id="{anchor}"{_open(not many)}><summary><span class="art">'
                 f"inductor_output_code</span> {_e(o.compile_id)} {_e(o.part)} · {f.kernels} kernels "
                 f"({f.generated_kernels} generated, {f.extern_kernels} extern) · {f.post_grad_ops} post-grad ops"
                 f"{_e(cache)}</summary>"]
        rows = []
        for i, (k, ref) in enumerate(zip(o.kernels, refs)):
            name = f'<a href="#{anchor}-k{i}">{_e(k.name)}</a>' if k.source else _e(k.name)
            rows.append(f'<tr><td>{i}<td class="kname">{_swatch(ref)}{name}<td>{_e(k.kind)}'
                        f"<td>{_e(', '.join(k.modules))}<td>{_e(', '.join(k.aten_ops))}"
                        f"<td>{_INFERRED if k.provenance == 'inferred' else ''}"
                        f"{_UNKNOWN.format(why=_e(o.unknown_provenance)) if k.provenance == 'unknown' else ''}"
                        f"{_e(', '.join(k.source_nodes))}"
                        f"<td>{_e(', '.join(x.rsplit('/', 1)[-1] for x in k.user_lines))}<td>{_e(k.numel)}"
                        f"<td>{'<br>'.join(_e(b) for b in k.buffers)}")
        parts.append(f'<table class="kernels"><thead><tr><th>#<th>kernel<th>kind<th>module<th>fused ATen ops<th>source nodes'
                     f'<th>user lines<th>size<th>buffers</thead><tbody>{"".join(rows)}</tbody></table>')
        if o.post_grad_graph is not None:
            pic = self.pictures.get(key)
            parts.append(self.picture(key))
            parts.append(self.nodes(o.post_grad_graph, pic.kernels if pic else {}, f"{o.post_grad_graph.name} nodes"))
        for i, k in enumerate(o.kernels):
            if k.source:
                lines = k.source.count("\n") + 1
                parts.append(_fold(f"kernel {i} · <b>{_e(k.name)}</b> · {_e(k.language or k.kind)} · {lines} lines",
                                   self.code(k.source, "cpp" if k.language == "cpp" else "python"), False, "code",
                                   f"{anchor}-k{i}"))
        parts.append(_fold("wrapper (inductor_output_code)", self.code(o.wrapper), False, "code"))
        parts.append("</details>")
        return "".join(parts)


def _where(b: GraphBreak) -> str:
    return f"{b.user_frame.short()} in {b.user_frame.function}" if b.user_frame else "(unknown location)"


def _guard_table(items: Sequence[Guard], label: str, open_: bool) -> str:
    rows = "".join(f"<tr><td>{_e(x.kind)}<td>{_e(x.guard_type)}<td class=name>{_e(x.source)}"
                   f"<td class=args>{_e(guard_expression(x.guard_type, x.expression))}<td>{_e(x.user_code)}"
                   for x in items)
    return _fold(f"{label} · {len(items)}", "<table><thead><tr><th>kind<th>guard<th>source<th>check<th>user code"
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
        rows.append(f"<tr><td>{_e(c.compile_id)}<td>{_e(c.function)}<td class=num>{len(g.guards) if g else '-'}"
                    f"<td class=num>{'-' if lat is None else f'{lat:,.2f}'}<td class=num>{len(c.lambda_guards)}")
        lam += [f"<tr><td>{_e(c.compile_id)}<td>{_e(x.placement)}<td class=args>{_e(gc.readable(x.expression))}"
                f"<td>{_e(x.user_code)}" for x in c.lambda_guards]
        for f in gc.families(g.guards, tuple(x.expression for x in c.lambda_guards)) if g else []:
            grow.append(f"<tr><td>{_e(c.compile_id)}<td class=name>{_e(f.container)}<td class=num>{f.layers}"
                        f"<td class=num>{min(f.per_layer)}–{max(f.per_layer)}<td class=num>{f.guards}")
    out = ["<h3>Guard cost</h3><table><thead><tr><th>compile id<th>function<th>guards<th>latency us"
           f"<th>lambda guards</thead><tbody>{''.join(rows)}</tbody></table>"
           "<p>Latency: torch's own measure, one cold run of the guards when it built them.</p>"]
    if lam:
        out.append(_fold(f"guards evaluated in Python (LAMBDA_GUARD) · {len(lam)}", "<table><thead><tr><th>compile id"
                         f"<th>placement<th>guard<th>user code</thead><tbody>{''.join(lam)}</tbody></table>", False,
                         "table"))
    if grow:
        out.append(_fold(f"guards that grow with the model · {len(grow)}", "<table><thead><tr><th>compile id"
                         "<th>container<th>layers<th>guards per layer<th>guards</thead>"
                         f"<tbody>{''.join(grow)}</tbody></table>", True, "table"))
    per = cost.per_call
    if per is not None and per.calls:
        calls = "".join(
            f"<tr><td>{'example_inputs' if s.input_set == 0 else f'input_sets[{s.input_set - 1}]'}"
            f"<td class=num>{s.call_us:,.2f}<td class=num>{s.lookup_us:,.2f}"
            f"<td class=num>{'-' if s.before_first_op_us is None else f'{s.before_first_op_us:,.2f}'}"
            f"<td class=num>{'-' if s.before_share is None else f'{100 * s.before_share:.0f}%'}"
            f"<td>{_e(', '.join(s.compile_ids))}<td class=num>{s.entries_tried}" for s in gc.per_input_set(per.calls))
        out.append(f"<h3>Per call (torch.profiler, CPU; {per.runs} timed calls per input set, medians)</h3>"
                   "<table><thead><tr><th>input set<th>call us<th>cache lookup us<th>before first op us<th>share"
                   f"<th>ran<th>entries tried</thead><tbody>{calls}</tbody></table>")
    elif per is not None:
        out.append(f"<p>Per call: {_e(per.note or 'no call was timed')}</p>")
    for lv in gc.levers(rep):
        out.append(f"<p><b>{_e(lv.name)}</b>: <code>{_e(lv.how)}</code><br>evidence: {_e(lv.evidence)}<br>"
                   f"<b>risk</b>: {_e(lv.risk)}</p>")
    return "".join(out)


def _legend(pic: Picture) -> str:
    refs = sorted({r.index: r for r in pic.kernels.values()}.values(), key=lambda r: r.index)
    keys = "".join(f'<li>{_swatch(r)}{"extern " if r.extern else ""}{_e(r.name)}</li>' for r in refs)
    shapes = '<li><span class="sw in"></span>graph input</li>'
    if refs:
        shapes += ('<li><span class="sw ext" style="background:#d4d4d4"></span>extern kernel (library call)</li>'
                   '<li><span class="sw none"></span>no kernel recorded (views, constants, or not traced to one)</li>')
    if pic.breaks:
        shapes += '<li><span class="sw brk"></span>graph break</li>'
    return f'<ul class="legend">{keys}{shapes}</ul>'


def _draw(pics: Sequence[Picture], progress: Optional[Callable[[int, int], None]] = None
          ) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Each picture's inline SVG and notes, within the page's node budget.

    Graphs of up to ``svg.DOT_NODES`` nodes go to Graphviz (in parallel, each for at most
    ``dot.DOT_FALLBACK_S``); larger ones, and any dot did not finish in time, are laid out by
    ``layered.layered``, linear in their size: a page is written in bounded time, never an error.
    ``progress(done, total)`` is called as pictures are finished.
    """
    jobs: list[tuple[Picture, str]] = []
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    left = MAX_PAGE_NODES
    done = 0
    tick = progress or (lambda d, t: None)
    for pic in pics:
        if left <= 0:
            out[pic.key] = ("", (f"Not drawn: this page draws at most {MAX_PAGE_NODES:,} nodes in all. "
                                 f"Draw it alone with <code>tcinspect trace REPORT --format svg --graph "
                                 f"{_e(pic.key)} -o graph.svg</code>.",))
            done += 1
            continue
        if len(pic.graph.nodes) > DOT_NODES:
            limit = min(left, LAYERED_MAX_NODES)
            why = "" if limit == LAYERED_MAX_NODES else f"at most {MAX_PAGE_NODES:,} nodes are drawn per page"
            drawing, drawn, note = layered(pic, limit, why)
            left -= drawn
            out[pic.key] = (inline(drawing), (f"Cut short: {_e(note)}.",) if note else ())
            done += 1
            tick(done, len(pics))
            continue
        source = dot.dot_source([pic], legend=False, budget=left)
        left -= source.drawn
        notes = tuple(f"Cut short: {_e(n)}." for n in source.notes)
        out[pic.key] = ("", notes)
        jobs.append((pic, source.text))

    def lay_out(job: tuple[Picture, str]) -> tuple[str, str]:
        try:
            return inline(dot.run_dot(job[1], timeout=dot.DOT_FALLBACK_S)), ""
        except GraphvizTimeout:
            return inline(layered(job[0])[0]), ""
        except GraphvizError as exc:
            if dot.DOT_MISSING in exc.cause:  # a page is always drawn: tcinspect's own layout instead
                return inline(layered(job[0])[0]), exc.cause
            return "", exc.cause

    workers = max(1, min(len(jobs), os.cpu_count() or 1, 8))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for (pic, _), (drawing, error) in zip(jobs, pool.map(lay_out, jobs)):
            notes = out[pic.key][1]
            if error:
                notes += (_GRAPHVIZ_MISSING if dot.DOT_MISSING in error else f"Not drawn: {_e(error)}.",)
            out[pic.key] = (drawing, notes)
            done += 1
            tick(done, len(pics))
    return out


_CSS = """
:root{--fg:#1d232b;--dim:#5f6b7a;--line:#d8dee6;--bg:#fff;--soft:#f5f7fa;--accent:#6a3fb5}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--fg);background:var(--bg)}
header{padding:16px 24px 8px;border-bottom:1px solid var(--line);position:sticky;top:0;background:var(--bg);z-index:2}
h1{margin:0;font-size:20px}h1 .target{color:var(--accent)}
h2{font-size:18px;margin:28px 0 10px;padding-bottom:4px;border-bottom:2px solid var(--line)}h3{font-size:15px}
main{padding:0 24px 48px;max-width:1600px}
nav a{margin-right:14px;color:var(--accent);text-decoration:none;font-weight:600}
.meta{color:var(--dim);margin:2px 0 6px}
.stats{display:grid;grid-template-columns:repeat(auto-fill,minmax(128px,1fr));gap:10px}
.stat{border:1px solid var(--line);border-radius:8px;padding:10px 12px;background:var(--soft)}
.stat b{display:block;font-size:24px;font-variant-numeric:tabular-nums}.stat span{color:var(--dim);font-size:12px}
.stages{list-style:none;padding:0;display:flex;gap:18px;flex-wrap:wrap}
.badge{display:inline-block;padding:0 8px;border-radius:10px;font-size:12px;font-weight:600;vertical-align:middle}
.badge.ok{background:#dcf5e3;color:#17692f}.badge.failed{background:#fde0e0;color:#a11}.badge.notrun{background:#eceff3;color:var(--dim)}
.err,.alert{color:#a11}.alert{font-weight:600}.none{color:var(--dim)}
details{margin:6px 0}details.table{overflow-x:auto}[id]{scroll-margin-top:120px}details>summary{cursor:pointer;padding:4px 2px}
details.graph,details.break{border:1px solid var(--line);border-radius:8px;padding:4px 12px;margin:10px 0}
details.graph>summary,details.break>summary{font-weight:600}
.art{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;color:var(--accent);font-weight:600}
table{border-collapse:collapse;margin:6px 0;font-size:13px}
th,td{border-bottom:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
th{background:var(--soft);position:sticky;top:0}
td.name,td.kname{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;white-space:nowrap}
td.args{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;min-width:220px;max-width:520px;overflow-wrap:break-word;color:var(--dim)}
td.t{white-space:nowrap}a{color:var(--accent)}
td.num{text-align:right;font-variant-numeric:tabular-nums}
pre{font:12px/1.4 ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;background:var(--soft);padding:8px 10px;border-radius:6px;overflow:auto;max-height:560px}
pre.context i{display:inline-block;width:3.5em;color:var(--dim);font-style:normal}
pre.context .hit{background:#fde0e0;display:block;font-weight:600}pre.context .ln{display:block}
.sw{display:inline-block;width:12px;height:12px;border:1px solid #555;border-radius:3px;margin-right:6px;vertical-align:-1px}
.sw.ext{border-width:3px;border-style:double;border-radius:0}.sw.in{background:#eef1f5}
.sw.none{border-style:dashed;background:#fff}.sw.brk{background:#d62728;border-color:#d62728}
.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:4px 16px;font-size:12px}
.svg text{font-family:Helvetica,Arial,"Liberation Sans",sans-serif}
.svg{overflow:auto;max-height:85vh;border:1px solid var(--line);border-radius:6px;padding:6px}
.note{color:#7a5b00;background:#fff7d6;padding:4px 8px;border-radius:4px}
.breaknote{color:#a11;margin:4px 0}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px}dt{font-weight:600;color:var(--dim)}dd{margin:0}
.ctrow p{margin:8px 0 2px}svg.ct{display:block;background:#f6f6f6}.ctlegend{font-size:12px;color:var(--dim)}
.ctkey{margin-right:12px;white-space:nowrap}.ctfind .fix{color:#276738}
footer{color:var(--dim);font-size:12px;padding:16px 24px;border-top:1px solid var(--line)}
"""


#: The page's one script: inserts a closed block's deferred body when it is opened, and opens the
#: blocks around a linked anchor (a kernel's code from the kernel table).
_SCRIPT = """
document.addEventListener("toggle", function (e) {
  var d = e.target;
  if (d.tagName !== "DETAILS" || !d.open) return;
  var s = d.querySelector(":scope > script[type='text/html']");
  if (s) { s.insertAdjacentHTML("afterend", s.textContent); s.remove(); }
}, true);
function openTarget() {
  var id = decodeURIComponent(location.hash.slice(1));
  for (var t = id && document.getElementById(id); t; t = t.parentElement) if (t.tagName === "DETAILS") t.open = true;
}
window.addEventListener("hashchange", openTarget);
openTarget();
"""


def _pygments_css() -> str:
    from pygments.formatters import HtmlFormatter

    # only the token rules: the formatter's global `pre` and line-number rules would restyle the page
    return "\n".join(line for line in HtmlFormatter().get_style_defs(".hl").splitlines() if line.startswith(".hl "))


def render(rep: Report, progress: Optional[Callable[[int, int], None]] = None) -> str:
    """The whole report as one self-contained HTML page (``progress(done, total)`` as graphs are drawn)."""
    page = _Page(rep, progress)
    body = [page.header(), "<main>", _findings(rep), page.summary(), *_views(rep, "top"), page.dynamo(),
            page.guards(), page.breaks(), page.aot(), page.inductor(), *_views(rep, "after"), *_views(rep, "end")]
    if page.plain_code:
        body.append(f'<p class="note">{page.plain_code} code blocks are shown without highlighting (this page '
                    f"highlights blocks of up to {HIGHLIGHT_BLOCK_CHARS:,} characters, {HIGHLIGHT_CHARS:,} in all)."
                    "</p>")
    body.append("</main>")
    body.append('<noscript><p class="note">Large tables and code blocks are inserted when opened, which needs '
                "JavaScript.</p></noscript>")
    body.append(f"<footer>Written by tcinspect{' ' + _e(rep.tcinspect_version) if rep.tcinspect_version else ''} "
                f"from a report of torch {_e(rep.torch_version or 'unknown')}. Self-contained: this page loads nothing else."
                "</footer>")
    t = rep.target
    title = f"tcinspect · {(t.path or t.model_name or 'report').rsplit('/', 1)[-1]}"
    # the policy makes "self-contained" enforced, not just intended: the browser refuses any fetch,
    # and runs no script but the page's own (by its hash)
    digest = base64.b64encode(hashlib.sha256(_SCRIPT.encode("utf-8")).digest()).decode("ascii")
    csp = f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-{digest}'"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_e(title)}</title><style>{_CSS}{_pygments_css()}</style></head><body>"
            + "".join(body) + f"<script>{_SCRIPT}</script></body></html>\n")


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
        torch_says = f' <span class="meta">(torch: "{_e(f.torch_says)}")</span>' if f.torch_says else ""
        cost = f" — {_e(f.cost)}" if f.cost else ""
        where = f" · at <code>{_e(f.where)}</code>" if f.where else ""
        label = "torch's hint" if f.fix_from == "torch" else "fix"
        fix = f"<br><b>{label}:</b> {_e(f.fix)}" if f.fix else ""
        detail = f' <span class="meta">→ {_e(f.detail)}</span>' if f.detail else ""
        items.append(f"<li><b>{_e(f.what)}</b>{torch_says}{cost}{where}{fix}{detail}</li>")
    body = f"<ol>{''.join(items)}</ol>" if items else '<p class="meta">nothing needs action</p>'
    return f'<section id="findings"><h2>Findings</h2><p><b>{_e(findings.verdict(rep))}</b></p>{body}</section>'


