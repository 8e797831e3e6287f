"""Report <-> plain dicts, YAML and JSON: the saved-report format. No torch import."""

from __future__ import annotations

import dataclasses
import gc
import json
import re
import typing
import weakref
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, Union

import yaml

from tcinspect import report as model
from tcinspect.errors import ReportFormatError

FORMATS = ("yaml", "json")


# ----------------------------------------------------------------------------- to dicts


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def to_dict(rep: model.Report, *, timings: bool = True) -> dict[str, Any]:
    """The report as plain data, with ``summary`` near the top and ``stages`` below it."""
    out: dict[str, Any] = {
        "schema_version": rep.schema_version,
        "tcinspect_version": rep.tcinspect_version,
        "torch_version": rep.torch_version,
        "device": rep.device,
        "target": _plain(rep.target),
        "options": _plain(rep.options),
        "status": "ok" if rep.ok else "failed",
        "error": rep.error,
        "calls": rep.calls,
        "input_errors": _plain(rep.input_errors),
        "summary": _summary(rep.summary),
        "stages": _plain(rep.stages),
        "compiles": _plain(rep.compiles),
    }
    # sections only some commands fill (--pass, verify, export): absent elsewhere, so reports stay as they were
    if rep.passes:
        out["passes"] = _plain(rep.passes)
    if rep.verification is not None:
        out["verification"] = _plain(rep.verification)
    if rep.exports:
        out["exports"] = _plain(rep.exports)
    if rep.bench is not None:  # only `codegen --bench` has one; other reports stay as they were
        out["bench"] = _plain(rep.bench)
    if rep.parse is not None:  # only when the parser met what it did not understand
        # counts added since the section began are written only when set, so earlier parse sections stay as they were
        out["parse"] = {k: v for k, v in _plain(rep.parse).items() if v or k in ("unknown_events", "lines_not_understood")}
    if rep.ranks:  # only a distributed run (--nproc) has them; other reports stay as they were
        from tcinspect.analysis.divergence import divergences, serialize_divergence

        out["ranks"] = [_rank_dict(r, timings) for r in rep.ranks]
        out["divergence"] = [serialize_divergence(d) for d in divergences(rep.ranks)]
    if rep.compile_time is not None and timings:  # reports from before it have none, and stay as they were
        out["compile_time"] = _plain(rep.compile_time)
    if rep.failure is not None:  # only a failed run's: ok reports stay as they were
        out["failure"] = _plain(rep.failure)
    if rep.cudagraphs is not None:  # only a run with CUDA graphs on (--mode reduce-overhead)
        cudagraphs = _plain(rep.cudagraphs)
        if not timings:
            for g in cudagraphs["graphs"]:
                g.pop("cudagraphify_time_s", None)
                for r in g["recordings"]:
                    r.pop("record_time_s", None)
        out["cudagraphs"] = cudagraphs
    if rep.shapes is not None:  # only a run whose torch logged dynamic-shape events: others stay as they were
        out["shapes"] = _plain(rep.shapes)
    if rep.guard_cost is not None and timings:  # measured, like compile_time: --no-timings leaves it out
        out["guard_cost"] = _plain(rep.guard_cost)
    if rep.regions is not None:  # only a run that compiled regions has it; other reports stay as they were
        out["regions"] = _plain(rep.regions)
        if not timings:
            for r in out["regions"]["regions"]:
                for key in [k for k in r if k.endswith("_time_s")]:
                    del r[key]
    if rep.memory is not None:  # only a run with a backward graph has one; other reports stay as they were
        out["memory"] = _plain(rep.memory)
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
    out: dict[str, Any] = _plain(s)
    if not out.get("graphs_failed"):  # written only when some graph failed, so other reports stay as they were
        out.pop("graphs_failed", None)
    return out


def _rank_dict(r: model.RankReport, timings: bool) -> dict[str, Any]:
    """One rank, laid out like a report: its summary above its stages."""
    out = _plain(r)
    out = {**{k: out.pop(k) for k in ("rank", "status", "error", "where", "device", "calls", "input_errors")},
           "summary": _summary(r.summary), **out}
    if out.get("compile_time") is None or not timings:  # written only when present, like a report's
        out.pop("compile_time", None)
    if not timings:
        out["summary"].pop("compile_time_s", None)
        for c in out["compiles"]:
            for key in [k for k in c if k.endswith("_time_s")]:
                del c[key]
    return out


