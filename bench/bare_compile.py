"""The bare baseline of bench/run.py: what a user would run without tcinspect, timed against `tcinspect trace`.

    python bench/bare_compile.py MODEL_FILE MODEL_NAME INPUTS_NAME [--backend NAME] [--depyf DIR]

Mirrors tcinspect's model-file contract (model + example_inputs, optional input_sets, inputs may be a
zero-argument function) and its backward (sum of every floating output that requires grad).
``--backend`` is torch.compile's ``backend=``; ``--depyf DIR`` runs the calls inside
``depyf.prepare_debug(DIR)``. Prints ``BENCH_CACHE hits misses`` (Inductor's FX graph cache) at the end.
"""

import os
import runpy
import sys

import torch


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


def main() -> None:
    path, model_name, inputs_name = sys.argv[1], sys.argv[2], sys.argv[3]
    opts = dict(zip(sys.argv[4::2], sys.argv[5::2]))
    sys.path.insert(0, os.path.dirname(path))
    ns = runpy.run_path(path)
    compiled = torch.compile(ns[model_name], backend=opts.get("--backend", "inductor"))

    def run():
        for args in [as_inputs(ns[inputs_name]), *[as_inputs(s) for s in ns.get("input_sets", [])]]:
            out = compiled(*args)
            found = outputs_needing_grad(out, [])
            if found:
                loss = sum(t.real.sum() if t.is_complex() else t.sum() for t in found)
                loss.backward()

    if "--depyf" in opts:  # depyf's documented use: around the code that triggers the compile
        import depyf

        with depyf.prepare_debug(opts["--depyf"]):
            run()
    else:
        run()

    try:  # informational: did Inductor's FX graph cache hit? (the bench checks warm vs cold)
        from torch._dynamo.utils import counters

        c = counters["inductor"]
        print("BENCH_CACHE", c.get("fxgraph_cache_hit", 0), c.get("fxgraph_cache_miss", 0))
    except Exception:  # noqa: BLE001 - informational only
        pass


if __name__ == "__main__":
    main()
