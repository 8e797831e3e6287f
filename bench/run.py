#!/usr/bin/env python
"""Benchmark tcinspect against a bare torch.compile, side by side, in one run.

Every number comes from public tools only: ``time.perf_counter`` around a subprocess, and the
child's own resource usage (``os.wait4``, the per-child form of ``getrusage(RUSAGE_CHILDREN)``)
for peak RSS. Comparisons are interleaved (A B A B ...) so that both sides see the same machine
noise, and each is summarised by the median, min and max over N runs.

    python bench/run.py                     # warm + cold, N=5 (cold: 3)
    python bench/run.py --quick --skip-cold # N=3, warm only
    python bench/run.py --model sample_models/gelu_linear.py --json /tmp/bench.json

See bench/README.md for what each row means.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional, Sequence

REPO = Path(__file__).resolve().parent.parent
TCINSPECT = [sys.executable, "-m", "tcinspect"]

# Environment that would change what a compile does or costs; never inherited by a timed run.
_SCRUB_ENV = (
    "TORCH_LOGS", "TORCH_TRACE", "TORCH_COMPILE_DEBUG", "TORCHDYNAMO_VERBOSE",
    "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "TORCHINDUCTOR_FORCE_DISABLE_CACHES",
    "TORCHINDUCTOR_FX_GRAPH_CACHE", "TORCHINDUCTOR_AUTOGRAD_CACHE", "TCINSPECT_CACHE_DIR",
)

# The bare baseline: what a user would run without tcinspect. Mirrors tcinspect's contract
# (model + example_inputs, optional input_sets, inputs may be a zero-argument function) and its
# backward (sum of every floating output that requires grad).
BARE_SCRIPT = textwrap.dedent('''\
    import runpy, sys
    import torch

    path, model_name, inputs_name = sys.argv[1], sys.argv[2], sys.argv[3]
    sys.path.insert(0, __import__("os").path.dirname(path))
    ns = runpy.run_path(path)

    def as_inputs(v):
        return v() if callable(v) and not isinstance(v, tuple) and not hasattr(v, "shape") else v

    def outputs_needing_grad(v, found):
        if isinstance(v, torch.Tensor):
            if v.requires_grad and (v.is_floating_point() or v.is_complex()):
                found.append(v)
        elif isinstance(v, (list, tuple)):
            for x in v:
                outputs_needing_grad(x, found)
        elif isinstance(v, dict):
            for x in v.values():
                outputs_needing_grad(x, found)
        return found

    compiled = torch.compile(ns[model_name])
    for args in [as_inputs(ns[inputs_name]), *[as_inputs(s) for s in ns.get("input_sets", [])]]:
        out = compiled(*args)
        found = outputs_needing_grad(out, [])
        if found:
            loss = sum(t.real.sum() if t.is_complex() else t.sum() for t in found)
            loss.backward()

    try:  # informational: did Inductor's FX graph cache hit? (the bench checks warm vs cold)
        from torch._dynamo.utils import counters
        c = counters["inductor"]
        print("BENCH_CACHE", c.get("fxgraph_cache_hit", 0), c.get("fxgraph_cache_miss", 0))
    except Exception:
        pass
''')

IMPORT_CHECK = "import sys, tcinspect.cli; print('TORCH_IMPORTED' if 'torch' in sys.modules else 'NO_TORCH')"


class BenchError(RuntimeError):
    pass


# --------------------------------------------------------------------------- running one command

@dataclass
class RunResult:
    seconds: float
    maxrss_kb: int
    stdout: str
    stderr: str
    returncode: int


def run_once(cmd: Sequence[str], env: dict, cwd: Path, timeout: float,
             ok_codes: Sequence[int] = (0,), label: str = "") -> RunResult:
    """Run ``cmd`` once; wall seconds (perf_counter around spawn..reap) and the child's peak RSS.

    stdout/stderr go to files (no pipe can fill up and stall the child). The child is reaped with
    ``os.wait4`` so its resource usage is its own, not the sum of all children so far.
    """
    with tempfile.TemporaryFile("w+b") as out, tempfile.TemporaryFile("w+b") as err:
        reaped: dict = {}
        start = time.perf_counter()
        proc = subprocess.Popen(list(cmd), env=env, cwd=str(cwd), stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err, start_new_session=True)

        def reap() -> None:
            _, status, usage = os.wait4(proc.pid, 0)
            reaped["end"] = time.perf_counter()
            reaped["status"] = status
            reaped["usage"] = usage

        waiter = threading.Thread(target=reap, daemon=True)
        waiter.start()
        waiter.join(timeout)
        if waiter.is_alive():
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            waiter.join(30)
            proc.returncode = -9
            raise BenchError(f"{label or 'command'} timed out after {timeout:.0f} s: {_show(cmd)}\n"
                             + _tail(_read(err)))
        code = os.waitstatus_to_exitcode(reaped["status"])
        proc.returncode = code  # we reaped it ourselves; keep Popen from trying again
        stdout, stderr = _read(out), _read(err)
    if code not in ok_codes:
        raise BenchError(f"{label or 'command'} failed with exit code {code}: {_show(cmd)}\n"
                         f"--- last lines of its stderr ---\n{_tail(stderr or stdout)}")
    return RunResult(reaped["end"] - start, int(reaped["usage"].ru_maxrss), stdout, stderr, code)


def _read(f) -> str:
    f.seek(0)
    return f.read().decode("utf-8", "replace")


def _tail(text: str, n: int = 25) -> str:
    lines = text.rstrip().splitlines()
    return "\n".join(lines[-n:]) if lines else "(empty)"


def _show(cmd: Sequence[str]) -> str:
    return " ".join(("python" if c == sys.executable else c) for c in cmd)


# --------------------------------------------------------------------------- environments

class Dirs:
    """Temporary directories, all under one root that is removed at the end."""

    def __init__(self, keep: bool) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="tcinspect-bench-"))
        self.keep = keep
        self.cwd = self.root / "cwd"
        self.cwd.mkdir()
        self._n = 0

    def new(self, prefix: str) -> Path:
        self._n += 1
        d = self.root / f"{prefix}-{self._n}"
        d.mkdir()
        return d

    def cleanup(self) -> None:
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)


def base_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB_ENV}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def inductor_env(env: dict, inductor_dir: Path) -> dict:
    env = dict(env)
    env["TORCHINDUCTOR_CACHE_DIR"] = str(inductor_dir)
    env["TRITON_CACHE_DIR"] = str(inductor_dir / "triton")
    return env


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
    # target: ("ratio", x): ratio median <= x; ("abs", x): A median < x s; ("check", text): check_ok; None: info
    target: Optional[tuple] = None
    check_ok: Optional[bool] = None
    note: str = ""
    #: Inductor FX-graph cache "hits/misses" per timed run, where the run says ("?" if it does not)
    a_cache: list = field(default_factory=list)
    b_cache: list = field(default_factory=list)
    a_cmd: str = ""
    b_cmd: str = ""

    @property
    def ratios(self) -> list:
        return [x / y for x, y in zip(self.a, self.b)] if self.b else []

    def passed(self) -> Optional[bool]:
        if self.target is None:
            return None
        kind, value = self.target
        if kind == "ratio":
            return statistics.median(self.ratios) <= value
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
        self.bare_script = dirs.root / "bare_compile.py"
        self.bare_script.write_text(BARE_SCRIPT)
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
                setattr(row, f"{name.lower()}_cmd", _show(cmd))
            b = f"  B {row.b[-1]:7.3f} s  ratio {row.a[-1] / row.b[-1]:.2f}" if make_b else ""
            self.log(f"    run {i + 1}/{runs}: A {row.a[-1]:7.3f} s{b}")
        rss = f"peak RSS A {statistics.median(row.a_rss_kb) / 1024:.0f} MiB"
        if make_b:
            rss += f", B {statistics.median(row.b_rss_kb) / 1024:.0f} MiB"
        self.log(f"    {rss}")
        self.rows.append(row)
        return row

    def _cache_recorder(self, row: Row, report_out: Path):
        """on_result for trace-vs-bare: note each run's Inductor FX graph cache "hits/misses"."""

        def record(side: str, r: RunResult) -> None:
            if side == "A":  # tcinspect: the report's summary
                text = report_out.read_text() if report_out.exists() else ""
                hits = re.search(r"^\s*cache_hits:\s*(\d+)", text, re.M)
                misses = re.search(r"^\s*cache_misses:\s*(\d+)", text, re.M)
                found = f"{hits.group(1)}/{misses.group(1)}" if hits and misses else "?"
                row.a_cache.append(found)
            else:  # bare: the line the script prints
                m = re.search(r"^BENCH_CACHE (\d+) (\d+)", r.stdout, re.M)
                row.b_cache.append(f"{m.group(1)}/{m.group(2)}" if m else "?")

        return record

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

    def warm_trace(self, model: Path, runs: int) -> None:
        self.log(f"\n== warm: tcinspect trace vs bare torch.compile  ({_rel(model)})")
        shared = self.dirs.new("inductor-warm")
        out = self.dirs.root / "warm-out.yaml"

        def make_a():
            out.unlink(missing_ok=True)
            return ([*TCINSPECT, "trace", str(model), "--format", "yaml", "-o", str(out)],
                    self.tc_env(shared), _noop, (0,))

        def make_b():
            return ([sys.executable, str(self.bare_script), str(model), self.args.model_name, self.args.inputs_name],
                    inductor_env(self.env, shared), _noop, (0,))

        row = Row("trace vs bare (warm)", _rel(model), "tcinspect trace", "bare compile", target=("ratio", 1.10))
        self.interleave(row, runs, make_a, make_b, on_result=self._cache_recorder(row, out))
        self._check_cache(row, expect_hits=True)
        self.warm_dir = shared

    def cold_trace(self, model: Path, runs: int) -> None:
        self.log(f"\n== cold: tcinspect trace vs bare torch.compile, empty Inductor cache each run  ({_rel(model)})")
        out = self.dirs.root / "cold-out.yaml"

        def fresh(make_env):
            d = self.dirs.new("inductor-cold")
            return make_env(d), lambda: shutil.rmtree(d, ignore_errors=True)

        def make_a():
            out.unlink(missing_ok=True)
            env, done = fresh(self.tc_env)
            return [*TCINSPECT, "trace", str(model), "--format", "yaml", "-o", str(out)], env, done, (0,)

        def make_b():
            env, done = fresh(lambda d: inductor_env(self.env, d))
            return ([sys.executable, str(self.bare_script), str(model), self.args.model_name, self.args.inputs_name],
                    env, done, (0,))

        row = Row("trace vs bare (cold)", _rel(model), "tcinspect trace", "bare compile", target=("ratio", 1.10))
        self.interleave(row, runs, make_a, make_b, warmup=False, on_result=self._cache_recorder(row, out))
        self._check_cache(row, expect_hits=False)

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


