"""The conformance corpus, run before a release: each real architecture and script through tcinspect and
through torch's own records in the same process, and a table of what matched.

    python bench/conformance.py                      # every case (about 10 min on 2 CPU cores)
    python bench/conformance.py t5 mixtral --json out.json
    python bench/conformance.py --list
    python bench/conformance.py --table a.json b.json   # one table of rows saved by several runs

Each case runs in its own child process (one torch, no state shared between cases). For a model, torch's
record is a counting backend around the same backend (graphs handed, each graph's call nodes),
``counters["graph_break"]``, ``counters["stats"]["unique_graphs"]`` and ``get_compilation_metrics()``'s
recompiles; with ``inductor`` also ``run_and_get_code``'s kernels. For a script (its own torch.compile calls),
Dynamo's counters and compilation metrics (each graph's ``graph_op_count``). tests/conformance.py is the
harness; tests/test_conformance.py runs the cheap cases in the suite.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
MODELS = TESTS / "conformance_models"

#: name -> (kind, what, backend): hf builders (tests/conformance_models/hf.py), model files, scripts.
CASES: dict[str, tuple[str, str, str]] = {
    **{n: ("hf", n, "aot_eager") for n in ("gpt2", "bert", "t5", "llama", "mistral", "mixtral", "qwen2_moe",
                                           "whisper", "vit", "longformer", "big_bird", "switch_transformers")},
    "nanogpt": ("file", "nanogpt.py", "aot_eager"),
    "resnet": ("file", "resnet.py", "aot_eager"),
    "adamw_step": ("file", "adamw_step.py", "aot_eager"),
    "mlp_train": ("file", "mlp_train.py", "aot_eager"),
    "two_file": ("file", "two_file/model.py", "aot_eager"),
    "train_script": ("script", "train_script.py", ""),
    "bert_adamw_script": ("script", "scripts/bert_adamw.py", ""),
    "nanogpt_train_script": ("script", "scripts/nanogpt_train.py", ""),
    # Inductor: kernels against run_and_get_code too
    "gpt2 (inductor)": ("hf", "gpt2", "inductor"),
    "resnet (inductor)": ("file", "resnet.py", "inductor"),
    "nanogpt (inductor)": ("file", "nanogpt.py", "inductor"),
    "longformer_global (inductor)": ("hf", "longformer_global", "inductor"),  # Inductor fails on 10 graphs
}


def one(name: str) -> dict:
    """Run one case in this process: tcinspect's report and torch's record, compared."""
    sys.path[:0] = [str(TESTS), str(ROOT / "src")]
    import torch._dynamo

    import conformance as harness
    from tcinspect.capturing.engine import capture, capture_file
    from tcinspect.report import CompileOptions

    kind, what, backend = CASES[name]
    start = time.perf_counter()
    with torch._dynamo.config.patch(automatic_dynamic_local_pgo=False):
        if kind == "hf":
            from conformance_models import hf

            def make():
                model, inputs = hf.BUILDERS[what]()
                return model, inputs, []

            truth = harness.ground_truth(make, backend=backend)
            model, inputs, _ = make()
            rep = capture(model, *inputs, compile=CompileOptions(backend=backend), quiet=True)
        elif kind == "file":
            path = MODELS / what
            truth = harness.ground_truth(lambda: harness.load_model_file(path), backend=backend)
            rep = capture_file(path, compile=CompileOptions(backend=backend), quiet=True)
        else:
            path = MODELS / what
            truth = harness.script_truth(path)
            rep = capture_file(path, quiet=True)
    s = rep.summary
    breaks = Counter(b.break_type for b in rep.stages.dynamo.graph_breaks if not harness.not_in_counter(b))
    expected_breaks = harness.break_type_counts(truth.graph_break_counter)
    ops = [g.graph.op_count for g in rep.stages.dynamo.graphs]
    torch_ops = truth.ops_per_graph
    if truth.handed and len(truth.handed) != len(ops):
        # Dynamo hands a frame's graph again after the backend failed on it: the report keeps the last one
        last = {cid: n for (cid, _), n in zip(truth.handed, truth.ops_per_graph)}
        torch_ops = [last.get(g.compile_id, -1) for g in rep.stages.dynamo.graphs]
    recompiles = sorted(r.compile_id for r in rep.stages.dynamo.recompiles)
    kernels = [k.name for o in rep.stages.inductor.outputs for k in o.kernels]
    row = {
        "case": name, "kind": kind, "backend": backend or "(the script's)", "ok": rep.ok, "error": rep.error,
        "graphs": s.graphs, "torch_graphs": truth.unique_graphs, "torch_handed": truth.graphs,
        "graph_breaks": s.graph_breaks, "breaks_counted": sum(breaks.values()),
        "torch_graph_break_counter": sum(expected_breaks.values()),
        "recompiles": len(recompiles), "torch_recompiles": len(truth.recompiles),
        "ops_per_graph": ops, "torch_ops_per_graph": torch_ops,
        "torch_backend_failures": sum(1 for _, error in truth.handed if error),
        "graphs_failed": s.graphs_failed, "kernels": len(kernels),
        "torch_kernels": None if truth.kernels is None else len(truth.kernels),
        "seconds": round(time.perf_counter() - start, 1),
    }
    row["match"] = {
        "graphs": s.graphs == truth.unique_graphs and (kind == "script" or s.graphs + s.graphs_failed == truth.graphs)
        and s.graphs_failed == sum(1 for _, error in truth.handed if error),
        "breaks": breaks == expected_breaks,
        "recompiles": recompiles == sorted(truth.recompiles),
        "ops": ops == torch_ops,
        "kernels": None if truth.kernels is None else kernels == truth.kernels,
    }
    return row


def table(rows: list[dict]) -> str:
    """The Markdown table docs/testing.md shows."""
    def mark(ok) -> str:
        return "–" if ok is None else "✓" if ok else "✗"

    out = ["| case | backend | graphs (torch) | breaks (counted / torch's counter) | recompiles (torch) | "
           "ops per graph = torch's | kernels (torch) | s |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if "error_running" in r:
            out.append(f"| {r['case']} | | did not run: {r['error_running']} | | | | | |")
            continue
        m = r["match"]
        ops = ", ".join(map(str, r["ops_per_graph"][:6])) + (", …" if len(r["ops_per_graph"]) > 6 else "")
        kernels = "–" if r["torch_kernels"] is None else f"{r['kernels']} ({r['torch_kernels']}) {mark(m['kernels'])}"
        failed = f" + {r['graphs_failed']} failed ({r.get('torch_backend_failures', 0)})" if r["graphs_failed"] else ""
        out.append(f"| {r['case']} | {r['backend']} | {r['graphs']} ({r['torch_graphs']}){failed} {mark(m['graphs'])} | "
                   f"{r['graph_breaks']}: {r['breaks_counted']} / {r['torch_graph_break_counter']} "
                   f"{mark(m['breaks'])} | {r['recompiles']} ({r['torch_recompiles']}) {mark(m['recompiles'])} | "
                   f"{mark(m['ops'])} {ops} | {kernels} | {r['seconds']} |")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help="case names (default: all)")
    parser.add_argument("--json", help="write the rows as JSON here")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per case")
    parser.add_argument("--table", nargs="+", metavar="JSON", help="print the table of rows saved with --json")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.table:
        print(table([row for f in args.table for row in json.loads(Path(f).read_text())]))
        return
    if args.list:
        print("\n".join(f"{n}: {k} {w} {b}" for n, (k, w, b) in CASES.items()))
        return
    if args.one:
        print("ROW " + json.dumps(one(args.one)))
        return
    rows = []
    for name in args.cases or list(CASES):
        if name not in CASES:
            parser.error(f"no case {name!r} (--list)")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
        try:
            proc = subprocess.run([sys.executable, __file__, "--one", name], capture_output=True, text=True,
                                  timeout=args.timeout, env=env)
            found = [ln for ln in proc.stdout.splitlines() if ln.startswith("ROW ")]
            errors = [ln for ln in proc.stderr.splitlines() if ln[:1].isalpha() and ("Error" in ln or "Exception" in ln)]
            row = json.loads(found[-1][4:]) if found else {
                "case": name, "error_running": (errors or proc.stderr.strip().splitlines() or ["no output"])[-1][:200]}
        except subprocess.TimeoutExpired:
            row = {"case": name, "error_running": f"timed out after {args.timeout:.0f} s"}
        rows.append(row)
        print(table([row]).splitlines()[-1], flush=True)
    print()
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
