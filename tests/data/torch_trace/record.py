"""Record TORCH_TRACE logs beside tcinspect's live report of the same run (tests/test_torchtrace.py).

    python tests/data/torch_trace/record.py [--device cuda] [MODEL ...]

Each model file is captured in a child process with ``TORCH_TRACE`` set, so PyTorch's own trace
handler writes its log while tcinspect's recorder builds the live report from the same records.
Written to tests/data/torch_trace/torch-<version>/: ``<model>.log.gz`` (the log as torch wrote it,
with the interpreter's and the model directory's paths rewritten to /home/user/... and each
rewritten payload's md5 recomputed) and ``<model>.live.json.gz`` (the live report, same rewrite).

With ``--device cuda`` (a GPU machine) the folder is torch-<version>-cuda/ and the models run on the GPU.
torch-2.11.0-cuda/ (tiny, graph_breaks, transformer_block, lenet_triton_relu) was recorded on an H100 with
torch 2.11.0+cu130 by the same steps (``capture_file(path, fresh=True, quiet=True,
compile=CompileOptions(device="cuda"))`` in a process with TORCH_TRACE set, run from a checkout's root) and its
paths rewritten by ``python tests/data/torch_trace/record.py --rewrite RAW_DIR DEST_DIR OLD=NEW ...``.
``ddp_rank_branch`` runs on 2 ranks (``tcinspect trace --nproc 2``, so torchrun's ranks write
``dedicated_log_torch_trace_rank_N_*.log``): its folder holds both rank logs and the merged live report.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent
MODELS = {
    "tiny": ROOT / "sample_models" / "tiny.py",  # Linear -> ReLU -> x0.5, forward + backward
    "graph_breaks": ROOT / "sample_models" / "graph_breaks.py",  # 3 graph breaks
    "recompile_scalar": ROOT / "sample_models" / "recompile_scalar.py",  # a Python scalar changes: 1 recompile
    "ddp_rank_branch": ROOT / "sample_models" / "ddp_rank_branch.py",  # 2 ranks (gloo); rank 1 breaks the graph
    "transformer_block": ROOT / "sample_models" / "transformer_block.py",  # 2 encoder layers: attention, norms
    "lenet_triton_relu": ROOT / "sample_models" / "lenet_triton_relu.py",  # a user Triton kernel (CUDA only)
    # GPT-2 trained on four lengths: shape guards its backward compile evaluates but never installs (test_shapes)
    "gpt2_train_lengths": ROOT / "tests" / "models" / "gpt2_train_lengths.py",
}
RANKS = {"ddp_rank_branch": 2}
HOME = "/home/user"


def _child(model: str, out: str, device: str) -> None:
    from tcinspect import serialize
    from tcinspect.capturing.engine import capture_file
    from tcinspect.report import CompileOptions

    rep = capture_file(model, fresh=True, quiet=True, compile=CompileOptions(device=device))
    Path(out).write_text(json.dumps(serialize.to_dict(rep)), encoding="utf-8")


def _rewrite(text: str, swaps: list[tuple[str, str]]) -> str:
    for old, new in swaps:
        text = text.replace(old, new)
    return text


def _rewrite_log(raw: str, swaps: list[tuple[str, str]]) -> str:
    """The log with paths swapped, each payload's has_payload md5 recomputed for its new text."""
    out: list[str] = []
    records: list[list[str]] = []
    for line in raw.split("\n"):
        if line.startswith("\t") and records:
            records[-1].append(line)
        elif line:
            records.append([line])
    for rec in records:
        head, payload = _rewrite(rec[0], swaps), [_rewrite(p, swaps) for p in rec[1:]]
        if payload:
            prefix, _, meta = head.partition("] ")
            data = json.loads(meta)
            data["has_payload"] = hashlib.md5("\n".join(p[1:] for p in payload).encode("utf-8")).hexdigest()
            head = f"{prefix}] {json.dumps(data)}"
        out.append("\n".join([head, *payload]))
    return "\n".join(out) + "\n"


