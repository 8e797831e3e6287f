"""Derived views of a report that several commands share (pure; no torch)."""

from __future__ import annotations

import difflib
import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tcinspect.report import (
    CompileMetrics,
    GraphBreak,
    Guard,
    Kernel,
    OutputCode,
    Report,
    break_identity,
    guards_per_compile,
)


@dataclass(frozen=True)
class DistinctBreak:
    """One distinct graph break: its first event, how often it occurred, and where."""

    first: GraphBreak
    count: int
    compile_ids: tuple[str, ...]


def distinct_breaks(rep: Report) -> tuple[DistinctBreak, ...]:
    """Graph breaks grouped by identity (type + user location), in first-seen order."""
    groups: dict[tuple[str, str, int, str], list[GraphBreak]] = {}
    for b in rep.stages.dynamo.graph_breaks:
        groups.setdefault(break_identity(b), []).append(b)
    return tuple(DistinctBreak(items[0], len(items), tuple(dict.fromkeys(b.compile_id for b in items)))
                 for items in groups.values())


def ops_per_graph(rep: Report) -> tuple[int, ...]:
    return tuple(g.graph.op_count for g in rep.stages.dynamo.graphs)


def fullgraph_ok(rep: Report) -> bool:
    """Whether the model compiles with fullgraph=True: one graph per call and no graph break."""
    return not rep.stages.dynamo.graph_breaks and rep.stages.dynamo.status == "ok"


def breaks_document(rep: Report, fullgraph: bool = False) -> dict[str, Any]:
    """The `breaks` command's YAML/JSON: a summary, then each distinct break as separate fields."""
    s = rep.summary
    summary: dict[str, Any] = {
        "graphs": s.graphs,
        "graph_breaks": s.graph_breaks,
        "distinct_graph_breaks": s.distinct_graph_breaks,
        "ops_per_graph": list(ops_per_graph(rep)),
    }
    if s.graphs_failed:
        summary["graphs_failed"] = s.graphs_failed
    if fullgraph:
        summary["compiles_with_fullgraph"] = fullgraph_ok(rep)
    rows = []
    for d in distinct_breaks(rep):
        b, loc = d.first, d.first.user_frame
        rows.append({
            "type": b.break_type,
            "gb_id": b.gb_id,
            "file": loc.file if loc else "",
            "line": loc.line if loc else 0,
            "function": loc.function if loc else "",
            "code": loc.code if loc else "",
            "count": d.count,
            "compile_ids": list(d.compile_ids),
            "reason": b.reason,
            "explanation": b.explanation,
            "hints": list(b.hints),
            "fix": b.fix,
            # a break in another file: the line of the model that led there (None otherwise)
            "model_frame": {"file": b.model_frame.file, "line": b.model_frame.line,
                            "function": b.model_frame.function, "code": b.model_frame.code}
            if b.model_frame else None,
        })
    doc = {"torch_version": rep.torch_version, "target": rep.target.path or rep.target.model_name,
           "summary": summary, "breaks": rows}
    if rep.stages.dynamo.backend_failures:  # their own rows: a frame run eagerly, not a graph break
        doc["backend_failures"] = [
            {"compile_id": f.compile_id, "function": f.function, "file": f.file, "line": f.line, "error": f.error,
             "user_file": f.user_frame.file if f.user_frame else "", "user_line": f.user_frame.line if f.user_frame else 0}
            for f in rep.stages.dynamo.backend_failures]
    return doc


@dataclass(frozen=True)
class FusionSummary:
    """For one Inductor output: ATen ops in the post-grad graph vs kernels launched."""

    compile_id: str
    part: str
    post_grad_ops: int
    kernels: int
    generated_kernels: int
    extern_kernels: int
    extern_ops: tuple[str, ...]  # the library calls (mm, addmm, convolution, ...) the wrapper makes


def fusion_summary(out: OutputCode) -> FusionSummary:
    ops = out.post_grad_graph.op_count if out.post_grad_graph is not None else 0
    externs = [k for k in out.kernels if k.kind == "extern"]
    return FusionSummary(
        compile_id=out.compile_id, part=out.part, post_grad_ops=ops, kernels=len(out.kernels),
        generated_kernels=len(out.kernels) - len(externs), extern_kernels=len(externs),
        extern_ops=tuple(dict.fromkeys(k.name for k in externs)),
    )


def all_kernels(rep: Report) -> list[tuple[OutputCode, Kernel]]:
    """Every kernel of every output, in compile and launch order."""
    return [(o, k) for o in rep.stages.inductor.outputs for k in o.kernels]


