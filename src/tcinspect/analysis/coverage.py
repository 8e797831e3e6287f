"""How much of the model runs compiled: the frames run eagerly, each compile's coverage, the measured call's compiled
share (pure; no torch). The figures are torch's (Report.coverage, parse/coverage.py); nothing here estimates one."""

from __future__ import annotations

from typing import Optional

from tcinspect.report import Coverage, FrameCoverage, Report, RuntimeCoverage


def eager_frames(rep: Report) -> tuple[FrameCoverage, ...]:
    """Frames Dynamo gave up on and ran eagerly, but those whose backend failed (listed as backend failures)."""
    if rep.coverage is None:
        return ()
    failed = {f.compile_id for f in rep.stages.dynamo.backend_failures}
    return tuple(f for f in rep.coverage.eager_frames if f.compile_id not in failed)


def frames_by_id(rep: Report) -> dict[str, FrameCoverage]:
    """Each compile's coverage by its compile id; {} for a report without coverage."""
    return {f.compile_id: f for f in rep.coverage.frames} if rep.coverage is not None else {}


def compiled_share(runtime: Optional[RuntimeCoverage]) -> Optional[float]:
    """The measured call's ATen ops that ran compiled, as a fraction; None where not measured."""
    if runtime is None or runtime.not_measured or not runtime.ops:
        return None
    return runtime.compiled_ops / runtime.ops


def runtime_line(runtime: Optional[RuntimeCoverage]) -> Optional[tuple[str, str]]:
    """The measured call's compiled share as a summary row (value, note); None for a report without one."""
    if runtime is None:
        return None
    if runtime.not_measured:
        return "-", f"not measured: {runtime.not_measured}"
    share = compiled_share(runtime)
    worst = runtime.islands[0] if runtime.islands else None
    note = f"of {runtime.ops} ATen ops the measured call ran, {runtime.eager_ops} eagerly"
    if worst is not None:
        note += f"; most at {worst.file.rsplit('/', 1)[-1]}:{worst.line} ({worst.ops})"
    return (f"{runtime.compiled_ops} ({share:.0%})" if share is not None else str(runtime.compiled_ops)), note


def headline(cov: Coverage) -> str:
    """One line: the calls captured, the graphs, the frames run eagerly, the measured call's compiled share."""
    parts = [f"{cov.calls_captured} calls captured in {cov.unique_graphs} graph{'s' if cov.unique_graphs != 1 else ''}",
             f"{cov.fallbacks_to_eager} frame{'s' if cov.fallbacks_to_eager != 1 else ''} ran eagerly"]
    share = compiled_share(cov.runtime)
    if share is not None and cov.runtime is not None:
        parts.append(f"{cov.runtime.compiled_ops} of {cov.runtime.ops} ATen ops ran compiled ({share:.0%})")
    return " · ".join(parts)


def fallbacks_to_eager(rep: Report) -> Optional[int]:
    """``check --max-fallbacks-to-eager``: PyTorch CI's count of frames run eagerly; None for a report without coverage."""
    return rep.coverage.fallbacks_to_eager if rep.coverage is not None else None
