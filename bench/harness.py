"""The harness of bench/run.py: a comparison's row of timed runs, the sides of a comparison run interleaved (A B A B
..., or A B C D E A B C D E ... when several tools are compared with tcinspect) in a scrubbed environment, and
the results table."""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

from runner import Dirs, RunResult, base_env, inductor_env, run_once, show

REPO = Path(__file__).resolve().parent.parent
TCINSPECT = [sys.executable, "-m", "tcinspect"]


@dataclass
class Row:
    """One comparison: A's (and B's) seconds and peak RSS per timed run, its target and its verdict."""

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


class Harness:
    """What every comparison shares: the options, the temporary directories, the scrubbed environment, the rows so
    far, and running the sides of a comparison interleaved."""

    def __init__(self, args: argparse.Namespace, dirs: Dirs) -> None:
        self.args = args
        self.dirs = dirs
        self.env = base_env()
        self.rows: list[Row] = []
        self.bare_script = REPO / "bench" / "bare_compile.py"
        #: the Inductor cache a model's warm trace comparison filled, reused by its later warm comparisons
        self.warm_dir: Optional[Path] = None

    def log(self, msg: str) -> None:
        print(msg, flush=True)

    def run(self, cmd, env, label, ok_codes=(0,)) -> RunResult:
        return run_once(cmd, env, self.dirs.cwd, self.args.timeout, ok_codes, label)

    def tc_env(self, inductor_dir: Path) -> dict:
        """tcinspect with an empty report cache (never reuses a report) and the given Inductor cache."""
        env = inductor_env(self.env, inductor_dir)
        env["TCINSPECT_CACHE_DIR"] = str(self.dirs.new("tccache"))
        return env

    def cli_commands(self) -> set:
        """The commands `tcinspect --help` lists (a comparison of a command this tcinspect lacks is skipped)."""
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

    def check_cache(self, row: Row, expect_hits: bool) -> None:
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

    def bare_cmd(self, model: Path, *extra: str) -> list[str]:
        return [sys.executable, str(self.bare_script), str(model), self.args.model_name, self.args.inputs_name, *extra]


def noop() -> None:
    pass


def rel(p: Path) -> str:
    """A path as the tables show it: relative to the repository, or generated/NAME in the bench's temp."""
    try:
        return str(p.relative_to(REPO))
    except ValueError:
        return f"generated/{p.name}" if p.parent.name.startswith("tcinspect-bench-") else str(p)


def fmt_table(rows: list[Row]) -> str:
    """The results table: one line per row, its medians, ratio, target and verdict."""
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
    """Where the numbers come from: Python, the machine, torch and tcinspect versions, the commit."""
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
