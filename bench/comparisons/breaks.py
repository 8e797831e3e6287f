"""`tcinspect breaks` (Dynamo only) against `tcinspect trace` of the same model, warm and cold."""

from __future__ import annotations

from pathlib import Path

from harness import TCINSPECT, Harness, Row, noop, rel


def breaks_vs_trace(h: Harness, model: Path, runs: int) -> None:
    h.log(f"\n== breaks vs trace, warm Inductor cache  ({rel(model)})")
    shared = h.warm_dir or h.dirs.new("inductor-warm")

    def make_a():
        # exit 1 is "a check failed" (e.g. graph breaks found), not an error
        return [*TCINSPECT, "breaks", str(model)], h.tc_env(shared), noop, (0, 1)

    def make_b():
        return [*TCINSPECT, "trace", str(model)], h.tc_env(shared), noop, (0,)

    h.interleave(Row("breaks vs trace (warm)", rel(model), "tcinspect breaks", "tcinspect trace",
                     target=("ratio", 0.3)), runs, make_a, make_b)


def breaks_vs_cold_trace(h: Harness, model: Path, runs: int) -> None:
    """breaks (Dynamo only: no Inductor cache involved) against a cold trace of the same model."""
    h.log(f"\n== breaks vs trace, trace on an empty Inductor cache each run  ({rel(model)})")

    def make_a():
        return [*TCINSPECT, "breaks", str(model)], h.tc_env(h.dirs.new("inductor-cold")), noop, (0, 1)

    def make_b():
        return [*TCINSPECT, "trace", str(model)], h.tc_env(h.dirs.new("inductor-cold")), noop, (0,)

    h.interleave(Row("breaks vs trace (cold)", rel(model), "tcinspect breaks", "tcinspect trace",
                     target=("ratio", 0.3)), runs, make_a, make_b, warmup=False)
