"""Report -> Rich renderables for the terminal. Pure: never prints, never imports torch."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Optional

from rich.console import Console, Group, RenderableType
from rich.text import Text

from tcinspect.analysis import coverage as coverage_views
from tcinspect.analysis import regions as region_views
from tcinspect.analysis.guards import guard_kinds
from tcinspect.analysis.parse_health import parse_warning
from tcinspect.render import findings as findings_view
from tcinspect.render.cudagraphs import summary_line as cudagraph_summary
from tcinspect.render.grid import Table
from tcinspect.render.parts import _clip, _limited, code_panel, node_table
from tcinspect.report import FAILED, NOT_RUN, OK, GraphBreak, Kernel, Report, sections

#: The compiler's stages `trace` shows, in order; the registered views follow them (report/sections.py).
CORE_STAGES = ("summary", "dynamo", "guards", "breaks", "aot", "inductor")
#: Stages `trace --stage` can select, in display order.
STAGES = (*CORE_STAGES, *(s.stage for s in sections.STAGE_VIEWS))

_STATUS_STYLE = {OK: "green", FAILED: "bold red", NOT_RUN: "dim"}

#: Rows a node or kernel table shows in `trace` unless --all is given: a 10,000-node graph must not
#: flood the terminal (every row is in YAML/JSON).
ROW_LIMIT = 50


def console(width: Optional[int] = None) -> Console:
    """The console the tables print through: their text as written (data such as "f32[s0, 8]" is no markup, a slice
    such as x[a:b:2] no emoji code, which Rich would show as 🅱), no highlighting, no soft wrap."""
    return Console(highlight=False, soft_wrap=False, markup=False, emoji=False, width=width)


def _status(status: str, error: str = "") -> Text:
    text = Text(status, style=_STATUS_STYLE.get(status, ""))
    if error:
        text.append(f"  {error}", style="dim" if status == NOT_RUN else "red")
    return text


def header(rep: Report) -> Text:
    t = rep.target
    what = {"model": f"{t.path} (model `{t.model_name}`)", "script": f"{t.path} (script)",
            "torch_trace": f"{t.path} (TORCH_TRACE)"}.get(t.kind, t.model_name or "callable")
    line = Text()
    line.append("tcinspect ", style="bold")
    line.append(what, style="bold cyan")
    opts = rep.options
    extras = [f"backend={opts.backend or '?'}"] + ([f"mode={opts.mode}"] if opts.mode else []) + \
        (["fullgraph"] if opts.fullgraph else []) + ([f"dynamic={opts.dynamic}"] if opts.dynamic else [])
    # an older torch's TORCH_TRACE log states no version (its compilation_metrics has no pytorch_version)
    line.append(f"  torch {rep.torch_version or 'unknown'} · {rep.device} · {' '.join(extras)}", style="dim")
    return line


def summary(rep: Report) -> RenderableType:
    s = rep.summary
    table = Table(title="Summary", title_justify="left", show_header=False, box=None, padding=(0, 2))
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_column(style="dim")
    if rep.coverage is not None:  # how much of the model runs compiled, first (PyTorch CI's figures)
        cov = rep.coverage
        table.add_row("calls captured", str(cov.calls_captured),
                      f"ops Dynamo put into {cov.unique_graphs} graph{'s' if cov.unique_graphs != 1 else ''}")
        table.add_row(Text("ran eagerly", style="bold red" if cov.fallbacks_to_eager else "bold"),
                      str(cov.fallbacks_to_eager), "frames Dynamo gave up on (fallbacks to eager)"
                      + ("" if cov.source == "counters" else "; from the log's compile records"))
        runtime = coverage_views.runtime_line(cov.runtime)
        if runtime is not None:
            table.add_row("compiled ops", *runtime)
    table.add_row("graphs", str(s.graphs), "FX graphs Dynamo captured (one per compiled frame)")
    if s.graphs_failed:
        table.add_row("graphs failed", str(s.graphs_failed), "the backend failed on them: those frames ran eagerly")
    table.add_row("graph breaks", str(s.graph_breaks), f"{s.distinct_graph_breaks} distinct")
    table.add_row("recompiles", str(s.recompiles), "")
    table.add_row("guards", str(s.guards), "")
    table.add_row("AOT graphs", str(s.aot_graphs), "joint / forward / backward / inference")
    table.add_row("kernels", str(s.kernels), "launched by Inductor's wrappers")
    table.add_row("compile time", f"{s.compile_time_s:.2f} s", compile_time_note(rep))
    table.add_row("FX graph cache", f"{s.cache_hits} hit / {s.cache_misses} miss", "")
    if rep.cudagraphs is not None:
        table.add_row("CUDA graphs", str(sum(1 for g in rep.cudagraphs.graphs if g.status == "recorded")),
                      cudagraph_summary(rep.cudagraphs))
    regions_row = region_views.summary_line(rep)
    if regions_row is not None:
        table.add_row("regions", *regions_row)
    stages = Table(show_header=False, box=None, padding=(0, 2))
    stages.add_column(style="bold")
    stages.add_column()
    for name, st in (("dynamo", rep.stages.dynamo), ("aot_autograd", rep.stages.aot_autograd),
                     ("inductor", rep.stages.inductor)):
        stages.add_row(name, _status(st.status, st.error))
    parts: list[RenderableType] = [table, stages]
    for f in coverage_views.eager_frames(rep):
        where = f" at {f.user_frame.short()} `{f.user_frame.code}`" if f.user_frame else ""
        parts.append(Text(f"ran eagerly: {f.function} ({f.file.rsplit('/', 1)[-1]}:{f.line}): torch gave up{where}: "
                          f"{f.reason or f.fail_type} (tcinspect breaks)", style="bold red"))
    if rep.error:
        parts.append(Text(f"capture incomplete: {rep.error}", style="bold red"))
    if rep.parse is not None:
        parts.append(Text(parse_warning(rep), style="yellow"))
    return Group(*parts)


#: Phase groups as the summary's compile-time row names them (the compile-time view has the long titles).
_GROUP_NAMES = {"dynamo": "Dynamo", "aot_autograd": "AOTAutograd", "graph_passes": "graph passes",
                "lowering": "Inductor lowering", "scheduling": "Inductor scheduling", "codegen": "Inductor codegen",
                "compile": "C++/Triton compile", "autotune": "autotuning", "cache": "caches", "inductor": "Inductor",
                "other": "other"}


def compile_time_note(rep: Report) -> str:
    """The compile-time row's note: forward + backward, then where the time went (torch's spans, else its metrics)."""
    backward = backward_compile_s(rep)
    forward = sum(c.entire_frame_compile_time_s for c in rep.compiles)
    # the backward is compiled at the first .backward(), outside Dynamo's compile of the frame (bwd_compilation_metrics)
    split = f"forward {forward:.2f} s + backward {backward:.2f} s" if backward else f"forward {forward:.2f} s"
    return f"{split} · where it went: {_where_it_went(rep)}"


def _where_it_went(rep: Report) -> str:
    from tcinspect.analysis.compile_time import run_groups

    ct = rep.compile_time
    groups = run_groups(ct) if ct is not None and any(t.root is not None for t in ct.compiles) else {}
    if groups:  # exclusive time per phase group, adding up to the total
        ranked = sorted(groups.items(), key=lambda kv: -kv[1])
        shown = ", ".join(f"{_GROUP_NAMES.get(g, g)} {sec:.2f} s" for g, sec in ranked[:3])
        rest = sum(sec for _, sec in ranked[3:])
        return shown + (f", the rest {rest:.2f} s" if rest >= 0.005 else "")
    # no span tree (a report written before it): compilation_metrics' backend and Inductor times
    backend = sum(c.backend_compile_time_s for c in rep.compiles)
    forward = sum(c.inductor_compile_time_s for c in rep.compiles)
    backward = backward_inductor_s(rep)
    text = f"backend {backend:.2f} s (Inductor {forward:.2f} s of it)"
    if backward:
        text += f", backward's Inductor {backward:.2f} s"
    if not forward + backward and any(c.aot_autograd_cache == "hit" for c in rep.compiles):
        text += " (AOTAutograd cache hit: no Inductor compile)"
    return text


def backward_compile_s(rep: Report) -> float:
    """The backward's compile time (bwd_compilation_metrics), which compilation_metrics leaves out."""
    ct = rep.compile_time
    return sum(t.total_s for t in ct.compiles if t.part == "backward") if ct is not None else 0.0