def _noop() -> None:
    pass


def _rel(p: Path) -> str:
    try:
        return str(p.relative_to(REPO))
    except ValueError:
        return str(p)


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
        else:
            ratio = f"- (A {min(r.a):.3f}–{max(r.a):.3f} s)" if r.a else "-"
        if r.target is None:
            target = "-"
        elif r.target[0] == "ratio":
            target = f"ratio <= {r.target[1]}"
        elif r.target[0] == "abs":
            target = f"A < {r.target[1]} s"
        else:
            target = str(r.target[1])
        ok = r.passed()
        verdict = "info" if ok is None else ("PASS" if ok else "FAIL")
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

def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Ratios are A / B, per interleaved pair; lower is better for A.")
    p.add_argument("--model", action="append", dest="models", metavar="PATH",
                   help="model file (repeatable; default sample_models/tiny.py)")
    p.add_argument("--model-name", default="model", help="model object in the file (default: model)")
    p.add_argument("--inputs-name", default="example_inputs", help="inputs object (default: example_inputs)")
    p.add_argument("--runs", type=int, default=None, help="timed runs per comparison (default 5; 3 with --quick)")
    p.add_argument("--cold-runs", type=int, default=3, help="timed runs for the cold comparison (default 3)")
    p.add_argument("--skip-cold", action="store_true", help="skip the cold-compile comparison (slow)")
    p.add_argument("--large-report", type=int, default=10000, metavar="NODES",
                   help="also time reading a synthetic report of this many FX nodes (0: skip)")
    p.add_argument("--quick", action="store_true", help="N=3 and warm only")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per subprocess (default 600)")
    p.add_argument("--json", metavar="FILE", help="write raw numbers as JSON here")
    p.add_argument("--keep-tmp", action="store_true", help="keep the temporary directories (caches, reports)")
    args = p.parse_args(argv)
    if args.quick:
        args.skip_cold = True
        args.runs = args.runs or 3
    args.runs = args.runs or 5
    if args.runs < 1 or args.cold_runs < 1:
        p.error("--runs and --cold-runs must be >= 1")
    models = args.models or [str(REPO / "sample_models" / "tiny.py")]
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
    print(f"tcinspect bench: N={args.runs}" + ("" if args.skip_cold else f", cold N={args.cold_runs}")
          + f", models: {', '.join(_rel(m) for m in args.model_paths)}", flush=True)
    print(f"python: {sys.executable}; temp: {dirs.root}", flush=True)
    skipped: list[str] = []
    try:
        commands = bench.cli_commands()
        print(f"tcinspect commands: {', '.join(sorted(commands)) or '(none found)'}", flush=True)
        bench.startup(args.runs)
        for model in args.model_paths:
            bench.warm_dir = None
            bench.warm_trace(model, args.runs)
            if "breaks" in commands:
                bench.breaks_vs_trace(model, args.runs)
            else:
                skipped.append(f"breaks vs trace ({_rel(model)}): no `breaks` command")
            bench.saved_report(model, args.runs, commands)
            if "codegen" not in commands:
                skipped.append(f"codegen REPORT ({_rel(model)}): no `codegen` command")
            if not args.skip_cold:
                bench.cold_trace(model, args.cold_runs)
                if "breaks" in commands:
                    bench.breaks_vs_cold_trace(model, args.cold_runs)
        if args.large_report:
            bench.large_report(args.large_report, args.runs)
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
                   "skipped": skipped, "rows": [r.to_json() for r in bench.rows]}
        Path(args.json).write_text(json.dumps(payload, indent=2) + "\n")
        print(f"\nwrote {args.json}")
    for s in skipped:
        print(f"skipped: {s}")
    print(f"\ntotal {elapsed:.0f} s. Ratios are A/B per interleaved pair (lower = A cheaper).\n")
    print(fmt_table(bench.rows))
    failed = [r for r in bench.rows if r.passed() is False]
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
