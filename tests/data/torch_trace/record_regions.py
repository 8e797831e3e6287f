"""Record TORCH_TRACE logs of regional compilation with torch's own counts beside them (tests/test_regions.py).

    python tests/data/torch_trace/record_regions.py

Each case runs in a child process with ``TORCH_TRACE`` set: tests/models/regions_nested_first_differs.py
(nested_compile_region, the first layer traced apart) through the counting backend of
tests/models/regions_common.py, and tests/models/regions_blocks.py with REGIONS_USE_CACHE=1 (per-block
torch.compile, one recompile per layer). Written to tests/data/torch_trace/torch-<version>/:
``regions_<case>.log.gz`` (paths rewritten as record.py does) and ``regions_<case>.truth.json``: what the
counting backend saw in the same run (each graph's invoke_subgraph nodes, how often torch ran it) and the
live report's regions section.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
MODELS = ROOT / "tests" / "models"
CASES = {"nested_first_differs": ("regions_nested_first_differs.py", {}),
         "blocks_recompiled": ("regions_blocks.py", {"REGIONS_USE_CACHE": "1"})}


def _child(case: str, out: str) -> None:
    from tcinspect import serialize
    from tcinspect.capturing import custom
    from tcinspect.capturing.engine import capture_file
    from tcinspect.report import CompileOptions

    name, _ = CASES[case]
    sys.path.insert(0, str(MODELS))
    if name == "regions_blocks.py":
        import regions_common

        graphs = regions_common.GRAPHS
        rep = capture_file(MODELS / name, quiet=True)
    else:
        spec = f"{MODELS / 'regions_common.py'}:counting"
        graphs = custom.load_callable(spec, "--backend").__globals__["GRAPHS"]
        rep = capture_file(MODELS / name, quiet=True, compile=CompileOptions(backend=spec))
    Path(out).write_text(json.dumps({"graphs": graphs, "regions": serialize.to_dict(rep)["regions"]}), encoding="utf-8")


def record(case: str) -> None:
    import torch

    sys.path.insert(0, str(HERE))
    from record import HOME, _rewrite_log

    dest = HERE / f"torch-{torch.__version__.split('+')[0]}"
    dest.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        env = dict(os.environ, TORCH_TRACE=str(t / "trace"), **CASES[case][1])
        subprocess.run([sys.executable, __file__, "--child", case, str(t / "truth.json")], env=env, check=True)
        swaps = [(sys.prefix, f"{HOME}/.venv"), (str(Path(sys.prefix).resolve()), f"{HOME}/.venv"),
                 (str(ROOT), f"{HOME}/tcinspect")]
        (log,) = sorted((t / "trace").glob("dedicated_log_torch_trace_*.log"))
        with gzip.open(dest / f"regions_{case}.log.gz", "wt", encoding="utf-8") as fh:
            fh.write(_rewrite_log(log.read_text(encoding="utf-8"), swaps))
        (dest / f"regions_{case}.truth.json").write_text((t / "truth.json").read_text(encoding="utf-8"),
                                                         encoding="utf-8")
    print(f"recorded regions_{case} -> {dest}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2], sys.argv[3])
    else:
        for c in sys.argv[1:] or list(CASES):
            record(c)