def backward_inductor_s(rep: Report) -> float:
    """Inductor's time on backward graphs (bwd_compilation_metrics), which compilation_metrics leaves out."""
    ct = rep.compile_time
    return sum(t.inductor_s for t in ct.compiles if t.part == "backward") if ct is not None else 0.0


def dynamo(rep: Report, code: bool = False, limit: Optional[int] = ROW_LIMIT) -> RenderableType:
    st = rep.stages.dynamo
    parts: list[RenderableType] = [Text.assemble(("Dynamo  ", "bold magenta"), _status(st.status, st.error))]
    for g in st.graphs:
        loc = f"{g.file.rsplit('/', 1)[-1]}:{g.line}" if g.file else ""
        title = f"dynamo_output_graph {g.compile_id} · {g.function} ({loc}) · {g.graph.op_count} ops"
        if g.backend_error:
            title += " · backend failed, ran eagerly"
        parts.append(node_table(g.graph, title, limit))
        if g.backend_error:
            parts.append(Text(f"  backend {rep.options.backend} failed on this graph: {g.backend_error}", style="red"))
        if g.example_inputs:
            parts.append(Text(f"  handed to backend {rep.options.backend}: {', '.join(g.example_inputs)}", style="dim"))
        if code:
            parts.append(code_panel(g.graph.code, f"code · {g.compile_id}"))
    if st.backend_failures:
        parts.append(backend_failures_table(rep))
    if st.recompiles:
        parts.append(recompiles_table(rep))
    return Group(*parts)


