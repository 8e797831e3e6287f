#!/usr/bin/env python
"""Query times, HTML time and peak RSS on LLM-shaped saved reports of 2, 16 and 64 layers.

For each size, ``bench/llm_report.py`` writes the report as YAML (then read once by tcinspect, which
keeps its JSON twin, as ``trace -o`` does) and as JSON, and puts the JSON in a report cache as an
entry. Each query command then runs as a subprocess (``python -m tcinspect ...``, stdout to a file),
``--runs`` times, interleaved over the three sources; the table shows the median wall time and the
child's peak RSS (``os.wait4``). The HTML page is written with ``trace REPORT -o page.html``, and,
where Playwright and /usr/bin/chromium are installed, opened in Chromium: its load event's end from
navigation start (Navigation Timing). A least-squares fit of log(time) on log(layers) gives each
row's growth exponent (1.0: linear).

    python bench/llm_bench.py                          # 2, 16 and 64 layers, 5 runs
    python bench/llm_bench.py --layers 2,16 --runs 3 --report /path/llama16.yaml
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

TC = [sys.executable, "-m", "tcinspect"]
CHROMIUM = Path("/usr/bin/chromium")


def run(args: list[str], env: dict, out: Path) -> tuple[float, float, int]:
    """Wall seconds, peak RSS (MB) and exit code of one command."""
    with open(out, "wb") as fh:
        start = time.perf_counter()
        proc = subprocess.Popen(args, stdout=fh, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    return wall, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def queries(src: str, kernel: str, other: str) -> list[tuple[str, list[str]]]:
    file = [src] if src else []  # "" is the cache entry: the latest report in TCINSPECT_CACHE_DIR
    return [
        ("trace --stage summary", ["trace", *file, "--stage", "summary"]),
        ("trace (tables)", ["trace", *file]),
        ("breaks", ["breaks", *file]),
        ("guards", ["guards", *file]),
        ("codegen", ["codegen", *file]),
        ("codegen --kernel", ["codegen", *file, "--kernel", kernel]),
        # check and diff take files (no "latest cache entry" form): their cache cells stay empty
        ("check", ["check", *file, "--max-graph-breaks", "0"] if file else []),
        ("diff", ["diff", src, other] if file else []),
    ]


def chromium_load_ms(path: Path, tries: int = 3) -> float:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        loads = []
        for _ in range(tries):
            page.goto(path.resolve().as_uri(), wait_until="load")
            loads.append(page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd"))
        browser.close()
    return statistics.median(loads)


def slope(xs: list[float], ys: list[float]) -> float:
    lx, ly = [math.log(x) for x in xs], [math.log(max(y, 1e-9)) for y in ys]
    mx, my = statistics.mean(lx), statistics.mean(ly)
    den = sum((a - mx) ** 2 for a in lx)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / den if den else float("nan")


def prepare(yaml_path: Path, work: Path, name: str) -> None:
    """In a child process (so that the bench's own memory never shows in a child's peak RSS): write the
    report's JSON and its cache entry, and print its first kernel with source and its sizes."""
    from tcinspect import cache, serialize

    rep = cache.read_report(yaml_path)
    serialize.write_atomic(work / f"{name}.json", serialize.dumps(rep, "json"))
    entry = work / "cache" / f"{name}-00000000-0000000000000000.json"
    serialize.write_atomic(entry, serialize.dumps(rep, "json", compact=True))
    outs = rep.stages.inductor.outputs
    print(next(k.name for o in outs for k in o.kernels if k.source), sum(len(o.kernels) for o in outs),
          sum(len(o.post_grad_graph.nodes) for o in outs if o.post_grad_graph))


