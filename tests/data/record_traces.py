"""Record the structured traces tests/test_recorded_traces.py parses, with torch's own counts beside them.

    python tests/data/record_traces.py [MODEL ...]     # gpt2_tiny needs `pip install transformers`

Runs each model with the torch of the running interpreter, cold (a private Inductor cache), and
writes tests/data/cpu-traces/<torch version>/<model>.jsonl.gz: every structured-trace record, one
``{"meta": record.metadata, "payload": record.payload}`` object a line, as the GPU recordings beside
it (the records tcinspect ignores left out, paths rewritten to /home/user/...). expected.json beside
them holds, for each model, what torch's own APIs counted in the same run: graphs (calls to a
counting backend, torch._dynamo.testing.CompileCounterWithBackend), graph breaks (the break records
Dynamo emitted, counted by a separate handler) and Dynamo's counters["graph_break"], recompiles
(compile ids the backend was called under with a frame compile id > 0,
torch._guards.CompileContext.current_compile_id) and Inductor's output code
(torch._inductor.utils.run_and_get_code) with the kernels each launches.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import re
import runpy
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "cpu-traces"
#: name -> model file (backward runs wherever the output needs a gradient)
MODELS = {
    "tiny": ROOT / "sample_models" / "tiny.py",  # Linear -> ReLU -> x0.5, forward + backward
    "graph_breaks": ROOT / "sample_models" / "graph_breaks.py",  # print, data-dependent if, sorted: 3 breaks
    "recompile_scalar": ROOT / "sample_models" / "recompile_scalar.py",  # a Python scalar changes: 1 recompile
    "layer_norm_shapes": ROOT / "sample_models" / "layer_norm_shapes.py",  # the batch grows: dynamic shapes
    "gpt2_tiny": ROOT / "tests" / "models" / "gpt2_tiny.py",  # transformers GPT-2, 2 layers, inference
}
# what tcinspect drops on reading (tcinspect.parse.events.IGNORED): left out to keep the files small
DROPPED = {"chromium_event", "str", "describe_storage", "describe_tensor", "describe_source"}


def launched(wrapper: str) -> list[str]:
    """The kernels an Inductor wrapper's call() launches (the regexes of tests/conftest.py's oracle)."""
    names, inside, indent = [], False, 0
    for line in wrapper.splitlines():
        m = re.match(r"^(\s*)def (call|partition_\d+)\(", line)
        if m:
            inside, indent = True, len(m.group(1))
            continue
        if inside and line.strip() and len(line) - len(line.lstrip()) <= indent:
            inside = False
        if not inside:
            continue
        k = (re.match(r"\s*(\w+)\.run\(", line) or re.match(r"\s*(cpp_fused_\w+)\(", line)
             or re.match(r"\s*(?:\w+ = )?extern_kernels\.(\w+)\(", line)
             or re.match(r"\s*(?:[\w, ]+ = )?torch\.ops\.([\w.]+)\(", line)
             or re.match(r"\s*(?:[\w, ]+ = )?(aten\.[\w.]+)\(", line))
        if k:
            names.append(k.group(1))
    return names


class Records(logging.Handler):
    """Every structured-trace record, raw, as torch logged it."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.lines: list[dict] = []

    def emit(self, record: logging.LogRecord) -> None:
        meta = getattr(record, "metadata", None)
        if isinstance(meta, dict) and not DROPPED & meta.keys():
            self.lines.append({"meta": meta, "payload": getattr(record, "payload", None)})


def record(name: str, path: Path, cache_dir: str) -> dict:
    import torch
    from torch._dynamo.testing import CompileCounterWithBackend
    from torch._dynamo.utils import counters
    from torch._guards import CompileContext
    from torch._inductor.utils import run_and_get_code

    ns = runpy.run_path(str(path))
    model, calls = ns["model"], [ns["example_inputs"], *ns.get("input_sets", [])]
    compile_ids = []

    class Counter(CompileCounterWithBackend):
        def __call__(self, gm, example_inputs):
            compile_ids.append(str(CompileContext.current_compile_id()))
            return super().__call__(gm, example_inputs)

    counter = Counter("inductor")
    records = Records()
    trace = logging.getLogger("torch.__trace")
    old_level = trace.level

    def run() -> None:
        counters.clear()
        compiled = torch.compile(model, backend=counter)
        for args in calls:
            out = compiled(*args)
            if isinstance(out, torch.Tensor) and out.requires_grad:
                out.sum().backward()

    trace.addHandler(records)
    trace.setLevel(logging.DEBUG)
    try:
        _, codes = run_and_get_code(run)  # resets Dynamo first
    finally:
        trace.removeHandler(records)
        trace.setLevel(old_level)
        torch._dynamo.reset()
    breaks = sum(1 for r in records.lines if r["meta"].get("artifact", {}).get("name") == "dynamo_graph_break_reason")
    lines = [_portable(json.dumps(r, default=str), cache_dir) for r in records.lines]
    with gzip.GzipFile(OUT / _version() / f"{name}.jsonl.gz", "wb", mtime=0) as fh:
        fh.write("".join(line + "\n" for line in lines).encode())
    return {
        "graphs": counter.frame_count,
        "graph_breaks": breaks,
        "graph_break_counter": sum(counters["graph_break"].values()),
        "recompiles": len({c for c in compile_ids if not c.endswith("/0")}),
        "compile_ids": list(dict.fromkeys(compile_ids)),
        "inductor_outputs": len(codes),
        "kernels": sorted(k for code in codes for k in launched(code)),
    }


def _portable(line: str, cache_dir: str) -> str:
    """Machine paths replaced, so that recordings differ only where torch does."""
    for local, portable in ((cache_dir, "/tmp/torchinductor"), (str(ROOT), "/home/user/tcinspect"),
                            (sys.prefix, "/home/user/venv"), (sys.base_prefix, "/usr")):
        line = line.replace(local, portable)
    return line


def _version() -> str:
    import torch

    return torch.__version__.split("+")[0]


def main(names: list[str]) -> None:
    cache_dir = tempfile.mkdtemp(prefix="tcinspect-record-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_dir  # cold: nothing from an earlier run
    import torch
    import triton

    (OUT / _version()).mkdir(parents=True, exist_ok=True)
    expected_path = OUT / _version() / "expected.json"
    expected = json.loads(expected_path.read_text()) if expected_path.exists() else {}
    expected.update({"torch": torch.__version__, "triton": triton.__version__,
                     "python": ".".join(map(str, sys.version_info[:3]))})
    models = expected.setdefault("models", {})
    for name in names or list(MODELS):
        models[name] = record(name, MODELS[name], cache_dir)
        print(name, models[name]["graphs"], "graphs", models[name]["graph_breaks"], "breaks",
              models[name]["recompiles"], "recompiles", len(models[name]["kernels"]), "kernels", flush=True)
    expected["models"] = {k: models[k] for k in MODELS if k in models}
    expected_path.write_text(json.dumps(expected, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
