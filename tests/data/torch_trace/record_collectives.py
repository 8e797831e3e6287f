"""Record a torchrun job's TORCH_TRACE logs with the collectives torch compiled on each rank (the oracle).

    python tests/data/torch_trace/record_collectives.py SAMPLE [--nproc N] [--dest DIR]

Runs the sample under torchrun (N ranks, default 2: gloo on CPUs, NCCL on GPUs, as the sample chooses) with
TORCH_TRACE set and a cold Inductor cache of its own, compiled with Inductor, one training step (forward, then
backward of the output, summed if it is not a scalar). On each rank torch's own records are kept beside the log:

- ``dynamo``: the collectives of each graph Dynamo handed the backend (a counting backend in front of
  Inductor's ``compile_fx``), by compile id;
- ``post_grad``: the collectives of each graph Inductor compiled, read by a custom post-grad pass
  (``torch._inductor.config.post_grad_custom_post_pass``, run after Inductor's own post-grad passes), with
  the compile id and whether it is the forward or the backward (a backward graph takes ``tangents_*``);
- ``graphs`` and ``graph_breaks``: Dynamo's counters (``unique_graphs``, the sum of ``graph_break``).

A collective is a call of a ``_c10d_functional`` op other than ``wait_tensor``: op, process-group name (its
last argument), output dtype and shape. Writes DIR (default torch-<version>[-cuda]/<sample>-nproc<N>/): every
rank's log (paths rewritten, md5s recomputed as record.py does) and ``truth.json``.
torch-2.13.0/collectives_gloo/ was recorded by an earlier form of this script from the same job, then named
sample_models/collectives_gloo.py; its truth.json holds the ``dynamo`` collectives only
(``backend_collectives``).
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]


def _collective(node: Any) -> dict[str, Any] | None:
    name = str(node.target)
    if node.op != "call_function" or "_c10d_functional" not in name or "wait_tensor" in name:
        return None
    val = node.meta.get("val", node.meta.get("example_value"))
    if isinstance(val, (list, tuple)):
        val = val[0] if val else None
    op = name.split(".")[-2] if name.count(".") >= 2 else name.rsplit(".", 1)[-1]
    return {"op": op.rstrip("_"), "group": str(node.args[-1]),
            "dtype": str(val.dtype).replace("torch.", "") if val is not None else "",
            "shape": [int(s) for s in val.shape] if val is not None else []}


def _rank(out: str, sample: str) -> None:
    import torch
    import torch.distributed as dist
    from torch._dynamo.utils import counters
    from torch._guards import CompileContext
    from torch._inductor import config as inductor_config
    from torch._inductor.compile_fx import compile_fx
    from torch._inductor.custom_graph_pass import CustomGraphPass

    dynamo: dict[str, list[dict[str, Any]]] = {}
    post_grad: list[dict[str, Any]] = []

    def compile_id() -> str:
        cid = CompileContext.current_compile_id()
        return f"{cid.frame_id}/{cid.frame_compile_id}" if cid is not None else "?"

    def backend(gm: Any, example_inputs: Any) -> Any:
        found = [c for c in map(_collective, gm.graph.nodes) if c]
        dynamo.setdefault(compile_id(), []).extend(found)
        return compile_fx(gm, example_inputs)

    class Oracle(CustomGraphPass):  # reads the post-grad graph; changes nothing
        def __call__(self, graph: Any) -> None:
            backward = any(n.op == "placeholder" and n.name.startswith("tangents") for n in graph.nodes)
            post_grad.append({"compile_id": compile_id(), "part": "backward" if backward else "forward",
                              "collectives": [c for c in map(_collective, graph.nodes) if c]})

        def uuid(self) -> Any:
            return None  # no caching: every graph is compiled, so every graph is seen

    inductor_config.post_grad_custom_post_pass = Oracle()
    ns = runpy.run_path(sample)
    value = torch.compile(ns["model"], backend=backend)(*ns["example_inputs"])
    (value if value.dim() == 0 else value.sum()).backward()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    truth = {"dynamo": dynamo, "post_grad": post_grad, "graphs": counters["stats"]["unique_graphs"],
             "graph_breaks": sum(counters["graph_break"].values())}
    Path(out, f"rank{dist.get_rank()}.json").write_text(json.dumps(truth))
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sample", type=Path)
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--dest", type=Path)
    args = parser.parse_args()
    sample = args.sample.resolve()
    cuda = torch.cuda.is_available()
    version = torch.__version__.split("+")[0]
    dest = args.dest or HERE / f"torch-{version}{'-cuda' if cuda else ''}" / f"{sample.stem}-nproc{args.nproc}"
    dest.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(HERE))
    from record import save_rank_logs

    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        # a cold Inductor cache of its own: a cache hit would replay graphs recorded by another run
        env = dict(os.environ, TORCH_TRACE=str(t / "trace"), PYTHONPATH=str(ROOT / "src"),
                   TORCHINDUCTOR_CACHE_DIR=str(t / "inductor"))
        subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                        f"--nproc-per-node={args.nproc}", __file__, "--rank", str(t), str(sample)],
                       env=env, check=True)
        save_rank_logs(t / "trace", dest)
        truth = {"torch": torch.__version__, "sample": str(sample.relative_to(ROOT)), "nproc": args.nproc,
                 "device": torch.cuda.get_device_name(0) if cuda else "cpu", "process_group": "nccl" if cuda else "gloo",
                 "ranks": {r: json.loads((t / f"rank{r}.json").read_text()) for r in range(args.nproc)}}
        (dest / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"recorded -> {dest}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rank"]:
        _rank(sys.argv[2], sys.argv[3])
    else:
        main()