def measure(name: str, yaml_path: Path, work: Path, runs: int) -> dict:
    """Every query on one report, from its YAML (with twin), its JSON and a cache entry."""
    env = {**os.environ, "TCINSPECT_CACHE_DIR": str(work / "cache"), "COLUMNS": "120"}
    row: dict = {"name": name, "mb": yaml_path.stat().st_size / 1e6}
    # the first read of a YAML tcinspect did not write: the YAML parser, then the twin is kept
    wall, rss, code = run([*TC, "trace", str(yaml_path), "--stage", "summary"], env, work / "out.txt")
    row["first read (no twin)"] = (wall, rss)
    line = subprocess.run([sys.executable, __file__, "--prepare", str(yaml_path), str(work), name], env=env,
                          check=True, capture_output=True, text=True).stdout.split()
    kernel, row["kernels"], row["post_grad"] = line[0], int(line[1]), int(line[2])
    json_path = work / f"{name}.json"
    sources = {"yaml": str(yaml_path), "json": str(json_path), "cache": ""}
    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(runs):
        for src_name, src in sources.items():
            for label, args in queries(src, kernel, str(json_path)):
                if not args:
                    continue
                wall, rss, code = run([*TC, *args], env, work / "out.txt")
                if code not in (0, 1):
                    sys.exit(f"{label} on {src_name} exited {code}: {' '.join(args)}")
                times.setdefault((label, src_name), []).append((wall, rss))
    for key, samples in times.items():
        row[key] = (statistics.median(w for w, _ in samples), max(r for _, r in samples))
    html_path = work / f"{name}.html"
    samples = [run([*TC, "trace", str(yaml_path), "-o", str(html_path), "--format", "html"], env, work / "out.txt")
               for _ in range(max(1, runs // 2))]
    row["html"] = (statistics.median(s[0] for s in samples), max(s[1] for s in samples))
    row["html_mb"] = html_path.stat().st_size / 1e6
    if CHROMIUM.exists() and shutil.which("dot") is not None:
        try:
            row["open_ms"] = chromium_load_ms(html_path)
        except Exception as exc:  # noqa: BLE001 - a missing Playwright browser is a skipped cell, not a failed bench
            print(f"chromium: {exc}", file=sys.stderr)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", default="2,16,64")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--report", action="append", default=[], help="also measure this saved YAML report")
    ap.add_argument("--prepare", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.prepare:
        prepare(Path(a.prepare[0]), Path(a.prepare[1]), a.prepare[2])
        return
    sizes = [int(x) for x in a.layers.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="tcinspect-llm-") as tmp:
        for n in sizes:
            work = Path(tmp) / f"l{n}"
            work.mkdir()
            path = work / f"llm{n}.yaml"
            subprocess.run([sys.executable, str(REPO / "bench" / "llm_report.py"), str(n), str(path)], check=True,
                           capture_output=True)
            rows.append(measure(f"llm{n}", path, work, a.runs))
            print(f"{n} layers done", file=sys.stderr)
        for r in a.report:
            work = Path(tmp) / Path(r).stem
            work.mkdir()
            rows.append(measure(Path(r).stem, Path(r), work, a.runs))
    import torch  # only for the version line (the measured commands never import it)

    print(f"\nmachine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"torch {torch.__version__}; median of {a.runs} runs (HTML: {max(1, a.runs // 2)})\n")
    labels = [lab for lab, _ in queries("x", "k", "y")]
    cols = [r["name"] for r in rows]
    print("| query | source | " + " | ".join(cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    print("| report size | | " + " | ".join(f"{r['mb']:.1f} MB, {r['kernels']} kernels, {r['post_grad']:,} post-grad nodes"
                                             for r in rows) + " |")
    for label in labels:
        for src in ("yaml", "json", "cache"):
            if (label, src) in rows[0]:
                print(f"| `{label}` | {src} | " + " | ".join(
                    f"{r[(label, src)][0]:.2f} s ({r[(label, src)][1]:.0f} MB)" for r in rows) + " |")
    print("| first read of a YAML without twin | yaml | " + " | ".join(
        f"{r['first read (no twin)'][0]:.2f} s ({r['first read (no twin)'][1]:.0f} MB)" for r in rows) + " |")
    print("| `trace -o page.html` | yaml | " + " | ".join(f"{r['html'][0]:.2f} s ({r['html'][1]:.0f} MB), "
                                                       f"{r['html_mb']:.1f} MB page" for r in rows) + " |")
    print("| page opened in Chromium | | " + " | ".join(f"{r['open_ms']:.0f} ms" if "open_ms" in r else "–"
                                                    for r in rows) + " |")
    gen = [r for r in rows if r["name"].startswith("llm")]
    if len(gen) >= 2:
        xs = [float(r["name"][3:]) for r in gen]
        print("\ngrowth exponent (log time on log layers; 1.0 is linear):")
        for label in labels:
            print(f"  {label:24s} " + "  ".join(f"{src} {slope(xs, [r[(label, src)][0] for r in gen]):.2f}"
                                               for src in ("yaml", "json", "cache") if (label, src) in gen[0]))
        print(f"  {'trace -o page.html':24s} {slope(xs, [r['html'][0] for r in gen]):.2f}")
        print(f"  {'peak RSS, trace summary':24s} {slope(xs, [r[('trace --stage summary', 'yaml')][1] for r in gen]):.2f}")


if __name__ == "__main__":
    main()
