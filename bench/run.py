#!/usr/bin/env python
"""Benchmark tcinspect against a bare torch.compile and the other tools, side by side, in one run.

Every number comes from public tools only: ``time.perf_counter`` around a subprocess, and the
child's own resource usage (``os.wait4``, the per-child form of ``getrusage(RUSAGE_CHILDREN)``)
for peak RSS. Comparisons are interleaved (A B A B ..., or A B C D E A B C D E ... when several
tools are compared with tcinspect) so that every side sees the same machine noise, and each is
summarised by the median, min and max over N runs.

    python bench/run.py                     # everything (47 min on 2 CPU cores)
    python bench/run.py --quick             # N=3, warm only, tiny model, small scaling (about 7 min)
    python bench/run.py --model sample_models/gelu_linear.py --json /tmp/bench.json

The peers (tlparse, depyf) are an optional extra: pip install -e '.[bench]'.
See bench/README.md for what each row means.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parent.parent
TCINSPECT = [sys.executable, "-m", "tcinspect"]
sys.path.insert(0, str(REPO / "bench"))
import generate  # noqa: E402  (bench/generate.py: the generated models)
from runner import BenchError, Dirs, RunResult, base_env, inductor_env, run_once, show  # noqa: E402
from scaling import ScalePoint, fmt_scaling  # noqa: E402
from tcinspect.render.table import ROW_LIMIT  # noqa: E402  (rows a `trace` table shows without --all)

#: What a peer's row says when the peer is not installed.
PEER_HINT = "skipped (pip install -e '.[bench]')"


IMPORT_CHECK = "import sys, tcinspect.cli; print('TORCH_IMPORTED' if 'torch' in sys.modules else 'NO_TORCH')"


# --------------------------------------------------------------------------- comparisons

@dataclass
class Row:
    comparison: str
    model: str
    a_label: str
    b_label: str = ""
    a: list = field(default_factory=list)  # seconds
    b: list = field(default_factory=list)
    a_rss_kb: list = field(default_factory=list)
    b_rss_kb: list = field(default_factory=list)
    # target: ("ratio", x): ratio median <= x; ("below", x): ratio median < x; ("abs", x): A median < x s;
    # ("check", text): check_ok; None: info
    target: Optional[tuple] = None
    check_ok: Optional[bool] = None
    note: str = ""
    #: Inductor FX-graph cache "hits/misses" per timed run, where the run says ("?" if it does not)
    a_cache: list = field(default_factory=list)
    b_cache: list = field(default_factory=list)
    a_cmd: str = ""
    b_cmd: str = ""
    #: why the row has no numbers (a peer that is not installed)
    skipped: str = ""

    @property
    def ratios(self) -> list:
        return [x / y for x, y in zip(self.a, self.b)] if self.b else []

    def passed(self) -> Optional[bool]:
        if self.target is None or self.skipped:
            return None
        kind, value = self.target
        if kind == "ratio":
            return statistics.median(self.ratios) <= value
        if kind == "below":
            return statistics.median(self.ratios) < value
        if kind == "abs":
            return statistics.median(self.a) < value
        return bool(self.check_ok)

    def to_json(self) -> dict:
        d = asdict(self)
        d["ratios"] = self.ratios
        d["passed"] = self.passed()
        for key, values in (("a", self.a), ("b", self.b), ("ratio", self.ratios)):
            if values:
                d[f"{key}_stats"] = {"min": min(values), "median": statistics.median(values), "max": max(values)}
        return d


class Bench:
    def __init__(self, args: argparse.Namespace, dirs: Dirs) -> None:
        self.args = args
        self.dirs = dirs
        self.env = base_env()
        self.rows: list[Row] = []
        self.bare_script = REPO / "bench" / "bare_compile.py"
        self.commands: list[str] = []

    # helpers --------------------------------------------------------------------------------
    def log(self, msg: str) -> None:
        print(msg, flush=True)

    def run(self, cmd, env, label, ok_codes=(0,)) -> RunResult:
        return run_once(cmd, env, self.dirs.cwd, self.args.timeout, ok_codes, label)

    def tc_env(self, inductor_dir: Path) -> dict:
        """tcinspect with an empty report cache (never reuses a report) and the given Inductor cache."""
        env = inductor_env(self.env, inductor_dir)
        env["TCINSPECT_CACHE_DIR"] = str(self.dirs.new("tccache"))
        return env

    def interleave(self, row: Row, runs: int, make_a, make_b=None, warmup: bool = True,
                   on_result=None) -> Row:
        """Run A and B alternately ``runs`` times; each make_x() returns (cmd, env, cleanup, ok_codes)."""
        sides = [("A", make_a, row.a, row.a_rss_kb)] + ([("B", make_b, row.b, row.b_rss_kb)] if make_b else [])
        if warmup:
            for name, make, _, _ in sides:
                cmd, env, done, ok = make()
                self.run(cmd, env, f"{row.comparison} warm-up {name}", ok)
                done()
        for i in range(runs):
            for name, make, times, rss in sides:
                cmd, env, done, ok = make()
                r = self.run(cmd, env, f"{row.comparison} run {i + 1} {name}", ok)
                done()
                if on_result is not None:
                    on_result(name, r)
                times.append(r.seconds)
                rss.append(r.maxrss_kb)
                setattr(row, f"{name.lower()}_cmd", show(cmd))
            b = f"  B {row.b[-1]:7.3f} s  ratio {row.a[-1] / row.b[-1]:.2f}" if make_b else ""
            self.log(f"    run {i + 1}/{runs}: A {row.a[-1]:7.3f} s{b}")
        rss = f"peak RSS A {statistics.median(row.a_rss_kb) / 1024:.0f} MiB"
        if make_b:
            rss += f", B {statistics.median(row.b_rss_kb) / 1024:.0f} MiB"
        self.log(f"    {rss}")
        self.rows.append(row)
        return row

    def _check_cache(self, row: Row, expect_hits: bool) -> None:
        """Warn when a warm run missed the cache or a cold run hit it: the comparison would be off."""
        self.log(f"    FX graph cache hits/misses per run: A {' '.join(row.a_cache)} | B {' '.join(row.b_cache)}")
        bad = []
        for side, states in (("A", row.a_cache), ("B", row.b_cache)):
            for st in states:
                if st == "?":
                    continue
                hits, misses = (int(x) for x in st.split("/"))
                if (expect_hits and misses) or (not expect_hits and hits):
                    bad.append(f"{side} {st}")
        if bad:
            msg = f"expected all {'hits' if expect_hits else 'misses'}; got {', '.join(bad)}"
            row.note = (row.note + "; " if row.note else "") + msg
            self.log(f"    !! {msg}")

    # comparisons ------------------------------------------------------------------------------
    def cli_commands(self) -> set:
        r = self.run([*TCINSPECT, "--help"], self.env, "tcinspect --help")
        commands, in_section = set(), False
        for line in r.stdout.splitlines():
            if line.strip().startswith("Commands"):
                in_section = True
                continue
            if in_section:
                m = re.match(r"^\s{1,4}([a-z][\w-]*)(\s|$)", line)
                if m:
                    commands.add(m.group(1))
                elif line.strip() and not line.startswith(" "):
                    in_section = False
        return commands

    def startup(self, runs: int) -> None:
        self.log("\n== startup: tcinspect --help, import tcinspect.cli")
        row = Row("tcinspect --help", "-", "tcinspect --help", target=("abs", 0.3))
        self.interleave(row, runs, lambda: ([*TCINSPECT, "--help"], self.env, _noop, (0,)))

        row = Row("import tcinspect.cli (no torch)", "-", "python -c 'import tcinspect.cli'",
                  target=("check", "torch not imported"))
        verdicts: list[str] = []
        self.interleave(row, runs, lambda: ([sys.executable, "-c", IMPORT_CHECK], self.env, _noop, (0,)),
                        on_result=lambda _side, r: verdicts.append(r.stdout.strip()))
        row.check_ok = bool(verdicts) and all(v == "NO_TORCH" for v in verdicts)
        row.note = ", ".join(sorted(set(verdicts)))
        if not row.check_ok:
            self.log("    !! importing tcinspect.cli imported torch")

    def peers(self) -> list[tuple[str, str, Optional[str]]]:
        """(key, label, why it is skipped or None) for every tool compared with `tcinspect trace`."""
        tlparse = shutil.which("tlparse", path=os.pathsep.join([str(Path(sys.executable).parent),
                                                                os.environ.get("PATH", "")]))
        self.tlparse = tlparse
        return [
            ("bare", "bare compile", None),
            ("debug", "TORCH_COMPILE_DEBUG=1", None),
            ("tlparse", "TORCH_TRACE + tlparse", None if tlparse else PEER_HINT),
            ("depyf", "depyf.prepare_debug", None if importlib.util.find_spec("depyf") else PEER_HINT),
        ]

    def _bare_cmd(self, model: Path, *extra: str) -> list[str]:
        return [sys.executable, str(self.bare_script), str(model), self.args.model_name, self.args.inputs_name, *extra]

    def _side(self, key: str, model: Path, shared: Optional[Path], out: Path):
        """make() for one side: (cmd, env, cleanup, ok codes); every output directory is new per run."""

        def make():
            if shared is not None:
                inductor, cleanups = shared, []
            else:
                inductor = self.dirs.new("inductor-cold")
                cleanups = [inductor]
            if key == "tcinspect":
                out.unlink(missing_ok=True)
                cmd, env = [*TCINSPECT, "trace", str(model), "--format", "yaml", "-o", str(out)], self.tc_env(inductor)
            else:
                env, cmd = inductor_env(self.env, inductor), self._bare_cmd(model)
            if key == "debug":  # Inductor's debug directory and logs, written under TORCH_COMPILE_DEBUG_DIR
                d = self.dirs.new("compile-debug")
                cleanups.append(d)
                env.update(TORCH_COMPILE_DEBUG="1", TORCH_COMPILE_DEBUG_DIR=str(d))
            elif key == "tlparse":  # the structured trace, then tlparse's HTML report of it: timed together
                trace_dir, html = self.dirs.new("torch-trace"), self.dirs.new("tlparse-out")
                cleanups += [trace_dir, html]
                env["TORCH_TRACE"] = str(trace_dir)
                cmd = ["sh", "-c", f"{shlex.join(cmd)} && {shlex.quote(self.tlparse)} "
                                   f"{shlex.quote(str(trace_dir))}/dedicated_log_torch_trace_*.log "
                                   f"-o {shlex.quote(str(html))} --overwrite --no-browser"]
            elif key == "depyf":
                d = self.dirs.new("depyf")
                cleanups.append(d)
                cmd = self._bare_cmd(model, "--depyf", str(d))

            def done() -> None:
                for d in cleanups:
                    shutil.rmtree(d, ignore_errors=True)

            return cmd, env, done, (0,)

        return make

    def interleave_sides(self, sides: list[tuple[str, str, Callable]], runs: int, warmup: bool,
                         on_result=None) -> dict[str, dict[str, list]]:
        """Run every side once per round, in order, ``runs`` rounds; seconds, peak RSS and commands per side."""
        samples = {key: {"s": [], "rss": [], "cmd": ""} for key, _, _ in sides}
        if warmup:
            for _, label, make in sides:
                cmd, env, done, ok = make()
                self.run(cmd, env, f"{label} warm-up", ok)
                done()
        for i in range(runs):
            for key, label, make in sides:
                cmd, env, done, ok = make()
                r = self.run(cmd, env, f"{label} run {i + 1}", ok)
                done()
                if on_result is not None:
                    on_result(key, r)
                samples[key]["s"].append(r.seconds)
                samples[key]["rss"].append(r.maxrss_kb)
                tool_env = [f"{k}={env[k]}" for k in ("TORCH_COMPILE_DEBUG", "TORCH_COMPILE_DEBUG_DIR", "TORCH_TRACE")
                            if k in env]
                samples[key]["cmd"] = " ".join([*tool_env, show(cmd)])
            first = samples[sides[0][0]]["s"][-1]
            self.log(f"    run {i + 1}/{runs}: " + " · ".join(
                f"{label} {samples[key]['s'][-1]:.2f} s" + (f" ({first / samples[key]['s'][-1]:.2f})" if j else "")
                for j, (key, label, _) in enumerate(sides)))
        self.log("    peak RSS: " + ", ".join(f"{label} {statistics.median(samples[key]['rss']) / 1024:.0f} MiB"
                                            for key, label, _ in sides))
        return samples

    def trace_vs_peers(self, model: Path, runs: int, cold: bool) -> None:
        """`tcinspect trace` against the bare compile and every peer, interleaved; one row per peer."""
        temp = "cold" if cold else "warm"
        what = "an empty Inductor cache each run" if cold else "one warm Inductor cache, filled by a warm-up run of each"
        self.log(f"\n== {temp}: tcinspect trace vs bare torch.compile and peers, {what}  ({_rel(model)})")
        shared = None if cold else self.dirs.new("inductor-warm")
        out = self.dirs.root / f"{temp}-out.yaml"
        peers = self.peers()
        sides = [("tcinspect", "tcinspect trace", self._side("tcinspect", model, shared, out))]
        sides += [(key, label, self._side(key, model, shared, out)) for key, label, skip in peers if skip is None]
        caches: dict[str, list[str]] = {key: [] for key, _, _ in sides}

        def record_cache(key: str, r: RunResult) -> None:
            if key == "tcinspect":  # the report's summary
                text = out.read_text() if out.exists() else ""
                hits = re.search(r"^\s*cache_hits:\s*(\d+)", text, re.M)
                misses = re.search(r"^\s*cache_misses:\s*(\d+)", text, re.M)
                caches[key].append(f"{hits.group(1)}/{misses.group(1)}" if hits and misses else "?")
            else:  # the line the bare script prints
                m = re.search(r"^BENCH_CACHE (\d+) (\d+)", r.stdout, re.M)
                caches[key].append(f"{m.group(1)}/{m.group(2)}" if m else "?")

        samples = self.interleave_sides(sides, runs, warmup=not cold, on_result=record_cache)
        tc = samples["tcinspect"]
        for key, label, skip in peers:
            # ("below", 1.0): faster than every peer
            target = ("ratio", 1.10 if cold else 1.05) if key == "bare" else ("below", 1.0)
            row = Row(f"trace vs {label} ({temp})", _rel(model), "tcinspect trace", label, target=target)
            if skip:
                row.skipped = skip
                self.log(f"    {label}: {skip}")
                self.rows.append(row)
                continue
            row.a, row.a_rss_kb, row.a_cmd, row.a_cache = list(tc["s"]), list(tc["rss"]), tc["cmd"], caches["tcinspect"]
            s = samples[key]
            row.b, row.b_rss_kb, row.b_cmd, row.b_cache = list(s["s"]), list(s["rss"]), s["cmd"], caches[key]
            self.log(f"    {label}:")
            self._check_cache(row, expect_hits=not cold)
            self.rows.append(row)
        if not cold:
            self.warm_dir = shared

    def breaks_vs_trace(self, model: Path, runs: int) -> None:
        self.log(f"\n== breaks vs trace, warm Inductor cache  ({_rel(model)})")
        shared = getattr(self, "warm_dir", None) or self.dirs.new("inductor-warm")

        def make_a():
            # exit 1 is "a check failed" (e.g. graph breaks found), not an error
            return [*TCINSPECT, "breaks", str(model)], self.tc_env(shared), _noop, (0, 1)

        def make_b():
            return [*TCINSPECT, "trace", str(model)], self.tc_env(shared), _noop, (0,)

        self.interleave(Row("breaks vs trace (warm)", _rel(model), "tcinspect breaks", "tcinspect trace",
                            target=("ratio", 0.3)), runs, make_a, make_b)

    def isolation_overhead(self, model: Path, runs: int) -> None:
        """What --timeout costs: the capture in a child process (as `check` does by default) vs in-process."""
        self.log(f"\n== trace --timeout (isolated child) vs trace (in-process), warm Inductor cache  ({_rel(model)})")
        shared = getattr(self, "warm_dir", None) or self.dirs.new("inductor-warm")

        def make_a():
            return [*TCINSPECT, "trace", str(model), "--timeout", "600"], self.tc_env(shared), _noop, (0,)

        def make_b():
            return [*TCINSPECT, "trace", str(model)], self.tc_env(shared), _noop, (0,)

        self.interleave(Row("isolation: trace --timeout vs trace (warm)", _rel(model), "tcinspect trace --timeout 600",
                            "tcinspect trace"), runs, make_a, make_b)

    def breaks_vs_cold_trace(self, model: Path, runs: int) -> None:
        """breaks (Dynamo only: no Inductor cache involved) against a cold trace of the same model."""
        self.log(f"\n== breaks vs trace, trace on an empty Inductor cache each run  ({_rel(model)})")

        def make_a():
            return [*TCINSPECT, "breaks", str(model)], self.tc_env(self.dirs.new("inductor-cold")), _noop, (0, 1)

        def make_b():
            return [*TCINSPECT, "trace", str(model)], self.tc_env(self.dirs.new("inductor-cold")), _noop, (0,)

        self.interleave(Row("breaks vs trace (cold)", _rel(model), "tcinspect breaks", "tcinspect trace",
                            target=("ratio", 0.3)), runs, make_a, make_b, warmup=False)

    def saved_report(self, model: Path, runs: int, commands: set) -> None:
        self.log(f"\n== reading a saved report  ({_rel(model)})")
        shared = getattr(self, "warm_dir", None) or self.dirs.new("inductor-warm")
        report = self.dirs.root / f"report-{model.stem}.json"
        self.run([*TCINSPECT, "trace", str(model), "-o", str(report)], self.tc_env(shared), "write saved report")

        def make():
            return ([*TCINSPECT, "trace", str(report), "--stage", "summary"],
                    self.tc_env(self.dirs.new("inductor-unused")), _noop, (0,))

        self.interleave(Row("trace REPORT --stage summary", _rel(model), "trace saved --stage summary",
                            target=("abs", 0.5)), runs, make)

        if "codegen" not in commands:
            self.log("    (no `codegen` command in this tcinspect: skipped)")
            return
        kernel = first_kernel(report)
        if not kernel:
            self.log("    (the report has no kernels: codegen skipped)")
            return

        self.log(f"    codegen --kernel {kernel}")

        def make_cg():
            return ([*TCINSPECT, "codegen", str(report), "--kernel", kernel],
                    self.tc_env(self.dirs.new("inductor-unused")), _noop, (0,))

        self.interleave(Row("codegen REPORT --kernel", _rel(model), f"codegen saved --kernel {kernel}",
                            target=("abs", 0.5)), runs, make_cg)

    def large_report(self, nodes: int, runs: int) -> None:
        """Reading a synthetic report of ``nodes`` FX nodes (bench/synthetic.py): breaks and codegen --kernel."""
        self.log(f"\n== reading a {nodes}-node report (bench/synthetic.py)")
        report = self.dirs.root / f"synthetic-{nodes}.json"
        out = subprocess.run([sys.executable, str(REPO / "bench" / "synthetic.py"), str(nodes), str(report)],
                             capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            raise BenchError(f"bench/synthetic.py failed: {out.stderr[-2000:]}")
        kernel = out.stdout.strip()
        env = self.tc_env(self.dirs.new("inductor-unused"))
        for label, cmd in ((f"breaks {nodes}-node REPORT", ["breaks", str(report)]),
                           (f"codegen {nodes}-node REPORT --kernel", ["codegen", str(report), "--kernel", kernel])):
            self.interleave(Row(label, "synthetic", " ".join(cmd[:1]), target=("abs", 2.0)), runs,
                            lambda cmd=cmd: ([*TCINSPECT, *cmd], env, _noop, (0,)))
        # the terminal view of the same report: long tables cut to trace's row limit, with a line saying so
        outputs: list[str] = []
        row = Row(f"trace {nodes}-node REPORT (table)", "synthetic", "trace saved (stdout)",
                  target=("check", f"tables cut at {ROW_LIMIT} rows, each with a 'more rows' line"))
        self.interleave(row, runs, lambda: ([*TCINSPECT, "trace", str(report)], env, _noop, (0,)),
                        on_result=lambda _side, r: outputs.append(r.stdout))
        text = outputs[-1]
        cut = len(re.findall(r"^… [\d,]+ more rows \(use --all or --format yaml\)", text, re.M))
        # the `#` column of node and kernel tables: no row past the limit is printed
        last = max((int(m) for m in re.findall(r"^│\s*(\d+)\s*│", text, re.M)), default=-1)
        row.check_ok = cut > 0 and last < ROW_LIMIT
        row.note = f"{text.count(chr(10))} lines for {nodes:,} nodes, {cut} tables cut, last row #{last}"
        self.log(f"    {row.note}")

    # scaling ----------------------------------------------------------------------------------
    def scaling(self, cases: Sequence[tuple[int, int]], runs: int, backend: str) -> list[ScalePoint]:
        """tcinspect's own time and memory on generated models of each (op lines, graphs) size."""
        return [self.scaling_point(nodes, graphs, runs, backend) for nodes, graphs in cases]

    def scaling_point(self, nodes: int, graphs: int, runs: int, backend: str) -> ScalePoint:
        """tcinspect's own time and memory on a generated model of ``nodes`` op lines in ``graphs`` graphs."""
        self.log(f"\n== scaling: {nodes} op lines, {graphs} graph(s), backend={backend}  (bench/generate.py)")
        model = generate.write(self.dirs.root / f"gen_{nodes}_g{graphs}.py", nodes, graphs)
        out = self.dirs.root / f"gen_{nodes}_g{graphs}.yaml"
        point = ScalePoint(nodes, graphs)
        report_cache: list[Path] = []

        def make_tc():
            out.unlink(missing_ok=True)
            env = self.tc_env(self.dirs.new("inductor-unused"))
            report_cache[:] = [Path(env["TCINSPECT_CACHE_DIR"])]
            return ([*TCINSPECT, "trace", str(model), "--backend", backend, "-o", str(out)], env, _noop, (0,))

        def make_bare():
            return (self._bare_cmd(model, "--backend", backend),
                    inductor_env(self.env, self.dirs.new("inductor-unused")), _noop, (0,))

        def own_time(key: str, r: RunResult) -> None:
            if key != "tcinspect":
                return
            entry = next(report_cache[0].glob("*.json"))  # the run's own report, as its cache entry
            m = subprocess.run([sys.executable, str(REPO / "bench" / "owntime.py"), str(entry)],
                               capture_output=True, text=True, timeout=self.args.timeout, env=self.env)
            if m.returncode != 0:
                raise BenchError(f"bench/owntime.py failed: {m.stderr[-2000:]}")
            point.own.append(json.loads(m.stdout))

        samples = self.interleave_sides([("tcinspect", "tcinspect trace", make_tc),
                                         ("bare", "bare compile", make_bare)], runs, warmup=False,
                                        on_result=own_time)
        point.tc, point.tc_rss = samples["tcinspect"]["s"], samples["tcinspect"]["rss"]
        point.bare, point.bare_rss = samples["bare"]["s"], samples["bare"]["rss"]
        self.log(f"    {point.fx_nodes} FX nodes in {point.graph_count} graph(s); own work "
                 f"{point.own_s:.3f} s = {100 * point.share:.1f} % of {statistics.median(point.tc):.2f} s "
                 f"(YAML {point.part('yaml_s'):.3f} s); peak RSS {point.rss_ratio:.2f}x bare")
        return point

    def scaling_targets(self, points: list[ScalePoint]) -> None:
        """Rows for the targets on the largest single-graph model: own time, its share, peak RSS."""
        single = [p for p in points if p.graphs == 1 and p.own]
        if not single:
            return
        p = max(single, key=lambda q: q.nodes)
        name = f"{p.fx_nodes:,}-node graph ({self.args.scaling_backend})"
        row = Row(f"own work, {name}", "generated", "handler+assemble+cache+YAML+tables", target=("abs", 1.0))
        row.a = [sum(o.get(k, 0.0) for k in ScalePoint.OWN_PARTS) for o in p.own]
        row.note = f"without YAML {p.own_s - p.part('yaml_s'):.3f} s"
        self.rows.append(row)
        self.rows.append(Row(f"own share of the run, {name}", "generated", "own / tcinspect trace",
                             target=("check", "<= 5 %"), check_ok=p.share <= 0.05, note=f"{100 * p.share:.1f} %"))
        self.rows.append(Row(f"peak RSS vs bare, {name}", "generated", "tcinspect trace / bare",
                             target=("check", "<= 1.2x"), check_ok=p.rss_ratio <= 1.2,
                             note=f"{p.rss_ratio:.2f}x ({statistics.median(p.tc_rss) / 1024:.0f} / "
                                  f"{statistics.median(p.bare_rss) / 1024:.0f} MiB)",
                             a_rss_kb=list(p.tc_rss), b_rss_kb=list(p.bare_rss)))