def find_kernels(rep: Report, pattern: str) -> list[tuple[OutputCode, Kernel]]:
    """Kernels named ``pattern``: an exact name first, else a glob, else a substring."""
    kernels = all_kernels(rep)
    exact = [(o, k) for o, k in kernels if k.name == pattern]
    if exact:
        return exact
    if any(ch in pattern for ch in "*?["):
        return [(o, k) for o, k in kernels if fnmatch.fnmatchcase(k.name, pattern)]
    return [(o, k) for o, k in kernels if pattern in k.name]


def nearest_kernel_names(rep: Report, pattern: str, n: int = 5) -> list[str]:
    names = list(dict.fromkeys(k.name for _, k in all_kernels(rep)))
    close = difflib.get_close_matches(pattern, names, n=n, cutoff=0.3)
    return close or names[:n]


def codegen_document(rep: Report) -> dict[str, Any]:
    """The `codegen` command's YAML/JSON: per output, its fusion summary and kernels."""
    outputs = []
    for o in rep.stages.inductor.outputs:
        f = fusion_summary(o)
        outputs.append({
            "compile_id": o.compile_id, "aot_id": o.aot_id, "part": o.part, "cache": o.cache,
            "fusion": {"post_grad_ops": f.post_grad_ops, "kernels": f.kernels, "generated_kernels": f.generated_kernels,
                       "extern_kernels": f.extern_kernels, "extern_ops": list(f.extern_ops)},
            "kernels": [{"name": k.name, "kind": k.kind, "language": k.language, "aten_ops": list(k.aten_ops),
                         "source_nodes": list(k.source_nodes), "provenance": k.provenance,
                         "dynamo_nodes": list(k.dynamo_nodes), "modules": list(k.modules),
                         "user_lines": list(k.user_lines),
                         "frames": [{"file": f.file, "line": f.line, "function": f.function} for f in k.frames],
                         "numel": k.numel,
                         "buffers": list(k.buffers), "launch": k.launch, "source": k.source} for k in o.kernels],
        })
    return {"torch_version": rep.torch_version, "device": rep.device,
            "target": rep.target.path or rep.target.model_name,
            "summary": {"outputs": len(outputs), "kernels": rep.summary.kernels}, "outputs": outputs}


#: TENSOR_MATCH checks several properties at once; the guards view lists each as the tutorials do.
_TENSOR_FIELDS = (
    ("dtype", re.compile(r"\b(torch\.\w+)")),
    ("device", re.compile(r"device=([^,)]+)")),
    ("shape", re.compile(r"size=\[([^\]]*)\]")),
    ("attribute", re.compile(r"requires_grad=(\w+)")),
)


def guard_kinds(guards: Sequence[Guard]) -> list[tuple[str, int]]:
    """Guards by kind (each guard counted once, under ``Guard.kind``), most first: they sum to ``len(guards)``.

    The one count by kind every view shows; ``guard_checks`` splits a TENSOR_MATCH into checks for the
    table rows, which are not guards and are not counted here.
    """
    counts: dict[str, int] = {}
    for g in guards:
        counts[g.kind] = counts.get(g.kind, 0) + 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def guard_checks(g: Guard) -> list[tuple[str, str]]:
    """A guard as (kind, check) pairs; a TENSOR_MATCH becomes its dtype, device, shape and requires_grad."""
    if g.guard_type != "TENSOR_MATCH":
        return [(g.kind, g.expression)]
    src = g.source or "tensor"
    out = []
    for kind, pattern in _TENSOR_FIELDS:
        m = pattern.search(g.expression.split(",", 2)[-1] if kind == "dtype" else g.expression)
        if not m:
            continue
        value = m.group(1).strip()
        text = {"dtype": f"{src}.dtype == {value}", "device": f"{src}.device == {value}",
                "shape": f"{src}.size() == [{value}]", "attribute": f"{src}.requires_grad == {value}"}[kind]
        out.append((kind, text))
    return out or [(g.kind, g.expression)]


@dataclass(frozen=True)
class FrameCompiles:
    """One Python frame Dynamo compiled: its compiles and cache entries."""

    frame: str  # the frame id
    function: str
    compiles: int
    cache_entries: int
    limit_hit: bool


def frames(rep: Report) -> list[FrameCompiles]:
    """Per frame: compiles (first + recompiles) and the cache entries they left (graphs compiled)."""
    by_frame: dict[str, list[CompileMetrics]] = {}
    for c in rep.compiles:
        by_frame.setdefault(c.compile_id.split("/")[0], []).append(c)
    graphs = {g.compile_id for g in rep.stages.dynamo.graphs}
    limit = {r.compile_id for r in rep.stages.dynamo.recompiles if r.limit_hit}
    out = []
    for frame, items in by_frame.items():
        out.append(FrameCompiles(frame, items[0].function, len(items),
                                 sum(1 for c in items if c.compile_id in graphs and c.compile_id not in limit),
                                 any(c.compile_id in limit for c in items)))
    return out