def input_name(i: int, script: bool = False) -> str:
    """Which call made a compile: example_inputs, input_sets[k] (a script: its call k + 1); ? unknown."""
    if i < 0:
        return "?"
    if script:
        return f"call {i + 1}"
    return "example_inputs" if i == 0 else f"input_sets[{i - 1}]"


def recompiles_table(rep: Report) -> Table:
    """Each recompile: the call that made it, the guard that failed (torch's words) and what to do."""
    script = rep.target.kind == "script"
    t = Table(title="Recompiles", title_justify="left", header_style="bold")
    t.add_column("compile id")
    t.add_column("function")
    t.add_column("triggered by")
    t.add_column("failed guard (torch's words)", style="cyan")
    t.add_column("suggestion")
    for r in rep.stages.dynamo.recompiles:
        failed = r.reasons[0] if r.reasons else "(torch gave no reason)"
        note = Text(r.suggestion)
        if r.limit_hit:
            note = Text("recompile limit hit: ran eagerly. ", style="bold red") + note
        t.add_row(r.compile_id, r.function, input_name(r.input_set, script), failed, note)
    return t


#: Guard kinds `trace` lists one by one; the rest (Dynamo's bookkeeping on types, object ids and
#: attributes) are counted, and listed in full in YAML/JSON.
USER_GUARD_KINDS = ("tensor", "shape", "symbolic_shape", "value", "global_state")


def guard_expression(guard_type: str, expression: str) -> str:
    """A guard's check, shortened where PyTorch's text is mostly noise (TENSOR_MATCH's key set)."""
    if guard_type == "TENSOR_MATCH":
        return re.sub(r"DispatchKeySet\([^)]*\),\s*", "", expression)
    return expression


def guards(rep: Report, all_kinds: bool = False, limit: Optional[int] = None) -> RenderableType:
    parts: list[RenderableType] = [Text("Guards", style="bold magenta")]
    for g in rep.stages.dynamo.graphs:
        kinds = ", ".join(f"{k} {v}" for k, v in guard_kinds(g.guards))
        t = Table(title=f"guards {g.compile_id} · {g.function} · {len(g.guards)} ({kinds})", title_justify="left",
                  header_style="bold")
        t.add_column("kind")
        t.add_column("guard")
        t.add_column("source", style="cyan")
        t.add_column("check", style="dim")
        shown = [x for x in g.guards if all_kinds or x.kind in USER_GUARD_KINDS]
        for x in _limited(shown, limit, t):
            t.add_row(x.kind, x.guard_type, _clip(x.source, 50), _clip(guard_expression(x.guard_type, x.expression), 110))
        parts.append(t)
        if len(shown) < len(g.guards):
            parts.append(Text(f"  + {len(g.guards) - len(shown)} type / identity / attribute guards (all are in YAML/JSON)",
                              style="dim"))
    parts.extend(_guards_without_graph(rep))
    return Group(*parts)


