"""`tcinspect check`'s limits: the upper bounds (``--max-*``) and lowest shares (``--min-*``), the counts they
name, and their defaults and per-model budgets from [tool.tcinspect] in pyproject.toml. Pure."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from tcinspect.errors import UsageError
from tcinspect.report import Report, sections

#: The counts a threshold or a baseline can limit, as named in the report's summary.
METRICS = ("graphs", "graph_breaks", "recompiles", "kernels")


@dataclass(frozen=True)
class Limits:
    """Upper bounds; None means unchecked."""

    graphs: Optional[int] = None
    graph_breaks: Optional[int] = None
    recompiles: Optional[int] = None
    kernels: Optional[int] = None
    #: seconds of compile time, forward and backward (``--max-compile-time``)
    compile_time_s: Optional[float] = None
    #: CUDA graphs (``--max-cudagraph-skips``, ``--max-cudagraph-recordings``)
    cudagraph_skips: Optional[int] = None
    cudagraph_recordings: Optional[int] = None
    #: microseconds of guard latency, the largest of any compile's (``--max-guard-latency-us``)
    guard_latency_us: Optional[float] = None
    #: lowest share of a region's calls that reuse an earlier call's subgraph, 0-1 (``--min-region-reuse``)
    min_region_reuse: Optional[float] = None
    #: bytes the forward graphs save for backward (``--max-saved-bytes``)
    saved_bytes: Optional[int] = None
    #: compiled / eager peak of one training step, measured on a CUDA GPU (``--max-peak-ratio``)
    peak_ratio: Optional[float] = None
    #: frames Dynamo gave up on and ran eagerly, PyTorch CI's fallbacks_to_eager (``--max-fallbacks-to-eager``)
    fallbacks_to_eager: Optional[int] = None
    #: lowest share of the measured call's ATen ops that run compiled, 0-1 (``--min-coverage``)
    min_coverage: Optional[float] = None
    #: lowest share of the compiled graphs' kernels that run inside CUDA graphs, 0-1 (``--min-cudagraph-coverage``)
    min_cudagraph_coverage: Optional[float] = None

    def items(self) -> list[tuple[str, int]]:
        return [(m, getattr(self, m)) for m in METRICS if getattr(self, m) is not None]

    def any(self) -> bool:
        return bool(self.items()) or any(v is not None for v in (
            self.compile_time_s, self.guard_latency_us, self.min_region_reuse, self.saved_bytes, self.peak_ratio,
            self.min_coverage, self.min_cudagraph_coverage)) \
            or any(getattr(self, m) is not None for m in SECTION_METRICS)


#: Counts of an optional report section a budget or a baseline can limit, as each section registers them
#: (report/sections.py): None when the run has no such section (e.g. CUDA graphs were off), which no budget judges.
SECTION_METRICS: dict[str, Callable[[Report], Optional[int]]] = {
    name: sections.implementation(path) for s in sections.SECTIONS for name, path in s.metrics.items()}


def metric(rep: Report, name: str) -> int:
    """The report summary's count ``name`` (one of METRICS)."""
    return int(getattr(rep.summary, name))


#: What a limit's value must be: the words of its message, and the test (a bool is never a number here)
_COUNT = ("a whole number >= 0", lambda v: isinstance(v, int) and v >= 0)
_SHARE = ("a share from 0 to 1", lambda v: isinstance(v, (int, float)) and 0 <= v <= 1)


def _positive(unit: str) -> tuple[str, Callable[[Any], bool]]:
    return f"a number{unit} > 0", lambda v: isinstance(v, (int, float)) and v > 0


def _checked(values: dict[str, Any], key: str, rule: tuple[str, Callable[[Any], bool]], where: str,
             none_is_unset: bool = True) -> Any:
    """``values.get(key)`` once it passes ``rule`` (None, where ``none_is_unset``, sets no limit); else one line
    naming it (UsageError)."""
    v = values.get(key)
    what, ok = rule
    if (v is not None if none_is_unset else key in values) and (isinstance(v, bool) or not ok(v)):
        raise UsageError(f"{where}: {key} must be {what}, not {v!r}", f"fix {key} in {where}")
    return v