def guards_without_graph(rep: Report) -> dict[str, int]:
    """Guards of compiles that made no graph (a frame that broke before its first op), by compile id:
    counted in the summary's guards, though no graph lists them."""
    graphs = {g.compile_id for g in rep.stages.dynamo.graphs}
    return {cid: n for cid, n in guards_per_compile(rep.stages, rep.compiles).items() if n and cid not in graphs}


def _guard_cost_document(rep: Report) -> Any:
    from tcinspect.analysis import guard_cost

    return guard_cost.document(rep)


def guards_document(rep: Report) -> dict[str, Any]:
    """The `guards` command's YAML/JSON: guards per graph by kind, then recompiles."""
    graphs = []
    for g in rep.stages.dynamo.graphs:
        checks = [(kind, text, x) for x in g.guards for kind, text in guard_checks(x)]
        counts: dict[str, int] = {}
        for kind, _, _ in checks:
            counts[kind] = counts.get(kind, 0) + 1
        graphs.append({"compile_id": g.compile_id, "function": g.function, "guards": len(g.guards),
                       "guards_by_kind": dict(guard_kinds(g.guards)),
                       "checks_by_kind": dict(sorted(counts.items())),
                       "checks": [{"kind": k, "check": t, "guard_type": x.guard_type, "source": x.source,
                                   "user_code": x.user_code} for k, t, x in checks]})
    recompiles = [{"compile_id": r.compile_id, "function": r.function, "input_set": r.input_set,
                   "failed_guard": r.reasons[0] if r.reasons else "", "reasons": list(r.reasons),
                   "limit_hit": r.limit_hit, "suggestion": r.suggestion} for r in rep.stages.dynamo.recompiles]
    fr = frames(rep)
    summary = {"calls": rep.calls, "compiles": len(rep.compiles), "recompiles": rep.summary.recompiles,
               "guards": rep.summary.guards, "limit_hit": any(f.limit_hit for f in fr),
               "cache_entries": {f"{f.function} (frame {f.frame})": f.cache_entries for f in fr}}
    without = guards_without_graph(rep)
    if without:
        summary["guards_without_graph"] = without
    return {
        "target": rep.target.path or rep.target.model_name,
        "dynamic": rep.options.dynamic or "auto",
        "summary": summary,
        "graphs": graphs,
        "recompiles": recompiles,
        "input_errors": [{"input_set": e.input_set, "error": e.error} for e in rep.input_errors],
        "guard_cost": _guard_cost_document(rep),
    }


#: `codegen --bench --sort`: most in-step time first (the default when the step was profiled), slowest
#: isolated replay first, furthest below the roofline first, or as launched.
BENCH_SORTS = ("step", "time", "peak", "launch")

#: The units of the kernel benchmark's numbers, written beside them in YAML/JSON.
BENCH_UNITS = {
    "median_us": "microseconds (GPU time, median of `runs`)", "min_us": "microseconds",
    "bytes_read": "bytes", "bytes_written": "bytes", "flops": "floating-point operations",
    "gb_per_s": "GB/s (1e9 bytes per second)", "tflop_per_s": "TFLOP/s (1e12 FLOP per second)",
    "pct_of_bandwidth": "percent of the theoretical memory bandwidth",
    "pct_of_copy": "percent of the measured copy bandwidth", "pct_of_compute": "percent of the dtype's compute peak",
    "pct_of_roofline": "percent of the roof at the kernel's arithmetic intensity",
    "share": "percent of the summed kernel time", "eager_ms": "milliseconds per call",
    "compiled_ms": "milliseconds per call", "total_us": "microseconds",
    "launch_overhead_us": "microseconds (subtracted from every median_us and min_us)",
    "in_step_us": "microseconds (GPU time in the real step under torch.profiler, median over the profiled steps)",
    "wall_us": "microseconds per step", "gpu_busy_us": "microseconds per step", "gpu_busy_pct": "percent of wall_us",
    "cpu_between_launches_us": "microseconds (median CPU time between kernel launch calls)",
    "idle_us": "microseconds", "in_graph_us": "microseconds", "outside_us": "microseconds",
}


def bench_rows(rep: Report, sort: str = "time") -> list[tuple[int, Any]]:
    """The benchmarked kernels as (launch number, KernelTiming), sorted; untimed ones last."""
    rows = list(enumerate(rep.bench.kernels if rep.bench is not None else ()))
    if sort == "launch":
        return rows
    if sort == "step" and rep.bench is not None and rep.bench.step is not None:
        return sorted(rows, key=lambda r: (-r[1].in_step_us, -r[1].median_us))
    if sort == "step":  # no profiled step in this report: the isolated replay times
        sort = "time"
    timed = [r for r in rows if r[1].median_us > 0]
    untimed = [r for r in rows if r[1].median_us <= 0]
    if sort == "peak":
        timed.sort(key=lambda r: (r[1].pct_of_roofline, -r[1].median_us))
    else:
        timed.sort(key=lambda r: -r[1].median_us)
    return timed + untimed