def _guards_without_graph(rep: Report) -> list[RenderableType]:
    from tcinspect.analysis.frames import guards_without_graph

    without = guards_without_graph(rep)
    if not without:
        return []
    listed = ", ".join(f"{cid}: {n}" for cid, n in without.items())
    return [Text(f"  + {sum(without.values())} guards of compiles that made no graph ({listed})", style="dim")]


def backend_failures_table(rep: Report) -> Table:
    """Graphs the backend failed on (torch's "WON'T CONVERT"): each frame ran eagerly. Not graph breaks."""
    t = Table(title="Graphs the backend failed on (those frames ran eagerly; not graph breaks)", title_justify="left",
              header_style="bold")
    t.add_column("compile id")
    t.add_column("frame")
    t.add_column("user line", style="cyan")
    t.add_column("torch's error", style="red")
    for f in rep.stages.dynamo.backend_failures:
        where = f.user_frame.short() if f.user_frame else "?"
        frame = f"{f.function} ({f.file.rsplit('/', 1)[-1]}:{f.line})" if f.file else f.function
        t.add_row(f.compile_id, frame, where, _clip(f.error, 100))
    return t


def breaks_table(items: Iterable[GraphBreak], title: str = "Graph breaks") -> Table:
    t = Table(title=title, title_justify="left", header_style="bold")
    t.add_column("compile id")
    t.add_column("where", style="cyan")
    t.add_column("type")
    t.add_column("reason", style="dim")
    for b in items:
        where = f"{b.user_frame.short()} in {b.user_frame.function}" if b.user_frame else "?"
        kind = b.break_type + (f" ({b.gb_id})" if b.gb_id else "")
        t.add_row(b.compile_id, where, kind, _clip(b.explanation, 100))
    return t


def breaks(rep: Report) -> RenderableType:
    items = rep.stages.dynamo.graph_breaks
    if not items:
        return Text("Graph breaks: none", style="bold green")
    return breaks_table(items)


def aot(rep: Report, code: bool = False, limit: Optional[int] = ROW_LIMIT) -> RenderableType:
    st = rep.stages.aot_autograd
    parts: list[RenderableType] = [Text.assemble(("AOTAutograd  ", "bold magenta"), _status(st.status, st.error))]
    for g in st.graphs:
        for label, graph in (("aot_forward_graph", g.forward), ("aot_backward_graph", g.backward),
                             ("aot_inference_graph", g.inference)):
            if graph is None:
                continue
            title = f"{label} {g.compile_id} · {graph.op_count} ops"
            if graph.saved_for_backward:
                saved = graph.saved_for_backward
                names = ", ".join(saved if limit is None or len(saved) <= limit else
                                  (*saved[:limit], f"… {len(saved) - limit:,} more"))
                title += f" · saved for backward (★): {names}"
            parts.append(node_table(graph, title, limit))
            if code:
                parts.append(code_panel(graph.code, f"{label} {g.compile_id}"))
        if code and g.joint is not None:
            parts.append(code_panel(g.joint.code, f"aot_joint_graph {g.compile_id}"))
    if st.user_kernels or st.custom_ops:
        from tcinspect.render.extensions import user_kernels

        parts.append(user_kernels(rep, code))
    return Group(*parts)


def compact_lines(user_lines: Sequence[str]) -> str:
    """["a/tiny.py:11", "a/tiny.py:12", "b.py:3"] -> "tiny.py:11,12 b.py:3" (basenames, lines grouped by file)."""
    by_file: dict[str, list[str]] = {}
    for x in user_lines:
        path, _, line = x.rpartition(":")
        by_file.setdefault(path.rsplit("/", 1)[-1], []).append(line)
    return " ".join(f"{f}:{','.join(dict.fromkeys(ls))}" for f, ls in by_file.items())


