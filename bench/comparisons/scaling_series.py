"""The scaling series: tcinspect's own time and memory on generated models of growing size (bench/generate.py),
against a bare compile, and the targets on the largest single-graph model (bench/scaling.py holds the points and
their growth exponents)."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import generate  # bench/generate.py: the generated models
from harness import REPO, TCINSPECT, Harness, Row, noop
from runner import BenchError, RunResult, inductor_env
from scaling import ScalePoint


def scaling(h: Harness, cases: Sequence[tuple[int, int]], runs: int, backend: str) -> list[ScalePoint]:
    """tcinspect's own time and memory on generated models of each (op lines, graphs) size."""
    return [scaling_point(h, nodes, graphs, runs, backend) for nodes, graphs in cases]


def scaling_point(h: Harness, nodes: int, graphs: int, runs: int, backend: str) -> ScalePoint:
    """tcinspect's own time and memory on a generated model of ``nodes`` op lines in ``graphs`` graphs."""
    h.log(f"\n== scaling: {nodes} op lines, {graphs} graph(s), backend={backend}  (bench/generate.py)")
    model = generate.write(h.dirs.root / f"gen_{nodes}_g{graphs}.py", nodes, graphs)
    out = h.dirs.root / f"gen_{nodes}_g{graphs}.yaml"
    point = ScalePoint(nodes, graphs)
    report_cache: list[Path] = []

    def make_tc():
        out.unlink(missing_ok=True)
        env = h.tc_env(h.dirs.new("inductor-unused"))
        report_cache[:] = [Path(env["TCINSPECT_CACHE_DIR"])]
        return ([*TCINSPECT, "trace", str(model), "--backend", backend, "-o", str(out)], env, noop, (0,))

    def make_bare():
        return (h.bare_cmd(model, "--backend", backend),
                inductor_env(h.env, h.dirs.new("inductor-unused")), noop, (0,))

    def own_time(key: str, r: RunResult) -> None:
        if key != "tcinspect":
            return
        entry = next(report_cache[0].glob("*.json"))  # the run's own report, as its cache entry
        m = subprocess.run([sys.executable, str(REPO / "bench" / "owntime.py"), str(entry)],
                           capture_output=True, text=True, timeout=h.args.timeout, env=h.env)
        if m.returncode != 0:
            raise BenchError(f"bench/owntime.py failed: {m.stderr[-2000:]}")
        point.own.append(json.loads(m.stdout))

    samples = h.interleave_sides([("tcinspect", "tcinspect trace", make_tc),
                                  ("bare", "bare compile", make_bare)], runs, warmup=False,
                                 on_result=own_time)
    point.tc, point.tc_rss = samples["tcinspect"]["s"], samples["tcinspect"]["rss"]
    point.bare, point.bare_rss = samples["bare"]["s"], samples["bare"]["rss"]
    h.log(f"    {point.fx_nodes} FX nodes in {point.graph_count} graph(s); own work "
          f"{point.own_s:.3f} s = {100 * point.share:.1f} % of {statistics.median(point.tc):.2f} s "
          f"(YAML {point.part('yaml_s'):.3f} s); peak RSS {point.rss_ratio:.2f}x bare")
    return point


def scaling_targets(h: Harness, points: list[ScalePoint]) -> None:
    """Rows for the targets on the largest single-graph model: own time, its share, peak RSS."""
    single = [p for p in points if p.graphs == 1 and p.own]
    if not single:
        return
    p = max(single, key=lambda q: q.nodes)
    name = f"{p.fx_nodes:,}-node graph ({h.args.scaling_backend})"
    row = Row(f"own work, {name}", "generated", "handler+assemble+cache+YAML+tables", target=("abs", 1.0))
    row.a = [sum(o.get(k, 0.0) for k in ScalePoint.OWN_PARTS) for o in p.own]
    row.note = f"without YAML {p.own_s - p.part('yaml_s'):.3f} s"
    h.rows.append(row)
    h.rows.append(Row(f"own share of the run, {name}", "generated", "own / tcinspect trace",
                      target=("check", "<= 5 %"), check_ok=p.share <= 0.05, note=f"{100 * p.share:.1f} %"))
    h.rows.append(Row(f"peak RSS vs bare, {name}", "generated", "tcinspect trace / bare",
                      target=("check", "<= 1.2x"), check_ok=p.rss_ratio <= 1.2,
                      note=f"{p.rss_ratio:.2f}x ({statistics.median(p.tc_rss) / 1024:.0f} / "
                           f"{statistics.median(p.bare_rss) / 1024:.0f} MiB)",
                      a_rss_kb=list(p.tc_rss), b_rss_kb=list(p.bare_rss)))
