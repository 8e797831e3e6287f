"""`tcinspect trace` against a bare torch.compile and the other tools (TORCH_COMPILE_DEBUG, TORCH_TRACE + tlparse,
depyf), warm or cold, interleaved; one row per peer. The peers are an optional extra: pip install -e '.[bench]'."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import sys
from pathlib import Path
from typing import Optional

from harness import TCINSPECT, Harness, Row, rel
from runner import RunResult, inductor_env

#: What a peer's row says when the peer is not installed.
PEER_HINT = "skipped (pip install -e '.[bench]')"


def find_tlparse() -> Optional[str]:
    """tlparse beside this Python (the bench extra installs it there) or on $PATH."""
    return shutil.which("tlparse", path=os.pathsep.join([str(Path(sys.executable).parent),
                                                         os.environ.get("PATH", "")]))


def peers(tlparse: Optional[str]) -> list[tuple[str, str, Optional[str]]]:
    """(key, label, why it is skipped or None) for every tool compared with `tcinspect trace`."""
    return [
        ("bare", "bare compile", None),
        ("debug", "TORCH_COMPILE_DEBUG=1", None),
        ("tlparse", "TORCH_TRACE + tlparse", None if tlparse else PEER_HINT),
        ("depyf", "depyf.prepare_debug", None if importlib.util.find_spec("depyf") else PEER_HINT),
    ]


def side(h: Harness, key: str, model: Path, shared: Optional[Path], out: Path, tlparse: Optional[str]):
    """make() for one side: (cmd, env, cleanup, ok codes); every output directory is new per run."""

    def make():
        if shared is not None:
            inductor, cleanups = shared, []
        else:
            inductor = h.dirs.new("inductor-cold")
            cleanups = [inductor]
        if key == "tcinspect":
            out.unlink(missing_ok=True)
            cmd, env = [*TCINSPECT, "trace", str(model), "--format", "yaml", "-o", str(out)], h.tc_env(inductor)
        else:
            env, cmd = inductor_env(h.env, inductor), h.bare_cmd(model)
        if key == "debug":  # Inductor's debug directory and logs, written under TORCH_COMPILE_DEBUG_DIR
            d = h.dirs.new("compile-debug")
            cleanups.append(d)
            env.update(TORCH_COMPILE_DEBUG="1", TORCH_COMPILE_DEBUG_DIR=str(d))
        elif key == "tlparse":  # the structured trace, then tlparse's HTML report of it: timed together
            trace_dir, html = h.dirs.new("torch-trace"), h.dirs.new("tlparse-out")
            cleanups += [trace_dir, html]
            env["TORCH_TRACE"] = str(trace_dir)
            cmd = ["sh", "-c", f"{shlex.join(cmd)} && {shlex.quote(tlparse)} "
                               f"{shlex.quote(str(trace_dir))}/dedicated_log_torch_trace_*.log "
                               f"-o {shlex.quote(str(html))} --overwrite --no-browser"]
        elif key == "depyf":
            d = h.dirs.new("depyf")
            cleanups.append(d)
            cmd = h.bare_cmd(model, "--depyf", str(d))

        def done() -> None:
            for d in cleanups:
                shutil.rmtree(d, ignore_errors=True)

        return cmd, env, done, (0,)

    return make


def trace_vs_peers(h: Harness, model: Path, runs: int, cold: bool) -> None:
    """`tcinspect trace` against the bare compile and every peer, interleaved; one row per peer."""
    temp = "cold" if cold else "warm"
    what = "an empty Inductor cache each run" if cold else "one warm Inductor cache, filled by a warm-up run of each"
    h.log(f"\n== {temp}: tcinspect trace vs bare torch.compile and peers, {what}  ({rel(model)})")
    shared = None if cold else h.dirs.new("inductor-warm")
    out = h.dirs.root / f"{temp}-out.yaml"
    tlparse = find_tlparse()
    tools = peers(tlparse)
    sides = [("tcinspect", "tcinspect trace", side(h, "tcinspect", model, shared, out, tlparse))]
    sides += [(key, label, side(h, key, model, shared, out, tlparse)) for key, label, skip in tools if skip is None]
    caches: dict[str, list[str]] = {key: [] for key, _, _ in sides}

    def record_cache(key: str, r: RunResult) -> None:
        if key == "tcinspect":  # the report's summary
            text = out.read_text() if out.exists() else ""
            hits = re.search(r"^\s*cache_hits:\s*(\d+)", text, re.M)
            misses = re.search(r"^\s*cache_misses:\s*(\d+)", text, re.M)
            caches[key].append(f"{hits.group(1)}/{misses.group(1)}" if hits and misses else "?")
        else:  # the line the bare script prints
            m = re.search(r"^BENCH_CACHE (\d+) (\d+)", r.stdout, re.M)
            caches[key].append(f"{m.group(1)}/{m.group(2)}" if m else "?")

    samples = h.interleave_sides(sides, runs, warmup=not cold, on_result=record_cache)
    tc = samples["tcinspect"]
    for key, label, skip in tools:
        # ("below", 1.0): faster than every peer
        target = ("ratio", 1.10 if cold else 1.05) if key == "bare" else ("below", 1.0)
        row = Row(f"trace vs {label} ({temp})", rel(model), "tcinspect trace", label, target=target)
        if skip:
            row.skipped = skip
            h.log(f"    {label}: {skip}")
            h.rows.append(row)
            continue
        row.a, row.a_rss_kb, row.a_cmd, row.a_cache = list(tc["s"]), list(tc["rss"]), tc["cmd"], caches["tcinspect"]
        s = samples[key]
        row.b, row.b_rss_kb, row.b_cmd, row.b_cache = list(s["s"]), list(s["rss"]), s["cmd"], caches[key]
        h.log(f"    {label}:")
        h.check_cache(row, expect_hits=not cold)
        h.rows.append(row)
    if not cold:
        h.warm_dir = shared