def kernel_table(kernels: Sequence[Kernel], title: str, buffers: bool = False, limit: Optional[int] = None,
                 unknown_why: str = "") -> Table:
    """Kernels in launch order; line numbers first so they survive a narrow terminal. ``unknown_why``: why the
    kernels marked ``?`` have no stated provenance, and its fix (OutputCode.unknown_provenance)."""
    t = Table(title=title, title_justify="left", header_style="bold")
    t.add_column("#", justify="right", style="dim", no_wrap=True)
    t.add_column("lines", overflow="fold")
    t.add_column("kernel", style="cyan", overflow="fold")
    t.add_column("kind", no_wrap=True)
    # every column but the module one (empty where provenance names no module) must fit 120 columns,
    # so the long ones fold instead of pushing "size" and "buffers" off the edge
    modules = any(k.modules for k in kernels)
    if modules:
        t.add_column("module", style="dim", overflow="fold")
    t.add_column("fused ATen ops", overflow="fold")
    t.add_column("source nodes", style="dim", overflow="fold")
    t.add_column("size", justify="right", no_wrap=True, min_width=len("size"))
    if buffers:
        t.add_column("buffers", style="dim", overflow="fold")
    inferred = unknown = 0
    for i, k in enumerate(_limited(kernels, limit, t)):
        nodes = _clip(", ".join(k.source_nodes), 40)
        if k.provenance == "inferred":
            inferred += 1
            nodes = f"~ {nodes}" if nodes else "~"
        elif k.provenance == "unknown":
            unknown += 1
            nodes = "?"
        row = [str(i), compact_lines(k.user_lines), k.name, k.kind]
        if modules:
            row.append(_clip(", ".join(k.modules), 40))
        row += [_clip(", ".join(k.aten_ops), 60), nodes, k.numel]
        if buffers:
            row.append("\n".join(k.buffers))
        t.add_row(*row)
    captions = []
    if unknown:
        captions.append(f"? {unknown} kernel{'s' if unknown != 1 else ''} of unknown provenance: "
                        + (unknown_why or "Inductor stated no node mapping for them"))
    if inferred:
        captions.append(f"~ {inferred} kernel{'s' if inferred != 1 else ''} inferred from the wrapper's comments "
                        "(a report saved by an earlier tcinspect): Inductor's provenance tracking stated no node mapping")
    if captions:
        t.caption = "\n".join(captions)
        t.caption_justify = "left"
    return t


def inductor(rep: Report, code: bool = False, limit: Optional[int] = ROW_LIMIT) -> RenderableType:
    st = rep.stages.inductor
    parts: list[RenderableType] = [Text.assemble(("Inductor  ", "bold magenta"), _status(st.status, st.error))]
    for o in st.outputs:
        cache = f" · FX graph cache {o.cache}" if o.cache else ""
        parts.append(kernel_table(o.kernels, f"inductor_output_code {o.compile_id} {o.part} · {len(o.kernels)} kernels{cache}",
                                  limit=limit, unknown_why=o.unknown_provenance))
        if code:
            for k in o.kernels:
                if k.source:
                    parts.append(code_panel(k.source, k.name, "cpp" if k.language == "cpp" else "python"))
    return Group(*parts)


def trace(rep: Report, stages: Optional[Sequence[str]] = None, code: bool = False,
          limit: Optional[int] = ROW_LIMIT, findings: bool = True) -> RenderableType:
    """The whole `trace` view: header, the findings (with the summary), the summary, then each selected stage
    (``limit`` rows a table; None: all)."""
    views = {s.stage: s for s in sections.STAGE_VIEWS}
    # unasked, a view shows where it has something to say (its section is present, or its own rule says so)
    chosen = [s for s in STAGES if (s in stages if stages is not None else s not in views or _shown(rep, views[s]))]
    parts: list[RenderableType] = [header(rep)]
    if findings and not rep.ranks and (stages is None or "summary" in stages):
        # the answer first: a distributed report's block leads the ranks' overview instead (cli/trace.py)
        parts += [Text(""), findings_view.block(rep)]
    builders = {
        "summary": lambda: summary(rep),
        "dynamo": lambda: dynamo(rep, code, limit),
        "guards": lambda: guards(rep, limit=limit),
        "breaks": lambda: breaks(rep),
        "aot": lambda: aot(rep, code, limit),
        "inductor": lambda: inductor(rep, code, limit),
    }
    for s in chosen:
        parts.append(Text(""))
        parts.append(builders[s]() if s in builders else sections.implementation(views[s].text)(rep, limit))
        if s == "aot" and rep.passes:
            from tcinspect.render.extensions import passes

            parts.extend([Text(""), passes(rep)])
    return Group(*parts)


def _shown(rep: Report, view: sections.Section) -> bool:
    if view.shown:
        shown: bool = sections.implementation(view.shown)(rep)
        return shown
    return getattr(rep, view.key) is not None