def save_rank_logs(trace: Path, dest: Path, extra: list[tuple[str, str]] | None = None) -> None:
    """A torchrun job's rank logs (``trace``'s dedicated_log_torch_trace_*.log), written to ``dest`` gzipped with the
    interpreter's and the checkout's paths rewritten (and ``extra`` swaps), each payload's md5 recomputed; the rank
    logs an earlier recording left in ``dest`` are removed first."""
    swaps = [(sys.prefix, f"{HOME}/.venv"), (str(Path(sys.prefix).resolve()), f"{HOME}/.venv"),
             (str(ROOT), f"{HOME}/tcinspect"), *(extra or [])]
    for old in dest.glob("dedicated_log_torch_trace_*.log.gz"):
        old.unlink()
    for log in sorted(trace.glob("dedicated_log_torch_trace_*.log")):
        with gzip.open(dest / f"{log.name}.gz", "wt", encoding="utf-8") as fh:
            fh.write(_rewrite_log(log.read_text(encoding="utf-8"), swaps))


def record(name: str, device: str = "") -> None:
    import torch

    dest = HERE / f"torch-{torch.__version__.split('+')[0]}{'-' + device if device else ''}"
    dest.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        models, logs = t / "models", t / "trace"
        models.mkdir()
        model = models / MODELS[name].name
        shutil.copy(MODELS[name], model)
        env = dict(os.environ, TORCH_TRACE=str(logs))
        if name in RANKS:  # torchrun's ranks inherit TORCH_TRACE; the parent imports no torch and writes no log
            subprocess.run([sys.executable, "-m", "tcinspect", "trace", str(model), "--nproc", str(RANKS[name]), "--fresh",
                            "-f", "json", "-o", str(t / "live.json")], env=env, check=True, stdout=subprocess.DEVNULL)
        else:
            subprocess.run([sys.executable, __file__, "--child", str(model), str(t / "live.json"), device], env=env,
                           check=True)
        swaps = [(str(models), f"{HOME}/models"), (sys.prefix, f"{HOME}/.venv"),
                 (str(Path(sys.prefix).resolve()), f"{HOME}/.venv"), (str(ROOT), f"{HOME}/tcinspect")]
        found = sorted(logs.glob("dedicated_log_torch_trace_*.log"))
        if name in RANKS:
            dest = dest / name
            dest.mkdir(exist_ok=True)
        for log in found:
            text = _rewrite_log(log.read_text(encoding="utf-8"), swaps)
            out = log.name if name in RANKS else f"{name}.log"
            with gzip.open(dest / f"{out}.gz", "wt", encoding="utf-8") as fh:
                fh.write(text)
        with gzip.open(dest / f"{name}.live.json.gz", "wt", encoding="utf-8") as fh:
            fh.write(_rewrite((t / "live.json").read_text(encoding="utf-8"), [(o, n) for o, n in swaps]))
    print(f"recorded {name} -> {dest}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1:2] == ["--rewrite"]:  # files recorded elsewhere: <model>.log.gz and <model>.live.json.gz
        raw, dest, pairs = Path(sys.argv[2]), Path(sys.argv[3]), [tuple(a.split("=", 1)) for a in sys.argv[4:]]
        dest.mkdir(parents=True, exist_ok=True)
        for f in sorted(raw.glob("*.gz")):
            with gzip.open(f, "rt", encoding="utf-8") as fh:
                text = fh.read()
            text = _rewrite_log(text, pairs) if f.name.endswith(".log.gz") else _rewrite(text, pairs)
            with gzip.open(dest / f.name, "wt", encoding="utf-8") as fh:
                fh.write(text)
    else:
        args = sys.argv[1:]
        on = args[1] if args[:1] == ["--device"] else ""
        names = args[2:] if on else args
        for n in names or ["tiny", "graph_breaks", "recompile_scalar", "ddp_rank_branch"]:
            record(n, on)
