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
See bench/README.md for what each row means. This file reads the options and runs the comparisons in order;
bench/harness.py runs a comparison's sides and prints the table, bench/comparisons/ holds one module per comparison.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/: the harness, the comparisons, the runner
import generate  # bench/generate.py: the generated models
from comparisons import breaks, isolation, large_report, peers, saved_report, scaling_series, startup
from harness import REPO, Harness, environment_info, fmt_table, rel
from runner import BenchError, Dirs
from scaling import ScalePoint, fmt_scaling


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
    bench = Harness(args, dirs)
    started = time.perf_counter()
    models = list(args.model_paths)
    if args.large_nodes:
        models.append(generate.write(dirs.root / f"generated_{args.large_nodes}.py", args.large_nodes, width=32))
    print(f"tcinspect bench: N={args.runs}" + ("" if args.skip_cold else f", cold N={args.cold_runs}")
          + f", models: {', '.join(rel(m) for m in models)}", flush=True)
    print(f"python: {sys.executable}; temp: {dirs.root}", flush=True)
    skipped: list[str] = []
    points: list[ScalePoint] = []
    try:
        commands = bench.cli_commands()
        print(f"tcinspect commands: {', '.join(sorted(commands)) or '(none found)'}", flush=True)
        if args.scaling_only:
            models, args.large_report = [], 0
        else:
            startup.startup(bench, args.runs)
        for i, model in enumerate(models):
            generated = model.parent == dirs.root
            bench.warm_dir = None
            if args.isolation_only and (generated or i > 0):
                continue
            if not args.isolation_only:
                peers.trace_vs_peers(bench, model, args.runs, cold=False)
            if not generated:
                if i == 0:
                    isolation.isolation_overhead(bench, model, args.runs)
                if args.isolation_only:
                    continue
                if "breaks" in commands:
                    breaks.breaks_vs_trace(bench, model, args.runs)
                else:
                    skipped.append(f"breaks vs trace ({rel(model)}): no `breaks` command")
                saved_report.saved_report(bench, model, args.runs, commands)
                if "codegen" not in commands:
                    skipped.append(f"codegen REPORT ({rel(model)}): no `codegen` command")
            if not args.skip_cold and not args.isolation_only and (not generated or args.cold_large):
                peers.trace_vs_peers(bench, model, args.cold_runs, cold=True)
                if i == 0 and "breaks" in commands:  # the first model only: a cold trace is the slow part
                    breaks.breaks_vs_cold_trace(bench, model, args.cold_runs)
        if args.large_report:
            large_report.large_report(bench, args.large_report, args.runs)
        if not args.skip_scaling:
            cases = [(n, 1) for n in args.scaling_sizes]
            cases += [(args.graph_nodes, g) for g in args.scaling_graphs if (args.graph_nodes, g) not in cases]
            points = scaling_series.scaling(bench, cases, args.scaling_runs, args.scaling_backend)
            scaling_series.scaling_targets(bench, points)
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
