"""Record a 2-rank gloo job's TORCH_TRACE logs with the collectives torch handed the backend (the oracle).

    python tests/data/torch_trace/record_collectives.py

Runs sample_models/collectives_gloo.py under torchrun (2 CPU ranks, gloo) with TORCH_TRACE set, compiled with
Inductor through a backend that first lists the collectives of each graph Dynamo hands it (call_function nodes of
``_c10d_functional`` ops other than wait_tensor: op, process-group name, output dtype and shape). Writes
torch-<version>/collectives_gloo/: both rank logs (paths rewritten, md5s recomputed as record.py does) and
``truth.json``: for each rank, the backend's collectives in graph order.
"""

from __future__ import annotations

import gzip
import json
import os
import runpy
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SAMPLE = ROOT / "sample_models" / "collectives_gloo.py"


def _rank(out: str) -> None:
    import torch
    import torch.distributed as dist
    from torch._inductor.compile_fx import compile_fx

    seen: list[dict] = []

    def backend(gm, example_inputs):
        for n in gm.graph.nodes:
            name = str(n.target)
            if n.op == "call_function" and "_c10d_functional" in name and "wait_tensor" not in name:
                val = n.meta.get("example_value")
                seen.append({"op": name.rsplit(".", 1)[-1].rstrip("_"), "group": str(n.args[-1]),
                             "dtype": str(val.dtype).replace("torch.", "") if val is not None else "",
                             "shape": list(val.shape) if val is not None else []})
        return compile_fx(gm, example_inputs)

    ns = runpy.run_path(str(SAMPLE))
    out_value = torch.compile(ns["model"], backend=backend)(*ns["example_inputs"])
    out_value.backward()
    Path(out, f"rank{dist.get_rank()}.json").write_text(json.dumps(seen))
    dist.destroy_process_group()


def main() -> None:
    import torch

    sys.path.insert(0, str(HERE))
    from record import HOME, _rewrite_log

    dest = HERE / f"torch-{torch.__version__.split('+')[0]}" / "collectives_gloo"
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        # a cold Inductor cache of its own: a cache hit would replay graphs recorded by another run
        env = dict(os.environ, TORCH_TRACE=str(t / "trace"), PYTHONPATH=str(ROOT / "src"),
                   TORCHINDUCTOR_CACHE_DIR=str(t / "inductor"))
        subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
                        __file__, "--rank", str(t)], env=env, check=True)
        swaps = [(sys.prefix, f"{HOME}/.venv"), (str(Path(sys.prefix).resolve()), f"{HOME}/.venv"),
                 (str(ROOT), f"{HOME}/tcinspect")]
        for log in sorted((t / "trace").glob("dedicated_log_torch_trace_*.log")):
            with gzip.open(dest / f"{log.name}.gz", "wt", encoding="utf-8") as fh:
                fh.write(_rewrite_log(log.read_text(encoding="utf-8"), swaps))
        truth = {"torch": torch.__version__, "sample": "sample_models/collectives_gloo.py",
                 "backend_collectives": {r: json.loads((t / f"rank{r}.json").read_text()) for r in (0, 1)}}
        (dest / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"recorded -> {dest}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rank"]:
        _rank(sys.argv[2])
    else:
        main()
