"""Reading a synthetic report of N FX nodes (bench/synthetic.py): `breaks`, `codegen --kernel`, and `trace`'s
terminal view cut at its row limit."""

from __future__ import annotations

import re
import subprocess
import sys

from harness import REPO, TCINSPECT, Harness, Row, noop
from runner import BenchError
from tcinspect.render.table import ROW_LIMIT  # rows a `trace` table shows without --all


def large_report(h: Harness, nodes: int, runs: int) -> None:
    """Reading a synthetic report of ``nodes`` FX nodes (bench/synthetic.py): breaks and codegen --kernel."""
    h.log(f"\n== reading a {nodes}-node report (bench/synthetic.py)")
    report = h.dirs.root / f"synthetic-{nodes}.json"
    out = subprocess.run([sys.executable, str(REPO / "bench" / "synthetic.py"), str(nodes), str(report)],
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise BenchError(f"bench/synthetic.py failed: {out.stderr[-2000:]}")
    kernel = out.stdout.strip()
    env = h.tc_env(h.dirs.new("inductor-unused"))
    for label, cmd in ((f"breaks {nodes}-node REPORT", ["breaks", str(report)]),
                       (f"codegen {nodes}-node REPORT --kernel", ["codegen", str(report), "--kernel", kernel])):
        h.interleave(Row(label, "synthetic", " ".join(cmd[:1]), target=("abs", 2.0)), runs,
                     lambda cmd=cmd: ([*TCINSPECT, *cmd], env, noop, (0,)))
    # the terminal view of the same report: long tables cut to trace's row limit, with a line saying so
    outputs: list[str] = []
    row = Row(f"trace {nodes}-node REPORT (table)", "synthetic", "trace saved (stdout)",
              target=("check", f"tables cut at {ROW_LIMIT} rows, each with a 'more rows' line"))
    h.interleave(row, runs, lambda: ([*TCINSPECT, "trace", str(report)], env, noop, (0,)),
                 on_result=lambda _side, r: outputs.append(r.stdout))
    text = outputs[-1]
    cut = len(re.findall(r"^… [\d,]+ more rows \(use --all or --format yaml\)", text, re.M))
    # the `#` column of node and kernel tables: no row past the limit is printed
    last = max((int(m) for m in re.findall(r"^│\s*(\d+)\s*│", text, re.M)), default=-1)
    row.check_ok = cut > 0 and last < ROW_LIMIT
    row.note = f"{text.count(chr(10))} lines for {nodes:,} nodes, {cut} tables cut, last row #{last}"
    h.log(f"    {row.note}")
