"""Record the CUDA graph cases (tests/cudagraph_cases.py) on a GPU for tests/test_cudagraphs.py.

    PYTHONPATH=src:tests python tests/data/record_cudagraphs.py [OUT_DIR]

Writes, per case, ``<case>-torch<version>.jsonl.gz`` (every event tcinspect recorded, as its isolated capture
streams them) and ``<case>-torch<version>.truth.json`` (torch's own record of the same run: skip warnings,
counters["inductor"]["cudagraph_skips"], CUDAGRAPH_RECORDING callbacks by compile id) into OUT_DIR
(default: tests/data/cudagraphs).
"""

from __future__ import annotations

import gzip
import json
import re
import sys
import tempfile
from pathlib import Path

import tcinspect
from cudagraph_cases import CASES, run_case


def main() -> None:
    import torch

    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent / "cudagraphs"
    out.mkdir(parents=True, exist_ok=True)
    version = torch.__version__.split("+")[0]
    for name in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            events = Path(tmp) / "events.jsonl"
            rep, truth = run_case(name, str(events))
            stem = out / f"{name}-torch{version}"
            text = events.read_text(encoding="utf-8")
            # paths as the other recordings write them: the checkout and the venv under /home/user/
            root = str(Path(__file__).resolve().parents[2])
            text = text.replace(root + "/", "/home/user/tcinspect/")
            text = re.sub(r'/[^"\s]*?/lib/python3\.\d+/', lambda m: "/home/user/.venv" + m.group(0)[m.group(0).index("/lib/"):],
                          text)
            with gzip.open(f"{stem}.jsonl.gz", "wt", encoding="utf-8") as dst:
                dst.write(text)
        truth["tcinspect"] = tcinspect.__version__
        Path(f"{stem}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
        cg = rep.cudagraphs
        print(name, "skips", truth["cudagraph_skips"], "recordings", truth["recordings_by_compile_id"],
              "| tcinspect:", None if cg is None else [(g.compile_id, g.part, g.status, len(g.recordings), g.reason[:60])
                                                      for g in cg.graphs])


if __name__ == "__main__":
    main()
