"""What `tcinspect check` finds: one line per check (a regression, an improvement or a pass), and a run's outcome."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Optional


@dataclass(frozen=True)
class Finding:
    """One check result line: a regression (fails), an improvement or a pass."""

    model: str
    check: str  # e.g. "graph_breaks", "new graph break", "recompile reason"
    status: str  # "fail" | "improved" | "ok"
    message: str
    file: str = ""
    line: int = 0


@dataclass
class Outcome:
    findings: list[Finding] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(f.status == "fail" for f in self.findings)


def coverage_fell(findings: Sequence[Finding]) -> bool:
    """Less of the model runs compiled than in the baseline: fewer calls captured or more frames run eagerly."""
    return any(f.status == "fail" and f.check in ("calls_captured", "fallbacks_to_eager") for f in findings)


def not_improvements(findings: Sequence[Finding]) -> list[Finding]:
    """When coverage fell, fewer kernels, graphs, breaks or saved bytes are what the eager code no longer compiles:
    said as such, never as an improvement."""
    if not coverage_fell(findings):
        return list(findings)
    return [replace(f, status="ok", message=f"{f.message} (not an improvement: less of the model runs compiled)")
            if f.status == "improved" and f.check not in ("calls_captured", "fallbacks_to_eager") else f
            for f in findings]


def pct(share: Optional[float]) -> str:
    """A share as a finding says it: "42%", or "none"."""
    return "none" if share is None else f"{100 * share:.0f}%"
