"""Reports as YAML or JSON text, and back: the saved-report files."""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import Any, Union

from tcinspect import collector, jsonfast
from tcinspect import report as model
from tcinspect.errors import ReportFormatError
from tcinspect.serialize import floats, json_text, yaml_emit, yaml_read
from tcinspect.serialize.fromdict import from_dict
from tcinspect.serialize.mapping import to_dict

FORMATS = ("yaml", "json")


def dumps(rep: model.Report, fmt: str, *, timings: bool = True, compact: bool = False) -> str:
    """The report as YAML or JSON text (stable key order, code as YAML block scalars)."""
    data, texts = _dumped(rep, timings)
    if (fmt, compact) not in texts:
        if fmt == "json":
            # a report holds only plain values: its floats are all that can make orjson's text differ
            texts[(fmt, compact)] = json_text.dumps(data, compact=compact, kind=floats.kind(rep))
        else:
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
        with collector.paused():  # as in loads: a large report's plain data is many objects and no garbage
            data = to_dict(rep, timings=timings)
        last = _LAST_DUMPED[timings] = (weakref.ref(rep), data, {})
    return last[1], last[2]


def dump_data(data: Any, fmt: str, *, compact: bool = False) -> str:
    """Plain data as YAML or JSON text, in the report's style (``compact``: JSON on one line)."""
    if fmt == "json":
        return json_text.dumps(data, compact=compact)
    if fmt == "yaml":
        return yaml_emit.emit(data)
    raise ValueError(f"unknown format {fmt!r}")


def loads(text: Union[str, bytes], *, name: str = "report") -> model.Report:
    """Parse YAML or JSON text, or its UTF-8 bytes (JSON is tried first: it is a subset and much faster)."""
    # a large report is a million new objects and none of them garbage: the collector's passes over
    # them took a third of the time of reading a 16-layer Llama report, for nothing
    with collector.paused():
        return _loads(text, name)


def parse_text(text: Union[str, bytes], name: str = "report") -> Any:
    """The plain data of a report's text (or its UTF-8 bytes): JSON, the YAML tcinspect writes (read directly), or
    any other YAML (PyYAML's C loader); raises ReportFormatError for text that is neither."""
    try:
        return jsonfast.loads(text)  # json.loads' values, read by msgspec where it can
    except ValueError:
        pass
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise _not_utf8(name) from None
    try:
        return yaml_read.parse(text)
    except yaml_read.NotOurs:
        pass  # hand-edited, or written by another tool: the full YAML parser reads it
    import yaml  # only here: a report tcinspect wrote is read without it (60 ms of imports)

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise ReportFormatError(
            f"{name}: not valid YAML or JSON{at} (truncated or hand-edited?)",
            "re-run `tcinspect trace ... -o FILE` to write it again",
        ) from None


def _not_utf8(name: str) -> ReportFormatError:
    """The refusal of a file whose bytes are not UTF-8 (read as text, or handed over as bytes)."""
    return ReportFormatError(f"{name}: not UTF-8 text, so not a tcinspect report", "give a .yaml or .json report")


def _loads(text: Union[str, bytes], name: str) -> model.Report:
    data = parse_text(text, name)
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
        raise _not_utf8(str(p)) from None
    return loads(text, name=str(p))


def write_atomic(path: Union[str, Path], text: str) -> None:
    """Write ``text`` to ``path`` safely: see tcinspect.outfile.write (a rename for files, never half-written)."""
    from tcinspect import outfile

    outfile.write(path, text)


def format_for_path(path: Union[str, Path]) -> str:
    """Guess the dump format from an output file's extension (YAML unless .json)."""
    return "json" if str(path).lower().endswith(".json") else "yaml"
