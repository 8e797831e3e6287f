"""Report <-> plain dicts, YAML and JSON: the saved-report format. No torch import."""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import typing
from functools import lru_cache
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
        "summary": _plain(rep.summary),
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
    if rep.ranks:  # only a distributed run (--nproc) has them; other reports stay as they were
        from tcinspect.distributed import divergences, serialize_divergence

        out["ranks"] = [_rank_dict(r, timings) for r in rep.ranks]
        out["divergence"] = [serialize_divergence(d) for d in divergences(rep.ranks)]
    if timings:
        out["timings"] = {k: v for k, v in rep.timings}
    else:
        # everything measured in seconds differs run to run: left out so that reports diff byte for byte
        out["summary"].pop("compile_time_s", None)
        for c in out["compiles"]:
            for key in [k for k in c if k.endswith("_time_s")]:
                del c[key]
    return out


def _rank_dict(r: model.RankReport, timings: bool) -> dict[str, Any]:
    """One rank, laid out like a report: its summary above its stages."""
    out = _plain(r)
    out = {**{k: out.pop(k) for k in ("rank", "status", "error", "where", "device", "calls", "input_errors")},
           "summary": _plain(r.summary), **out}
    if not timings:
        out["summary"].pop("compile_time_s", None)
        for c in out["compiles"]:
            for key in [k for k in c if k.endswith("_time_s")]:
                del c[key]
    return out


# ----------------------------------------------------------------------------- from dicts


@lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, vars(model))


def _build(tp: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if origin is Union:  # Optional[X]
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return None if value is None else _build(args[0], value, where)
    if origin is tuple:
        if not isinstance(value, list):
            raise _bad(where, "a list", value)
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_build(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
        return tuple(_build(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, value)))
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise _bad(where, "a mapping", value)
        hints = _hints(tp)
        kwargs = {}
        for f in dataclasses.fields(tp):
            if f.name in value:
                kwargs[f.name] = _build(hints[f.name], value[f.name], f"{where}.{f.name}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ReportFormatError(f"missing key '{where}.{f.name}'")
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
    timings = fields.pop("timings", {}) or {}
    if not isinstance(timings, dict):
        raise _bad("timings", "a mapping", timings)
    for derived in ("summary", "status", "divergence"):
        fields.pop(derived, None)
    # a report written with --no-timings has no *_time_s keys: they read back as 0
    known = {f.name for f in dataclasses.fields(model.Report)}
    fields = {k: v for k, v in fields.items() if k in known}
    rep = _build(model.Report, fields, "report")
    return dataclasses.replace(rep, timings=tuple((str(k), float(v)) for k, v in timings.items()))


# ----------------------------------------------------------------------------- text


# libyaml's emitter when PyYAML was built with it: several times faster on large reports
class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    pass


def _str_representer(dumper: Any, data: str) -> yaml.Node:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


def _list_representer(dumper: Any, data: list) -> yaml.Node:
    # short lists of scalars (shapes, strides, op names) read best on one line
    flow = bool(data) and all(isinstance(v, (str, int, float)) and "\n" not in str(v) for v in data) and len(data) <= 16
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(str, _str_representer)
_Dumper.add_representer(list, _list_representer)


def dumps(rep: model.Report, fmt: str, *, timings: bool = True, compact: bool = False) -> str:
    """The report as YAML or JSON text (stable key order, code as YAML block scalars)."""
    return dump_data(to_dict(rep, timings=timings), fmt, compact=compact)


def dump_data(data: Any, fmt: str, *, compact: bool = False) -> str:
    """Plain data as YAML or JSON text, in the report's style (``compact``: JSON on one line)."""
    if fmt == "json":
        if compact:  # json's C encoder: indent= makes it fall back to pure Python, ~6x slower
            return json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if fmt == "yaml":
        return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    raise ValueError(f"unknown format {fmt!r}")


def loads(text: str, *, name: str = "report") -> model.Report:
    """Parse YAML or JSON text (JSON is tried first: it is a subset and much faster)."""
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
        raise ReportFormatError(f"{name}: {exc.cause}", exc.fix or "re-run `tcinspect trace ... -o FILE`") from None


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
    """Write ``text`` to ``path`` through a temporary file and a rename: never half-written."""
    p = Path(path)
    directory = p.parent if str(p.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        # mkstemp makes the file private (0600); a report gets the permissions any new file would
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def format_for_path(path: Union[str, Path]) -> str:
    """Guess the dump format from an output file's extension (YAML unless .json)."""
    return "json" if str(path).lower().endswith(".json") else "yaml"
