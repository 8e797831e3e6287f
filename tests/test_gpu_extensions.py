"""On a CUDA GPU: user Triton kernels by name, `verify` on the Triton samples, the seed's export matrix."""

from __future__ import annotations

import json

import pytest
import torch

from helpers import SAMPLES, cli
from tcinspect.capturing.engine import capture_file

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


@pytest.mark.parametrize("sample, kernel, op", [
    ("lenet_triton_relu.py", "relu_kernel", None),
    ("silu_triton_op.py", "triton_silu_kernel", "tcinspect_samples.silu"),
])
def test_user_kernel_by_name_with_grid_source_and_visibility(sample, kernel, op):
    rep = capture_file(SAMPLES / sample)
    assert rep.ok
    kernels = rep.stages.aot_autograd.user_kernels
    assert kernels and {k.name for k in kernels} == {kernel}
    for k in kernels:
        assert k.grid.startswith("[(") and f"def {kernel}" in k.source and k.tensor_args and k.mutated
    ops = {o.name: o.visibility for o in rep.stages.aot_autograd.custom_ops}
    if op is not None:
        assert ops.get(op) == "transparent"
    # Inductor launched the same kernel as a user kernel
    assert any(kk.kind == "user_triton" and kk.name.startswith(kernel) for o in rep.stages.inductor.outputs
               for kk in o.kernels)


@pytest.mark.parametrize("sample, extra", [("lenet_triton_relu.py", ()), ("silu_triton_op.py", ()),
                                           ("silu_export_matrix.py", ("--model", "model_triton_op"))])
def test_verify_passes_on_the_triton_samples(capsys, sample, extra):
    code, out, err = cli(capsys, "verify", str(SAMPLES / sample), *extra, "-f", "json")
    assert code == 0, err[-3000:]
    v = json.loads(out)["verification"]
    assert v["ok"] and v["tensors"]


# The seed article's table: (silu op, export mode) -> exported?
SEED_MATRIX = {("model_triton_op", "strict"): True, ("model_triton_op", "non-strict"): True,
               ("model_plain", "strict"): True, ("model_plain", "non-strict"): False}


@pytest.mark.parametrize("name", ["model_triton_op", "model_plain"])
def test_export_matrix_matches_the_seed(capsys, name):
    code, out, _err = cli(capsys, "export", str(SAMPLES / "silu_export_matrix.py"), "--model", name,
                         "--dynamic-dim", "0", "-f", "json")
    runs = {e["mode"]: e for e in json.loads(out)["exports"]}
    got = {(name, mode): runs[mode]["ok"] for mode in ("strict", "non-strict")}
    assert got == {k: v for k, v in SEED_MATRIX.items() if k[0] == name}, {m: runs[m]["error"] for m in runs}
    assert code == (0 if all(got.values()) else 1)
    for run in runs.values():
        if run["ok"]:
            x = next(n for n in run["graph"]["nodes"] if n["name"] == "x")
            assert x["shape"][0].startswith("s")  # the batch dimension is dynamic


def test_export_aoti_on_the_triton_op(capsys):
    """AOTInductor runs in a child process: whatever it does with the user kernel, tcinspect reports it."""
    code, out, _err = cli(capsys, "export", str(SAMPLES / "silu_export_matrix.py"), "--model", "model_triton_op",
                         "--strict", "--aoti", "-f", "json")
    (run,) = json.loads(out)["exports"]
    print("AOTI:", run["aoti"])  # the log says which it was on this torch
    assert run["ok"] and run["aoti"] is not None
    assert code == (0 if run["aoti"]["ok"] else 1)
    assert run["aoti"]["ok"] or run["aoti"]["error"]
