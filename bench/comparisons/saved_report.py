"""Reading a saved report of a model: `trace REPORT --stage summary` and `codegen REPORT --kernel`."""

from __future__ import annotations

import json
from pathlib import Path

from harness import TCINSPECT, Harness, Row, noop, rel


def saved_report(h: Harness, model: Path, runs: int, commands: set) -> None:
    h.log(f"\n== reading a saved report  ({rel(model)})")
    shared = h.warm_dir or h.dirs.new("inductor-warm")
    report = h.dirs.root / f"report-{model.stem}.json"
    h.run([*TCINSPECT, "trace", str(model), "-o", str(report)], h.tc_env(shared), "write saved report")

    def make():
        return ([*TCINSPECT, "trace", str(report), "--stage", "summary"],
                h.tc_env(h.dirs.new("inductor-unused")), noop, (0,))

    h.interleave(Row("trace REPORT --stage summary", rel(model), "trace saved --stage summary",
                     target=("abs", 0.5)), runs, make)

    if "codegen" not in commands:
        h.log("    (no `codegen` command in this tcinspect: skipped)")
        return
    kernel = first_kernel(report)
    if not kernel:
        h.log("    (the report has no kernels: codegen skipped)")
        return

    h.log(f"    codegen --kernel {kernel}")

    def make_cg():
        return ([*TCINSPECT, "codegen", str(report), "--kernel", kernel],
                h.tc_env(h.dirs.new("inductor-unused")), noop, (0,))

    h.interleave(Row("codegen REPORT --kernel", rel(model), f"codegen saved --kernel {kernel}",
                     target=("abs", 0.5)), runs, make_cg)


def first_kernel(report: Path) -> str:
    """The first kernel with generated source (extern kernels such as addmm have none), else the first."""
    data = json.loads(report.read_text())
    kernels = [k for o in data.get("stages", {}).get("inductor", {}).get("outputs", []) for k in o.get("kernels", [])]
    with_source = [k for k in kernels if k.get("language")]
    pick = (with_source or kernels or [{}])[0]
    return pick.get("name", "")
