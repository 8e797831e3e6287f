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


def parse_limits(values: dict[str, Any], where: str) -> Limits:
    """Limits from a config mapping (``max_graph_breaks = 0`` ...), checked."""
    kwargs = {}
    for m in (*METRICS, *SECTION_METRICS):
        key = f"max_{m}"
        if key in values:
            v = values[key]
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise UsageError(f"{where}: {key} must be a whole number >= 0, not {v!r}", f"fix {key} in {where}")
            kwargs[m] = v
    seconds = values.get("max_compile_time")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0):
        raise UsageError(f"{where}: max_compile_time must be a number of seconds > 0, not {seconds!r}",
                         f"fix max_compile_time in {where}")
    latency = values.get("max_guard_latency_us")
    if latency is not None and (isinstance(latency, bool) or not isinstance(latency, (int, float)) or latency <= 0):
        raise UsageError(f"{where}: max_guard_latency_us must be a number of microseconds > 0, not {latency!r}",
                         f"fix max_guard_latency_us in {where}")
    reuse = values.get("min_region_reuse")
    if reuse is not None and (isinstance(reuse, bool) or not isinstance(reuse, (int, float)) or not 0 <= reuse <= 1):
        raise UsageError(f"{where}: min_region_reuse must be a share from 0 to 1, not {reuse!r}",
                         f"fix min_region_reuse in {where}")
    saved = values.get("max_saved_bytes")
    if saved is not None and (isinstance(saved, bool) or not isinstance(saved, int) or saved < 0):
        raise UsageError(f"{where}: max_saved_bytes must be a whole number >= 0, not {saved!r}",
                         f"fix max_saved_bytes in {where}")
    least = values.get("min_coverage")
    if least is not None and (isinstance(least, bool) or not isinstance(least, (int, float)) or not 0 <= least <= 1):
        raise UsageError(f"{where}: min_coverage must be a share from 0 to 1, not {least!r}",
                         f"fix min_coverage in {where}")
    graphed = values.get("min_cudagraph_coverage")
    if graphed is not None and (isinstance(graphed, bool) or not isinstance(graphed, (int, float))
                                or not 0 <= graphed <= 1):
        raise UsageError(f"{where}: min_cudagraph_coverage must be a share from 0 to 1, not {graphed!r}",
                         f"fix min_cudagraph_coverage in {where}")
    ratio = values.get("max_peak_ratio")
    if ratio is not None and (isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or ratio <= 0):
        raise UsageError(f"{where}: max_peak_ratio must be a number > 0, not {ratio!r}", f"fix max_peak_ratio in {where}")
    return Limits(**kwargs, compile_time_s=float(seconds) if seconds is not None else None,
                  guard_latency_us=float(latency) if latency is not None else None,
                  min_region_reuse=float(reuse) if reuse is not None else None, saved_bytes=saved,
                  peak_ratio=float(ratio) if ratio is not None else None,
                  min_coverage=float(least) if least is not None else None,
                  min_cudagraph_coverage=float(graphed) if graphed is not None else None)


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
