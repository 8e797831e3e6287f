"""What the test modules share besides fixtures: paths, the CLI runners, the wrapper oracle, one report
builder and one render-to-text helper. No torch at import (the torch-free layer imports this module);
fixtures and hooks stay in conftest.py."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_models"
DATA = Path(__file__).resolve().parent / "data"
MODELS = Path(__file__).resolve().parent / "models"


def run_cli(*args: str, env: dict | None = None, cwd: Path | None = None, timeout: int = 600):
    """Run the real CLI in a subprocess; returns CompletedProcess with text output."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "tcinspect", *args], capture_output=True, text=True,
                          env=full_env, cwd=cwd or ROOT, timeout=timeout)


def cli(capsys, *args):
    """Run the CLI in-process through its error boundary: (exit code, stdout, stderr)."""
    from tcinspect.cli import main

    code = main(list(args))
    return (code, *capsys.readouterr())


def launched(wrapper: str) -> list[str]:
    """Oracle: the kernels an Inductor wrapper's call() launches, read with plain regexes."""
    from tcinspect.parse.inductor import _call_body

    names = []
    for line in _call_body(wrapper):
        m = (re.match(r"\s*(\w+)\.run\(", line) or re.match(r"\s*(cpp_fused_\w+)\(", line)
             or re.match(r"\s*(?:\w+ = )?extern_kernels\.(\w+)\(", line)
             or re.match(r"\s*(?:[\w, ]+ = )?torch\.ops\.([\w.]+)\(", line)
             or re.match(r"\s*(?:[\w, ]+ = )?(aten\.[\w.]+)\(", line))
        if m:
            names.append(m.group(1))
    return names


@cache
def recorded_report(path: Path):
    """The report of a recorded trace or TORCH_TRACE log (a file of events, a log, a rank directory), built once
    per process for every module that reads it: torch 2.13.0 on the CPU, with fixed timings (compile 1.25 s,
    parse 0.5 s) so that its YAML and JSON carry a timings section. Reports are immutable; share freely."""
    from tcinspect.parse import assemble, events, rankpool
    from tcinspect.report import Report, Target

    if path.is_dir() or path.name.endswith((".log", ".log.gz")):
        return rankpool.read(path)
    evs, bad = events.read_trace(path)
    stages, metrics = assemble.build(evs)
    return Report(torch_version="2.13.0", device="cpu", target=Target(kind="trace", model_name=path.name),
                  stages=stages, compiles=metrics, parse=events.parse_health(evs, bad),
                  timings=(("compile_s", 1.25), ("parse_s", 0.5)))


def render_text(renderable: Any, width: int = 160) -> str:
    """What a Rich renderable prints at ``width`` columns, as plain text, through the console the CLI prints tables
    with (no colour, no markup, no emoji codes, no highlighting)."""
    from rich.console import Console

    # render/table.console's settings, and no colour whatever the environment says (FORCE_COLOR)
    console = Console(file=io.StringIO(), width=width, color_system=None, highlight=False, markup=False, emoji=False,
                      soft_wrap=False)
    console.print(renderable)
    out = console.file
    assert isinstance(out, io.StringIO)
    return out.getvalue()


def cuda_available() -> bool:
    """Whether torch sees a CUDA GPU. Imports torch: name it in a ``skipif`` as the string ``"cuda_available()"``
    (with ``cuda_available`` imported into the module), which pytest evaluates only for a test it runs."""
    import torch

    return torch.cuda.is_available()
