"""What --timeout costs: `trace` in an isolated child process against `trace` in-process."""

from __future__ import annotations

from pathlib import Path

from harness import TCINSPECT, Harness, Row, noop, rel


def isolation_overhead(h: Harness, model: Path, runs: int) -> None:
    """What --timeout costs: the capture in a child process (as `check` does by default) vs in-process."""
    h.log(f"\n== trace --timeout (isolated child) vs trace (in-process), warm Inductor cache  ({rel(model)})")
    shared = h.warm_dir or h.dirs.new("inductor-warm")

    def make_a():
        return [*TCINSPECT, "trace", str(model), "--timeout", "600"], h.tc_env(shared), noop, (0,)

    def make_b():
        return [*TCINSPECT, "trace", str(model)], h.tc_env(shared), noop, (0,)

    h.interleave(Row("isolation: trace --timeout vs trace (warm)", rel(model), "tcinspect trace --timeout 600",
                     "tcinspect trace"), runs, make_a, make_b)