# ----------------------------------------------------------------------------- from dicts


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, vars(model))


def _build(tp: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if origin is Union:  # Optional[X]
        present = [a for a in typing.get_args(tp) if a is not type(None)]
        return None if value is None else _build(present[0], value, where)
    if origin is tuple:
        if not isinstance(value, list):
            raise _bad(where, "a list", value)
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_build(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
        return tuple(_build(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, value)))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise _bad(where, "a mapping", value)
        hints = _hints(tp)
        kwargs = {}
        names = set()
        for f in dataclasses.fields(tp):
            names.add(f.name)
            if f.name in value:
                kwargs[f.name] = _build(hints[f.name], value[f.name], f"{where}.{f.name}")
            elif not _may_be_absent(tp, f):  # every other key is always written: its absence is damage
                raise ReportFormatError(f"missing key '{where}.{f.name}'")
        unknown = [k for k in value if k not in names]
        if unknown:
            raise ReportFormatError(f"unknown key '{where}.{unknown[0]}'")
        return tp(**kwargs)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _bad(where, "a number", value)
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _bad(where, "an integer", value)
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise _bad(where, "true or false", value)
        return value
    if tp is str:
        if not isinstance(value, str):
            raise _bad(where, "a string", value)
        return value
    raise _bad(where, str(tp), value)


#: Report sections written only when present (see to_dict); every other field is always written.
OPTIONAL_SECTIONS = ("passes", "verification", "exports", "bench", "parse", "ranks", "compile_time", "timings",
                     "failure", "cudagraphs", "shapes", "guard_cost", "regions", "memory")
#: Fields added to schema 1 after reports of it were saved: those reports lack them, which is no damage.
#: A field added from now on goes here (or SCHEMA_VERSION is bumped); any other missing key is refused.
ADDED_TO_SCHEMA_1 = frozenset({
    "Kernel.provenance", "Kernel.provenance_key", "Kernel.dynamo_nodes", "Kernel.modules", "Kernel.frames",
    "Options.try_mode", "KernelTiming.in_step_us", "KernelTiming.in_step_kernels", "KernelBench.step",
    "RankReport.compile_time", "TensorCheck.fp64_rmse", "TensorCheck.eager_fp64_rmse", "Verification.reference",
    # the parse section's later counts are written only when set (to_dict)
    "ParseHealth.artifacts_not_understood", "ParseHealth.payload_mismatches", "ParseHealth.truncated_payloads",
    "ParseHealth.files_ignored",
    "OutputCode.collective_schedule",
    "Options.per_call",
    "CacheLookup.key", "CacheLookup.components", "CacheLookup.cost_s", "CacheLookup.changed",
    "CacheLookup.compared_with", "CacheLookup.remote",
    "ParseHealth.ignored_files", "RankReport.log",
    "DynamoGraph.backend_error", "DynamoStage.backend_failures", "Summary.graphs_failed",
    "GraphBreak.model_frame",
    "Options.measure_memory",
})
STAGE_STATUSES = (model.OK, model.FAILED, model.NOT_RUN)


def _may_be_absent(tp: type, f: dataclasses.Field[Any]) -> bool:
    # *_time_s keys are left out by --no-timings and read back as 0
    return ((tp is model.Report and f.name in OPTIONAL_SECTIONS) or f"{tp.__name__}.{f.name}" in ADDED_TO_SCHEMA_1
            or f.name.endswith("_time_s"))


class _Mismatch(Exception):
    """The fast builder met a value it does not take; ``_build`` then names the bad key."""


_BUILDERS: dict[Any, Any] = {}


def _builder(tp: Any) -> Any:
    """A function ``value -> object`` that builds ``tp`` as ``_build`` does, or raises _Mismatch.

    ``_build`` checks each value through ``typing`` introspection and formats its path as it goes:
    over 370,000 calls (0.45 s) for a 16-layer Llama report. This generates, once per class, a
    function with the checks written out, that fills the frozen instance's ``__dict__`` directly. It
    accepts only what ``_build`` accepts and builds equal objects (tests compare the two); on anything
    else it raises _Mismatch and the caller runs ``_build`` for its message.
    """
    found = _BUILDERS.get(tp)
    if found is None:
        if tp in _MAKING:  # a class that holds itself (a phase tree): its builder is looked up at call time
            return lambda v: _BUILDERS[tp](v)
        _MAKING.add(tp)
        try:
            found = _BUILDERS[tp] = _make_builder(tp)
        finally:
            _MAKING.discard(tp)
    return found


_MAKING: set[Any] = set()


def _make_builder(tp: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin is Union:
        inner = _builder(next(a for a in typing.get_args(tp) if a is not type(None)))
        return lambda v: None if v is None else inner(v)
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            if args[0] is str:
                def strings(v: Any) -> Any:
                    if v.__class__ is not list or any(x.__class__ is not str for x in v):
                        raise _Mismatch
                    return tuple(v)
                return strings
            item = _builder(args[0])

            def items(v: Any) -> Any:
                if v.__class__ is not list:
                    raise _Mismatch
                return tuple([item(x) for x in v])
            return items
        parts = [_builder(a) for a in args]

        def fixed(v: Any) -> Any:
            if v.__class__ is not list:
                raise _Mismatch
            return tuple([b(x) for b, x in zip(parts, v)])
        return fixed
    if tp is str or tp is int or tp is bool:
        def scalar(v: Any) -> Any:
            if v.__class__ is not tp:
                raise _Mismatch
            return v
        return scalar
    if tp is float:
        def number(v: Any) -> Any:
            if v.__class__ is not float and v.__class__ is not int:
                raise _Mismatch
            return float(v)
        return number
    if (not isinstance(tp, type) or not dataclasses.is_dataclass(tp) or hasattr(tp, "__post_init__")
            or hasattr(tp, "__slots__")):
        def slow(v: Any) -> Any:
            raise _Mismatch
        return slow
    # the class's own function: scalars checked inline, other fields through their builders
    hints = _hints(tp)
    env: dict[str, Any] = {"_Mismatch": _Mismatch, "_new": object.__new__, "_tp": tp, "dict": dict,
                           "str": str, "int": int, "bool": bool, "float": float}
    env["_names"] = frozenset(f.name for f in dataclasses.fields(tp))
    body = ["def build(v):", "    if v.__class__ is not dict: raise _Mismatch",
            "    if not v.keys() <= _names: raise _Mismatch",  # an unknown key (``_build`` names it)
            "    o = _new(_tp)", "    d = o.__dict__"]
    for i, f in enumerate(dataclasses.fields(tp)):
        name, hint = repr(f.name), hints[f.name]
        if f.default is not dataclasses.MISSING:
            env[f"_d{i}"] = f.default
            missing = f"d[{name}] = _d{i}"
        elif f.default_factory is not dataclasses.MISSING:
            env[f"_d{i}"] = f.default_factory
            missing = f"d[{name}] = _d{i}()"
        else:
            missing = "raise _Mismatch"
        if not _may_be_absent(tp, f):  # always written: its absence is damage (``_build`` names it)
            missing = "raise _Mismatch"
        body.append(f"    if {name} in v:")
        body.append(f"        x = v[{name}]")
        if hint in (str, int, bool):
            body.append(f"        if x.__class__ is not {hint.__name__}: raise _Mismatch")
            body.append(f"        d[{name}] = x")
        elif hint is float:
            body.append("        if x.__class__ is not float and x.__class__ is not int: raise _Mismatch")
            body.append(f"        d[{name}] = float(x)")
        else:
            env[f"_b{i}"] = _builder(hint)
            body.append(f"        d[{name}] = _b{i}(x)")
        body.append("    else:")
        body.append(f"        {missing}")
    body.append("    return o")
    exec("\n".join(body), env)  # source built above from the report's own field names
    return env["build"]


def _bad(where: str, expected: str, value: Any) -> ReportFormatError:
    return ReportFormatError(f"'{where}' should be {expected}, not {type(value).__name__}")


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
        raise _bad("report.timings", "a mapping", timings)
    for k, v in timings.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise _bad(f"report.timings.{k}", "a number", v)
    derived = {k: fields.pop(k) for k in ("summary", "status", "divergence") if k in fields}
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
        rep: model.Report = _builder(model.Report)(fields)
    except _Mismatch:
        rep = _build(model.Report, fields, "report")  # the same rules, with the bad key's name
    rep = dataclasses.replace(rep, timings=tuple((str(k), float(v)) for k, v in timings.items()))
    _check_consistent(rep, derived, rank_summaries)
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
        raise _bad(where, "a mapping", stored)
    for f in dataclasses.fields(model.Summary):
        if f.name not in stored:
            if f.name.endswith("_time_s"):
                continue  # --no-timings
            if f"Summary.{f.name}" not in ADDED_TO_SCHEMA_1:
                raise ReportFormatError(f"missing key '{where}.{f.name}'")
        # a count added to schema 1 is written only when set (graphs_failed): absent reads as its default
        value, expected = stored.get(f.name, f.default), getattr(actual, f.name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _bad(f"{where}.{f.name}", "a number", value)
        if abs(value - expected) > (0.0015 if isinstance(expected, float) else 0):
            raise ReportFormatError(f"'{where}.{f.name}' is {value} but the report holds {expected} "
                                    "(edited or damaged?)")
    unknown = [k for k in stored if k not in {f.name for f in dataclasses.fields(model.Summary)}]
    if unknown:
        raise ReportFormatError(f"unknown key '{where}.{unknown[0]}'")


# ----------------------------------------------------------------------------- text


def dumps(rep: model.Report, fmt: str, *, timings: bool = True, compact: bool = False) -> str:
    """The report as YAML or JSON text (stable key order, code as YAML block scalars)."""
    data, texts = _dumped(rep, timings)
    if (fmt, compact) not in texts:
        texts[(fmt, compact)] = dump_data(data, fmt, compact=compact)
    return texts[(fmt, compact)]


#: timings flag -> (the last report dumped, its plain data, its texts by (format, compact)).
_LAST_DUMPED: dict[bool, tuple[Any, dict[str, Any], dict[tuple[str, bool], str]]] = {}


def _dumped(rep: model.Report, timings: bool) -> tuple[dict[str, Any], dict[tuple[str, bool], str]]:
    # `trace -o out.yaml` writes one report three times (cache entry, YAML, the YAML's JSON twin, which is
    # the cache entry's text): a frozen report's plain data and texts are made once (0.3 s at 16 layers).
    # Held through a weak reference, so they go with the report.
    last = _LAST_DUMPED.get(timings)
    if last is None or last[0]() is not rep:
        last = _LAST_DUMPED[timings] = (weakref.ref(rep), to_dict(rep, timings=timings), {})
    return last[1], last[2]


def dump_data(data: Any, fmt: str, *, compact: bool = False) -> str:
    """Plain data as YAML or JSON text, in the report's style (``compact``: JSON on one line)."""
    if fmt == "json":
        if compact:  # json's C encoder: indent= makes it fall back to pure Python, ~6x slower
            return json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if fmt == "yaml":
        out: list[str] = []
        _emit_yaml(data, 0, out, in_list=True)  # a top-level mapping starts at once, unindented
        return "".join(out)
    raise ValueError(f"unknown format {fmt!r}")


# A direct YAML writer for the report's plain data (dicts, lists, str, int, float, bool, None). PyYAML
# builds a node per scalar (about 580,000 for a 10,000-node report) and calls back into Python for each
# one while emitting: over 2 s there. This writes the same style in one pass; every scalar is either
# plain where YAML cannot misread it, or double-quoted with JSON's escapes (which YAML reads the same),
# and tests read the text back with PyYAML's loader to prove it.
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*\Z")
#: words YAML 1.1 loaders (PyYAML) read as booleans or null, never written plain
_RESERVED = frozenset(["y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"])
#: characters a YAML reader refuses (non-printable) or reads as line breaks: always escaped
_YAML_BREAKS = re.compile("[^\x09\x0a\x0d\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]|[\u2028\u2029\ufeff]")


@lru_cache(maxsize=1 << 16)  # names, dtypes and devices repeat thousands of times in a large report
def _quote(text: str) -> str:
    if _PLAIN.match(text) and text.lower() not in _RESERVED:
        return text
    quoted = json.dumps(text, ensure_ascii=False)
    return _YAML_BREAKS.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return ".nan"
        if value in (float("inf"), float("-inf")):
            return ".inf" if value > 0 else "-.inf"
        text = repr(value)
        if "e" in text and "." not in text:  # YAML 1.1 reads 1e-05 as a string: it wants 1.0e-05
            mantissa, exp = text.split("e")
            text = f"{mantissa}.0e{exp}"
        return text
    return _quote(str(value))


#: control characters a literal block cannot hold as they are: all below 32 but the line break
_BLOCK_CONTROL = re.compile("[\x00-\x09\x0b-\x1f]")


def _block_ok(text: str) -> bool:
    """Whether a multi-line string reads back unchanged as a literal block (``|``)."""
    # one regex pass (C speed) for every control character but the line break: a per-character
    # generator here took half the YAML writer's time on a 16-layer model's kernel code
    if _BLOCK_CONTROL.search(text) or _YAML_BREAKS.search(text):
        return False
    lines = text.split("\n")
    # a leading blank or spaced line would need an indentation indicator; trailing spaces on a
    # line before a break are kept by YAML, but a line of spaces only would be read as empty
    return not lines[0].startswith(" ") and lines[0] != "" and all(ln.strip() or ln == "" for ln in lines)


def _emit_yaml(value: Any, indent: int, out: list[str], in_list: bool) -> None:
    """Append ``value`` as block YAML; the caller has written the key (or "- ") before it."""
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            out.append(" {}\n")
            return
        first = in_list
        if not in_list:
            out.append("\n")
        for key, item in value.items():
            out.append(("" if first else pad) + _quote(str(key)) + ":")
            first = False
            _emit_item(item, indent, out)
        return
    if isinstance(value, list):
        if not value:
            out.append(" []\n")
            return
        if len(value) <= 16 and all(isinstance(v, (str, int, float)) and "\n" not in str(v) for v in value):
            out.append(" [" + ", ".join(_scalar(v) for v in value) + "]\n")
            return
        out.append("\n")
        for item in value:
            out.append(pad + "-")
            if isinstance(item, dict) and item:
                out.append(" ")
                _emit_yaml(item, indent + 2, out, in_list=True)
            else:
                _emit_item(item, indent + 2, out)
        return
    out.append(" " + _scalar(value) + "\n")


def _emit_item(item: Any, indent: int, out: list[str]) -> None:
    if isinstance(item, str) and "\n" in item and _block_ok(item):
        body = item[:-1] if item.endswith("\n") else item
        chomp = "" if item.endswith("\n") and not item.endswith("\n\n") else "-" if not item.endswith("\n") else "+"
        pad = " " * (indent + 2)
        out.append(f" |{chomp}\n")
        out.append("".join((pad + ln if ln else "") + "\n" for ln in body.split("\n")))
        return
    if isinstance(item, (dict, list)):
        _emit_yaml(item, indent + 2, out, in_list=False)
        return
    out.append(" " + _scalar(item) + "\n")


def loads(text: str, *, name: str = "report") -> model.Report:
    """Parse YAML or JSON text (JSON is tried first: it is a subset and much faster)."""
    # a large report is a million new objects and none of them garbage: the collector's passes over
    # them took a third of the time of reading a 16-layer Llama report, for nothing
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _loads(text, name)
    finally:
        if collecting:
            gc.enable()


def _loads(text: str, name: str) -> model.Report:
    try:
        data = json.loads(text)
    except ValueError:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        try:
            data = yaml.load(text, Loader=loader)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            at = f" at line {mark.line + 1}" if mark is not None else ""
            raise ReportFormatError(
                f"{name}: not valid YAML or JSON{at} (truncated or hand-edited?)",
                "re-run `tcinspect trace ... -o FILE` to write it again",
            ) from None
    try:
        return from_dict(data)
    except ReportFormatError as exc:
        raise ReportFormatError(f"{name}: {exc.cause}", exc.fix or "the file is truncated or was edited: re-run "
                                "`tcinspect trace MODEL.py -o FILE` to write it again") from None


def load(path: Union[str, Path]) -> model.Report:
    """Read a saved report (.yaml, .yml or .json)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReportFormatError(f"{p}: no such file", "check the path") from None
    except IsADirectoryError:
        raise ReportFormatError(f"{p}: is a directory, not a report", "give a .yaml or .json report") from None
    except UnicodeDecodeError:
        raise ReportFormatError(f"{p}: not UTF-8 text, so not a tcinspect report", "give a .yaml or .json report") from None
    return loads(text, name=str(p))


def write_atomic(path: Union[str, Path], text: str) -> None:
    """Write ``text`` to ``path`` safely: see tcinspect.outfile.write (a rename for files, never half-written)."""
    from tcinspect import outfile

    outfile.write(path, text)


def format_for_path(path: Union[str, Path]) -> str:
    """Guess the dump format from an output file's extension (YAML unless .json)."""
    return "json" if str(path).lower().endswith(".json") else "yaml"
