"""Report -> plain data (dicts, lists, str, int, float, bool, None) in the saved report's layout."""

from __future__ import annotations

from typing import Any

from tcinspect import report as model
from tcinspect.plaindata import plain
from tcinspect.report import sections


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
    # the optional sections (report/sections.py), in the registry's order, each only where present: a report
    # without one stays as it was
    for section in sections.SECTIONS:
        if section.key and section.key != "timings":
            _write(out, rep, section, timings)
    if timings:
        out["timings"] = {k: v for k, v in rep.timings}
    else:
        # everything measured in seconds differs run to run: left out so that reports diff byte for byte
        out["summary"].pop("compile_time_s", None)
        for c in out["compiles"]:
            for key in [k for k in c if k.endswith("_time_s")]:
                del c[key]
    return out


def _write(out: dict[str, Any], rep: model.Report, section: sections.Section, timings: bool) -> None:
    """One optional section into ``out`` where the report has it; --no-timings leaves out what it measured."""
    value = getattr(rep, section.key)
    if value is None or value == () or (not timings and "" in section.timed):
        return
    if section.key == "parse":  # counts added since the section began are written only when set
        out["parse"] = {k: v for k, v in plain(value).items() if v or k in ("unknown_events", "lines_not_understood")}
    elif section.key == "ranks":
        out["ranks"] = [_rank_dict(r, timings) for r in rep.ranks]
        # where the ranks differ, as the report was assembled (parse.merge): written with the ranks
        out["divergence"] = plain(rep.divergence)
    elif section.key != "divergence":
        data = plain(value)
        if not timings:
            for path in section.timed:
                _drop(data, path.split("."))
        out[section.key] = data


def _drop(data: Any, path: list[str]) -> None:
    """Remove the keys ``path`` names from plain data: "x[]" walks each item of list x, "*_time_s" every key so
    ending."""
    head, rest = path[0], path[1:]
    if head.endswith("[]"):
        for item in data.get(head[:-2]) or () if isinstance(data, dict) else ():
            _drop(item, rest)
    elif not rest:
        if isinstance(data, dict):
            keys = [k for k in data if k.endswith(head[1:])] if head.startswith("*") else [head]
            for k in keys:
                data.pop(k, None)
    elif isinstance(data, dict) and isinstance(data.get(head), dict):
        _drop(data[head], rest)


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
