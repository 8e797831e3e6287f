"""Report -> plain data (dicts, lists, str, int, float, bool, None) in the saved report's layout."""

from __future__ import annotations

from typing import Any

from tcinspect import report as model
from tcinspect.plaindata import plain as plain  # the one conversion (analysis uses it too)


def to_dict(rep: model.Report, *, timings: bool = True) -> dict[str, Any]:
    """The report as plain data, with ``summary`` near the top and ``stages`` below it."""
    out: dict[str, Any] = {
        "schema_version": rep.schema_version,
        "tcinspect_version": rep.tcinspect_version,
        "torch_version": rep.torch_version,
        "device": rep.device,
        "target": plain(rep.target),
        "options": plain(rep.options),
        "status": "ok" if rep.ok else "failed",
        "error": rep.error,
        "calls": rep.calls,
        "input_errors": plain(rep.input_errors),
        "summary": _summary(rep.summary),
        "stages": plain(rep.stages),
        "compiles": plain(rep.compiles),
    }
    # sections only some commands fill (--pass, verify, export): absent elsewhere, so reports stay as they were
    if rep.passes:
        out["passes"] = plain(rep.passes)
    if rep.verification is not None:
        out["verification"] = plain(rep.verification)
    if rep.exports:
        out["exports"] = plain(rep.exports)
    if rep.bench is not None:  # only `codegen --bench` has one; other reports stay as they were
        out["bench"] = plain(rep.bench)
    if rep.parse is not None:  # only when the parser met what it did not understand
        # counts added since the section began are written only when set, so earlier parse sections stay as they were
        out["parse"] = {k: v for k, v in plain(rep.parse).items() if v or k in ("unknown_events", "lines_not_understood")}
    if rep.ranks:  # only a distributed run (--nproc) has them; other reports stay as they were
        out["ranks"] = [_rank_dict(r, timings) for r in rep.ranks]
        # where the ranks differ, as the report was assembled (parse.merge)
        out["divergence"] = plain(rep.divergence)
    if rep.mixed_runs:  # only rank logs of more than one run: other reports stay as they were
        out["mixed_runs"] = plain(rep.mixed_runs)
    if rep.graph_execution_order:  # only a run that recorded it (record_and_log_graph_execution_order)
        out["graph_execution_order"] = list(rep.graph_execution_order)
    if rep.compile_time is not None and timings:  # reports from before it have none, and stay as they were
        out["compile_time"] = plain(rep.compile_time)
    if rep.failure is not None:  # only a failed run's: ok reports stay as they were
        out["failure"] = plain(rep.failure)
    if rep.cudagraphs is not None:  # only a run with CUDA graphs on (--mode reduce-overhead)
        cudagraphs = plain(rep.cudagraphs)
        if not timings:
            for g in cudagraphs["graphs"]:
                g.pop("cudagraphify_time_s", None)
                for r in g["recordings"]:
                    r.pop("record_time_s", None)
        out["cudagraphs"] = cudagraphs
    if rep.shapes is not None:  # only a run whose torch logged dynamic-shape events: others stay as they were
        out["shapes"] = plain(rep.shapes)
    if rep.guard_cost is not None and timings:  # measured, like compile_time: --no-timings leaves it out
        out["guard_cost"] = plain(rep.guard_cost)
    if rep.regions is not None:  # only a run that compiled regions has it; other reports stay as they were
        out["regions"] = plain(rep.regions)
        if not timings:
            for r in out["regions"]["regions"]:
                for key in [k for k in r if k.endswith("_time_s")]:
                    del r[key]
    if rep.memory is not None:  # only a run with a backward graph has one; other reports stay as they were
        out["memory"] = plain(rep.memory)
    if rep.coverage is not None:  # reports saved before coverage was recorded have none
        out["coverage"] = plain(rep.coverage)
        runtime = out["coverage"].get("runtime")
        if runtime is not None and not timings:  # measured times differ run to run
            for holder in (runtime, *runtime["islands"]):
                for key in [k for k in holder if k.endswith("time_us")]:
                    del holder[key]
    if timings:
        out["timings"] = {k: v for k, v in rep.timings}
    else:
        # everything measured in seconds differs run to run: left out so that reports diff byte for byte
        out["summary"].pop("compile_time_s", None)
        for c in out["compiles"]:
            for key in [k for k in c if k.endswith("_time_s")]:
                del c[key]
    return out


def _summary(s: model.Summary) -> dict[str, Any]:
    out: dict[str, Any] = plain(s)
    if not out.get("graphs_failed"):  # written only when some graph failed, so other reports stay as they were
        out.pop("graphs_failed", None)
    for key in ("calls_captured", "unique_graphs", "fallbacks_to_eager"):
        if out.get(key, 0) < 0:  # a report without coverage (saved before it, a rank): left out, not -1
            out.pop(key, None)
    return out


def _rank_dict(r: model.RankReport, timings: bool) -> dict[str, Any]:
    """One rank, laid out like a report: its summary above its stages."""
    out = plain(r)
    out = {**{k: out.pop(k) for k in ("rank", "status", "error", "where", "device", "calls", "input_errors")},
           "summary": _summary(r.summary), **out}
    if out.get("compile_time") is None or not timings:  # written only when present, like a report's
        out.pop("compile_time", None)
    if out.get("origin") is None:  # only a rank read from a TORCH_TRACE log has one
        out.pop("origin", None)
    if not out.get("graph_execution_order"):  # only a rank that recorded it: other reports stay as they were
        out.pop("graph_execution_order", None)
    if not timings:
        out["summary"].pop("compile_time_s", None)
        for c in out["compiles"]:
            for key in [k for k in c if k.endswith("_time_s")]:
                del c[key]
    return out