def _noop() -> None:
    pass


def _rel(p: Path) -> str:
    try:
        return str(p.relative_to(REPO))
    except ValueError:
        return f"generated/{p.name}" if p.parent.name.startswith("tcinspect-bench-") else str(p)


def first_kernel(report: Path) -> str:
    """The first kernel with generated source (extern kernels such as addmm have none), else the first."""
    data = json.loads(report.read_text())
    kernels = [k for o in data.get("stages", {}).get("inductor", {}).get("outputs", []) for k in o.get("kernels", [])]
    with_source = [k for k in kernels if k.get("language")]
    pick = (with_source or kernels or [{}])[0]
    return pick.get("name", "")


# --------------------------------------------------------------------------- output

def fmt_table(rows: list[Row]) -> str:
    header = ["comparison", "model", "A median s", "B median s", "ratio median (min–max)", "target", "pass/fail"]
    body = []
    for r in rows:
        a = f"{statistics.median(r.a):.3f}" if r.a else "-"
        b = f"{statistics.median(r.b):.3f}" if r.b else "-"
        if r.ratios:
            ratio = f"{statistics.median(r.ratios):.2f} ({min(r.ratios):.2f}–{max(r.ratios):.2f})"
        elif r.target and r.target[0] == "check" and r.note:
            ratio = r.note
        else:
            ratio = f"- (A {min(r.a):.3f}–{max(r.a):.3f} s)" if r.a else "-"
        if r.target is None:
            target = "-"
        elif r.target[0] == "ratio":
            target = f"ratio <= {r.target[1]}"
        elif r.target[0] == "below":
            target = f"ratio < {r.target[1]}"
        elif r.target[0] == "abs":
            target = f"A < {r.target[1]} s"
        else:
            target = str(r.target[1])
        ok = r.passed()
        verdict = r.skipped or ("info" if ok is None else ("PASS" if ok else "FAIL"))
        body.append([r.comparison, r.model, a, b, ratio, target, verdict])
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), sep, *(line(b) for b in body)])


