"""Plain data -> Report: the saved report's own checks (its version, its summary and status, its
cross-references) around the builders."""

from __future__ import annotations

import dataclasses
from typing import Any

from tcinspect import report as model
from tcinspect.errors import ReportFormatError
from tcinspect.serialize.build import bad, build
from tcinspect.serialize.builders import Mismatch, builder
from tcinspect.serialize.rules import ADDED_TO_SCHEMA_1, STAGE_STATUSES


def from_dict(data: Any) -> model.Report:
    """Rebuild a Report from plain data; raises ReportFormatError naming the bad key."""
    if not isinstance(data, dict):
        raise ReportFormatError("not a tcinspect report (the top level is not a mapping)")
    if "schema_version" not in data or "stages" not in data:
        raise ReportFormatError("not a tcinspect report (no 'schema_version' or 'stages' key)")
    version = data["schema_version"]
    if version != model.SCHEMA_VERSION:
        raise ReportFormatError(
            f"report schema version {version!r} is not the one this tcinspect reads ({model.SCHEMA_VERSION})",
            "re-run `tcinspect trace` on the model file to write a current report",
        )
    fields = dict(data)
    summary = fields.get("summary")
    if "timings" not in fields and isinstance(summary, dict) and "compile_time_s" in summary:
        # only --no-timings leaves timings out, and it leaves out every *_time_s key with them
        raise ReportFormatError("missing key 'report.timings'")
    timings = fields.pop("timings", {}) or {}
    if not isinstance(timings, dict):
        raise bad("report.timings", "a mapping", timings)
    for k, v in timings.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise bad(f"report.timings.{k}", "a number", v)
    derived = {k: fields.pop(k) for k in ("summary", "status") if k in fields}
    for k in ("summary", "status"):
        if k not in derived:
            raise ReportFormatError(f"missing key 'report.{k}'")
    ranks = fields.get("ranks")
    rank_summaries = []
    if isinstance(ranks, list):  # each rank is written with its summary above its stages
        fields["ranks"] = [dict(r) for r in ranks]
        for i, r in enumerate(fields["ranks"]):
            if isinstance(r, dict):
                if "summary" not in r:
                    raise ReportFormatError(f"missing key 'report.ranks[{i}].summary'")
                rank_summaries.append((i, r.pop("summary")))
    # a report written with --no-timings has no *_time_s keys: they read back as 0
    try:
        rep: model.Report = builder(model.Report)(fields)
    except Mismatch:
        rep = build(model.Report, fields, "report")  # the same rules, with the bad key's name
    rep = dataclasses.replace(rep, timings=tuple((str(k), float(v)) for k, v in timings.items()))
    _check_consistent(rep, derived, rank_summaries)
    if rep.ranks and "divergence" not in data:
        # saved before the ranks' divergence was kept with them: found from the ranks, as merging them finds it
        from tcinspect.derived.divergence import divergences

        rep = dataclasses.replace(rep, divergence=divergences(rep.ranks))
    return rep


def _check_consistent(rep: model.Report, derived: dict[str, Any], rank_summaries: list[tuple[int, Any]]) -> None:
    """Refuse a report whose own parts disagree: its summary, status and cross-references."""
    status = "ok" if rep.ok else "failed"
    if derived["status"] != status:
        raise ReportFormatError(f"'report.status' is {derived['status']!r} but the stages say {status!r}")
    _same_summary("report.summary", derived["summary"], rep.summary)
    for i, stored in rank_summaries:
        _same_summary(f"report.ranks[{i}].summary", stored, rep.ranks[i].summary)
    for name, stages in [("report.stages", rep.stages)] + [
            (f"report.ranks[{i}].stages", r.stages) for i, r in enumerate(rep.ranks)]:
        _check_stages(name, stages)
    if rep.bench is not None:
        outputs = {(o.compile_id, o.part): o for o in rep.stages.inductor.outputs}
        for i, t in enumerate(rep.bench.kernels):
            o = outputs.get((t.compile_id, t.part))
            if o is None or t.index >= len(o.kernels) or o.kernels[t.index].name != t.name:
                raise ReportFormatError(f"'report.bench.kernels[{i}]' names kernel {t.index} ({t.name}) of "
                                        f"output {t.compile_id} {t.part}, which has no such kernel")


def _check_stages(where: str, stages: model.Stages) -> None:
    for part in ("dynamo", "aot_autograd", "inductor"):
        status = getattr(stages, part).status
        if status not in STAGE_STATUSES:
            raise ReportFormatError(f"'{where}.{part}.status' is {status!r}, not one of {', '.join(STAGE_STATUSES)}")
    for i, g in enumerate(stages.aot_autograd.graphs):
        if g.forward is not None and g.forward.nodes:
            nodes = {n.name for n in g.forward.nodes}
            missing = [n for n in g.forward.saved_for_backward if n not in nodes]
            if missing:
                raise ReportFormatError(f"'{where}.aot_autograd.graphs[{i}].forward.saved_for_backward' names "
                                        f"'{missing[0]}', which is not a node of that graph")
    aot_ids = {g.compile_id for g in stages.aot_autograd.graphs}
    for i, k in enumerate(stages.aot_autograd.user_kernels):
        if k.compile_id not in aot_ids:
            raise ReportFormatError(f"'{where}.aot_autograd.user_kernels[{i}].compile_id' is {k.compile_id!r}, "
                                    "which has no AOT graphs")


def _same_summary(where: str, stored: Any, actual: model.Summary) -> None:
    if not isinstance(stored, dict):
        raise bad(where, "a mapping", stored)
    for f in dataclasses.fields(model.Summary):
        if f.name not in stored:
            if f.name.endswith("_time_s"):
                continue  # --no-timings
            if f"Summary.{f.name}" not in ADDED_TO_SCHEMA_1:
                raise ReportFormatError(f"missing key '{where}.{f.name}'")
        # a count added to schema 1 is written only when set (graphs_failed): absent reads as its default
        value, expected = stored.get(f.name, f.default), getattr(actual, f.name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad(f"{where}.{f.name}", "a number", value)
        if abs(value - expected) > (0.0015 if isinstance(expected, float) else 0):
            raise ReportFormatError(f"'{where}.{f.name}' is {value} but the report holds {expected} "
                                    "(edited or damaged?)")
    unknown = [k for k in stored if k not in {f.name for f in dataclasses.fields(model.Summary)}]
    if unknown:
        raise ReportFormatError(f"unknown key '{where}.{unknown[0]}'")