def bench_document(rep: Report, sort: str = "time") -> dict[str, Any]:
    """`codegen --bench`'s YAML/JSON: the device, its peaks, every kernel's numbers with units, end to end."""
    from tcinspect.serialize.mapping import plain as _plain

    b = rep.bench
    assert b is not None
    return {
        "torch_version": rep.torch_version, "device": rep.device, "device_name": b.device_name,
        "target": rep.target.path or rep.target.model_name, "runs": b.runs, "method": b.method, "units": BENCH_UNITS,
        "peaks": _plain(b.peaks), "end_to_end": _plain(b.end_to_end), "total_us": b.total_us,
        "launch_overhead_us": b.launch_overhead_us, "sort": sort,
        **({"step": _plain(b.step)} if b.step is not None else {}),
        "kernels": [{"launch": n, **_plain(k)} for n, k in bench_rows(rep, sort)], "notes": list(b.notes),
    }


# ----------------------------------------------------------------------------- line / module -> kernels

def _line_spec(spec: str) -> tuple[str, int]:
    path, sep, line = spec.rpartition(":")
    if not sep or not path or not line.isdigit():
        raise ValueError(spec)
    return path, int(line)


def _same_file(reported: str, asked: str) -> bool:
    r, a = reported.replace("\\", "/"), asked.replace("\\", "/").lstrip("./")
    return r == a or r.endswith("/" + a)


def kernels_of_line(rep: Report, spec: str) -> list[tuple[OutputCode, int, Kernel]]:
    """Every kernel whose provenance names FILE:LINE in any frame (the user's line or a library line).

    FILE may be a basename or any trailing part of the path. Raises ValueError for a malformed spec.
    """
    path, line = _line_spec(spec)
    out = []
    for o in rep.stages.inductor.outputs:
        for i, k in enumerate(o.kernels):
            frames = [(f.file, f.line) for f in k.frames] + [_line_spec(x) for x in k.user_lines if ":" in x]
            if any(ln == line and _same_file(f, path) for f, ln in frames):
                out.append((o, i, k))
    return out


def kernels_of_module(rep: Report, path: str) -> list[tuple[OutputCode, int, Kernel]]:
    """Every kernel made from nodes of module PATH or a submodule of it (``model.`` in front is optional)."""
    names = {path.strip(".")}
    first, _, rest = path.partition(".")
    if first in ("model", rep.target.model_name) and rest:
        names.add(rest)
    out = []
    for o in rep.stages.inductor.outputs:
        for i, k in enumerate(o.kernels):
            if any(m == n or m.startswith(n + ".") for m in k.modules for n in names):
                out.append((o, i, k))
    return out


def kernel_time_share(rep: Report) -> dict[tuple[str, str, int], float]:
    """(compile id, part, index) -> that launch's share of the benchmarked GPU time (empty without --bench)."""
    if rep.bench is None:
        return {}
    total = sum(t.median_us for t in rep.bench.kernels if t.median_us > 0)
    if total <= 0:
        return {}
    return {(t.compile_id, t.part, t.index): t.median_us / total for t in rep.bench.kernels if t.median_us > 0}


def parse_warning(rep: Report) -> str:
    """One line on what the parser did not understand (Report.parse), or ""."""
    if rep.parse is None:
        return ""
    said = []
    if rep.parse.unknown_events:
        names = ", ".join(f"{e.name} ×{e.count}" for e in rep.parse.unknown_events)
        said.append(f"{sum(e.count for e in rep.parse.unknown_events)} structured-trace events tcinspect does not "
                    f"know ({names}): torch {rep.torch_version} may record something this tcinspect does not read")
    if rep.parse.lines_not_understood:
        said.append(f"{rep.parse.lines_not_understood} lines of the events file were not a record")
    if rep.parse.artifacts_not_understood:
        names = ", ".join(f"{e.name} ×{e.count}" for e in rep.parse.artifacts_not_understood)
        said.append(f"artifacts that could not be read ({names}): the kernels they describe are marked inferred")
    if rep.parse.payload_mismatches:
        said.append(f"{rep.parse.payload_mismatches} payloads do not match their md5 (has_payload)")
    if rep.parse.truncated_payloads:
        said.append(f"{rep.parse.truncated_payloads} payload cut short (the log ends inside it)")
    if rep.parse.files_ignored:
        said.append(f"{rep.parse.files_ignored} files that are not rank logs skipped")
    return "parse: " + "; ".join(said)
