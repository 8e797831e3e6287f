"""Startup: `tcinspect --help`, and `import tcinspect.cli` importing no torch."""

from __future__ import annotations

import sys

from harness import TCINSPECT, Harness, Row, noop

IMPORT_CHECK = "import sys, tcinspect.cli; print('TORCH_IMPORTED' if 'torch' in sys.modules else 'NO_TORCH')"


def startup(h: Harness, runs: int) -> None:
    h.log("\n== startup: tcinspect --help, import tcinspect.cli")
    row = Row("tcinspect --help", "-", "tcinspect --help", target=("abs", 0.3))
    h.interleave(row, runs, lambda: ([*TCINSPECT, "--help"], h.env, noop, (0,)))

    row = Row("import tcinspect.cli (no torch)", "-", "python -c 'import tcinspect.cli'",
              target=("check", "torch not imported"))
    verdicts: list[str] = []
    h.interleave(row, runs, lambda: ([sys.executable, "-c", IMPORT_CHECK], h.env, noop, (0,)),
                 on_result=lambda _side, r: verdicts.append(r.stdout.strip()))
    row.check_ok = bool(verdicts) and all(v == "NO_TORCH" for v in verdicts)
    row.note = ", ".join(sorted(set(verdicts)))
    if not row.check_ok:
        h.log("    !! importing tcinspect.cli imported torch")