def _number(v: Any) -> Optional[float]:
    return float(v) if v is not None else None


def parse_limits(values: dict[str, Any], where: str) -> Limits:
    """Limits from a config mapping (``max_graph_breaks = 0`` ...), checked."""
    kwargs = {m: _checked(values, f"max_{m}", _COUNT, where, none_is_unset=False) for m in (*METRICS, *SECTION_METRICS)
              if f"max_{m}" in values}
    seconds = _checked(values, "max_compile_time", _positive(" of seconds"), where)
    latency = _checked(values, "max_guard_latency_us", _positive(" of microseconds"), where)
    reuse = _checked(values, "min_region_reuse", _SHARE, where)
    saved = _checked(values, "max_saved_bytes", _COUNT, where)
    least = _checked(values, "min_coverage", _SHARE, where)
    graphed = _checked(values, "min_cudagraph_coverage", _SHARE, where)
    ratio = _checked(values, "max_peak_ratio", _positive(""), where)
    return Limits(**kwargs, compile_time_s=_number(seconds), guard_latency_us=_number(latency),
                  min_region_reuse=_number(reuse), saved_bytes=saved, peak_ratio=_number(ratio),
                  min_coverage=_number(least), min_cudagraph_coverage=_number(graphed))


@dataclass(frozen=True)
class Config:
    """[tool.tcinspect] in pyproject.toml."""

    models: tuple[str, ...] = ()
    limits: Limits = Limits()
    per_model: dict[str, Limits] = field(default_factory=dict)
    baseline: Optional[str] = None


def load_config(start: Path = Path(".")) -> Config:
    """[tool.tcinspect] from the nearest pyproject.toml at or above ``start`` (empty if none)."""
    for d in [start.resolve(), *start.resolve().parents]:
        p = d / "pyproject.toml"
        if p.is_file():
            return _parse_config(p)
    return Config()


def _parse_config(path: Path) -> Config:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10
        import tomli as tomllib
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path} is not valid TOML ({exc})", f"fix {path}") from None
    section = data.get("tool", {}).get("tcinspect", {})
    if not isinstance(section, dict):
        raise UsageError(f"{path}: [tool.tcinspect] is not a table", f"fix {path}")
    where = f"{path} [tool.tcinspect]"
    models = section.get("models", [])
    if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
        raise UsageError(f"{where}: models must be a list of paths", f"fix {path}")
    base = path.parent
    per_model = {}
    for key, values in (section.get("model") or {}).items():
        if not isinstance(values, dict):
            raise UsageError(f"{where}: model.{key!r} must be a table of max_* budgets", f"fix {path}")
        per_model[str((base / key).resolve())] = parse_limits(values, f"{where} model.{key!r}")
    baseline = section.get("baseline")
    if baseline is not None and not isinstance(baseline, str):
        raise UsageError(f"{where}: baseline must be a path", f"fix {path}")
    return Config(
        models=tuple(str(base / m) for m in models),
        limits=parse_limits(section, where),
        per_model=per_model,
        baseline=str(base / baseline) if baseline else None,
    )


def merged_limits(cli: Limits, config: Config, model_path: str) -> Limits:
    """Command-line limits win over per-model budgets, which win over the config's defaults."""
    per = config.per_model.get(str(Path(model_path).resolve()), Limits())
    kwargs = {}
    for m in (*METRICS, "compile_time_s", "guard_latency_us", "min_region_reuse", "saved_bytes", "peak_ratio",
              "min_coverage", "min_cudagraph_coverage", *SECTION_METRICS):
        for source in (cli, per, config.limits):
            if getattr(source, m) is not None:
                kwargs[m] = getattr(source, m)
                break
    return Limits(**kwargs)


def models_in(files: Sequence[str], config: Config) -> list[str]:
    return list(files) if files else list(config.models)
