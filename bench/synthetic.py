"""Write a large synthetic report of N FX nodes (tests/builders/synthetic.py builds it) for the read-speed rows.

    python bench/synthetic.py 10000 /tmp/big.json
"""

from __future__ import annotations

import sys
from pathlib import Path

from tcinspect import serialize

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from builders.synthetic import build

if __name__ == "__main__":
    n, path = int(sys.argv[1]), sys.argv[2]
    rep = build(n)
    serialize.write_atomic(path, serialize.dumps(rep, "json"))
    first = rep.stages.inductor.outputs[0].kernels[0].name
    print(first)