def environment_info() -> dict:
    info = {
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    try:
        from importlib import metadata
        info["torch"] = metadata.version("torch")
        info["tcinspect"] = metadata.version("tcinspect")
    except Exception:  # noqa: BLE001 - informational only
        pass
    try:
        info["git"] = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                                     text=True, timeout=10).stdout.strip()
    except Exception:  # noqa: BLE001
        pass
    return info


# --------------------------------------------------------------------------- main

def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Ratios are A / B, per interleaved pair; lower is better for A.")
    p.add_argument("--model", action="append", dest="models", metavar="PATH",
                   help="model file (repeatable; default sample_models/tiny.py and sample_models/transformer_stack.py; "
                        "--quick: tiny.py)")
    p.add_argument("--model-name", default="model", help="model object in the file (default: model)")
    p.add_argument("--inputs-name", default="example_inputs", help="inputs object (default: example_inputs)")
    p.add_argument("--large-nodes", type=int, default=None, metavar="N",
                   help="also compare on a generated model of N op lines through Inductor (default 1000; --quick: 0, skip)")
    p.add_argument("--cold-large", action="store_true", help="also run the generated model's cold comparison (slow)")
    p.add_argument("--runs", type=int, default=None, help="timed runs per comparison (default 5; 3 with --quick)")
    p.add_argument("--cold-runs", type=int, default=5, help="timed runs for the cold comparisons (default 5)")
    p.add_argument("--skip-cold", action="store_true", help="skip the cold-compile comparisons (slow)")
    p.add_argument("--scaling-sizes", type=_ints, default=None, metavar="N,N,...",
                   help="op lines of the one-graph scaling models (default 100,1000,10000; --quick: 100,1000)")
    p.add_argument("--scaling-graphs", type=_ints, default=None, metavar="G,G,...",
                   help="graph counts of the graph-break scaling models (default 1,10,50; --quick: 1,10)")
    p.add_argument("--graph-nodes", type=int, default=1000, metavar="N",
                   help="op lines of the graph-break scaling models (default 1000)")
    p.add_argument("--scaling-runs", type=int, default=3, help="timed runs per scaling model (default 3)")
    p.add_argument("--scaling-backend", default="aot_eager",
                   help="torch.compile backend for the scaling models (default aot_eager: Inductor's compile "
                        "time at 10,000 nodes would swamp what is measured)")
    p.add_argument("--skip-scaling", action="store_true", help="skip the scaling series")
    p.add_argument("--scaling-only", action="store_true", help="run only the scaling series")
    p.add_argument("--isolation-only", action="store_true",
                   help="run only the isolation row (trace --timeout vs trace, first model); implies --skip-scaling")
    p.add_argument("--large-report", type=int, default=10000, metavar="NODES",
                   help="also time reading a synthetic report of this many FX nodes (0: skip)")
    p.add_argument("--quick", action="store_true",
                   help="N=3, warm only, tiny model, no large model, scaling 100,1000 nodes and 1,10 graphs")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per subprocess (default 600)")
    p.add_argument("--json", metavar="FILE", help="write raw numbers as JSON here")
    p.add_argument("--keep-tmp", action="store_true", help="keep the temporary directories (caches, reports)")
    args = p.parse_args(argv)
    if args.quick:
        args.skip_cold = True
        args.runs = args.runs or 3
    args.runs = args.runs or 5
    if args.isolation_only:
        args.skip_scaling, args.large_report, args.large_nodes = True, 0, 0
    args.large_nodes = args.large_nodes if args.large_nodes is not None else (0 if args.quick else 1000)
    args.scaling_sizes = args.scaling_sizes or ([100, 1000] if args.quick else [100, 1000, 10000])
    args.scaling_graphs = args.scaling_graphs or ([1, 10] if args.quick else [1, 10, 50])
    if min(args.runs, args.cold_runs, args.scaling_runs) < 1:
        p.error("--runs, --cold-runs and --scaling-runs must be >= 1")
    default = ["tiny.py"] if args.quick else ["tiny.py", "transformer_stack.py"]
    models = args.models or [str(REPO / "sample_models" / m) for m in default]
    args.model_paths = []
    for m in models:
        path = Path(m).expanduser().resolve()
        if not path.is_file():
            p.error(f"no such model file: {m}")
        args.model_paths.append(path)
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    dirs = Dirs(args.keep_tmp)
    bench = Bench(args, dirs)
    started = time.perf_counter()
    models = list(args.model_paths)
    if args.large_nodes:
        models.append(generate.write(dirs.root / f"generated_{args.large_nodes}.py", args.large_nodes, width=32))
    print(f"tcinspect bench: N={args.runs}" + ("" if args.skip_cold else f", cold N={args.cold_runs}")
          + f", models: {', '.join(_rel(m) for m in models)}", flush=True)
    print(f"python: {sys.executable}; temp: {dirs.root}", flush=True)
    skipped: list[str] = []
    points: list[ScalePoint] = []
    try:
        commands = bench.cli_commands()
        print(f"tcinspect commands: {', '.join(sorted(commands)) or '(none found)'}", flush=True)
        if args.scaling_only:
            models, args.large_report = [], 0
        else:
            bench.startup(args.runs)
        for i, model in enumerate(models):
            generated = model.parent == dirs.root
            bench.warm_dir = None
            if args.isolation_only and (generated or i > 0):
                continue
            if not args.isolation_only:
                bench.trace_vs_peers(model, args.runs, cold=False)
            if not generated:
                if i == 0:
                    bench.isolation_overhead(model, args.runs)
                if args.isolation_only:
                    continue
                if "breaks" in commands:
                    bench.breaks_vs_trace(model, args.runs)
                else:
                    skipped.append(f"breaks vs trace ({_rel(model)}): no `breaks` command")
                bench.saved_report(model, args.runs, commands)
                if "codegen" not in commands:
                    skipped.append(f"codegen REPORT ({_rel(model)}): no `codegen` command")
            if not args.skip_cold and not args.isolation_only and (not generated or args.cold_large):
                bench.trace_vs_peers(model, args.cold_runs, cold=True)
                if i == 0 and "breaks" in commands:  # the first model only: a cold trace is the slow part
                    bench.breaks_vs_cold_trace(model, args.cold_runs)
        if args.large_report:
            bench.large_report(args.large_report, args.runs)
        if not args.skip_scaling:
            cases = [(n, 1) for n in args.scaling_sizes]
            cases += [(args.graph_nodes, g) for g in args.scaling_graphs if (args.graph_nodes, g) not in cases]
            points = bench.scaling(cases, args.scaling_runs, args.scaling_backend)
            bench.scaling_targets(points)
    except BenchError as exc:
        if bench.rows:
            print("\nresults so far:\n" + fmt_table(bench.rows), flush=True)
        print(f"\nbench: aborted: {exc}", file=sys.stderr, flush=True)
        dirs.cleanup()
        return 1
    except KeyboardInterrupt:
        print("\nbench: interrupted", file=sys.stderr)
        dirs.cleanup()
        return 130
    elapsed = time.perf_counter() - started
    dirs.cleanup()

    if args.json:
        payload = {"environment": environment_info(), "runs": args.runs,
                   "cold_runs": None if args.skip_cold else args.cold_runs, "elapsed_s": elapsed,
                   "skipped": skipped, "rows": [r.to_json() for r in bench.rows],
                   "scaling": {"backend": args.scaling_backend, "runs": args.scaling_runs,
                               "points": [p.to_json() for p in points]}}
        Path(args.json).write_text(json.dumps(payload, indent=2) + "\n")
        print(f"\nwrote {args.json}")
    for s in skipped:
        print(f"skipped: {s}")
    print(f"\ntotal {elapsed:.0f} s. Ratios are A/B per interleaved pair (lower = A cheaper).\n")
    print(fmt_table(bench.rows))
    if points:
        print("\n" + fmt_scaling(points, args.graph_nodes, args.scaling_backend, args.scaling_runs))
    failed = [r for r in bench.rows if r.passed() is False]
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
