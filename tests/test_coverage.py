"""Coverage: PyTorch CI's calls_captured, unique_graphs and fallbacks_to_eager in every report, equal to Dynamo's
counters of the same run (tests/test_conformance.py checks the conformance corpus the same way), from a capture and
from the TORCH_TRACE log of the user's own plain run; and the frame torch ran eagerly, named where it gave up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import yaml

from helpers import MODELS, cli
from tcinspect.capturing.engine import capture_file
from tcinspect.parse import rankpool
from tcinspect.report import CompileOptions

pytestmark = pytest.mark.torch

NANOGPT_PRINT = MODELS / "nanogpt_print.py"

#: The user's own plain run of a model file: torch.compile, one training step, then Dynamo's counters as PyTorch
#: CI's benchmarks/dynamo/check_graph_breaks.py reads them (printed as the last line).
_PLAIN_RUN = textwrap.dedent("""
    import json, runpy, sys
    import torch
    from torch._dynamo.utils import counters
    ns = runpy.run_path(sys.argv[1])
    out = torch.compile(ns["model"], backend="aot_eager")(*ns["example_inputs"])
    out[1].backward()
    print(json.dumps({"calls_captured": counters["stats"]["calls_captured"],
                      "unique_graphs": counters["stats"]["unique_graphs"],
                      "fallbacks_to_eager": counters["frames"]["total"] - counters["frames"]["ok"]}))
""")


def _figures(cov) -> dict:
    return {"calls_captured": cov.calls_captured, "unique_graphs": cov.unique_graphs,
            "fallbacks_to_eager": cov.fallbacks_to_eager}


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory):
    """The TORCH_TRACE log and the counters of one plain run of nanoGPT with a print in its block loop."""
    logs = tmp_path_factory.mktemp("trace")
    env = {**os.environ, "TORCH_TRACE": str(logs)}
    done = subprocess.run([sys.executable, "-c", _PLAIN_RUN, str(NANOGPT_PRINT)], env=env, capture_output=True,
                          text=True, timeout=600, check=True)
    return logs, json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def captured():
    return capture_file(NANOGPT_PRINT, compile=CompileOptions(backend="aot_eager"))


def test_a_capture_states_the_counters_of_its_run(captured, plain_run):
    _, counters = plain_run
    cov = captured.coverage
    assert cov.source == "counters" and _figures(cov) == counters
    assert counters["fallbacks_to_eager"] == 1 and counters["calls_captured"] > 0  # what the model is known for
    s = captured.summary
    assert (s.calls_captured, s.unique_graphs, s.fallbacks_to_eager) == tuple(counters.values())


def test_the_frame_run_eagerly_is_named_where_torch_gave_up(captured):
    [eager] = captured.coverage.eager_frames
    src = NANOGPT_PRINT.read_text().splitlines()
    # GPT.forward, given up at the print, with torch's own reason
    assert eager.function == "forward" and src[eager.line - 1].strip().startswith("def forward(self, idx")
    assert eager.user_frame is not None and eager.user_frame.code == "print(x.shape)"
    assert src[eager.user_frame.line - 1].strip() == "print(x.shape)"
    assert eager.fail_type == "Unsupported" and eager.reason
    # the calls captured are the blocks' graph: every compile's graph together
    assert sum(f.calls_captured for f in captured.coverage.frames) == captured.coverage.calls_captured


def test_the_users_own_log_gives_the_counters_of_its_run(plain_run):
    logs, counters = plain_run
    rep = rankpool.read(logs)
    cov = rep.coverage
    assert cov.source == "compilation_metrics" and _figures(cov) == counters
    assert cov.graph_break_counter == -1  # not in a log: not guessed
    assert cov.runtime is not None and "TORCH_TRACE log" in cov.runtime.not_measured
    [eager] = cov.eager_frames
    assert eager.user_frame is not None and eager.user_frame.code == "print(x.shape)"


def test_check_fails_when_less_of_the_model_runs_compiled(capsys, tmp_path, monkeypatch):
    # PyTorch CI's gate: a clean nanoGPT is the baseline; the same file with a print in its block loop makes torch
    # run GPT.forward eagerly. Fewer calls captured and a frame run eagerly fail, naming the frame and the line;
    # the smaller saved bytes that follow are not an improvement
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TCINSPECT_CACHE_DIR", str(tmp_path / "cache"))
    model = tmp_path / "model.py"
    model.write_text((MODELS.parent / "conformance_models" / "nanogpt.py").read_text())
    opts = ("--backend", "aot_eager", "--baseline", "base.yaml")
    assert cli(capsys, "check", "model.py", *opts, "--update")[0] == 0
    model.write_text(NANOGPT_PRINT.read_text())
    code, out, _ = cli(capsys, "check", "model.py", *opts, "--format", "json")
    findings = {f["check"]: f for f in json.loads(out)["findings"]}
    assert code == 1
    base = yaml.safe_load((tmp_path / "base.yaml").read_text())["models"]["model.py"]
    assert findings["calls_captured"]["status"] == "fail", (findings["calls_captured"], base)
    assert f"< baseline {base['calls_captured']}" in findings["calls_captured"]["message"]
    assert findings["fallbacks_to_eager"]["status"] == "fail"
    assert "given up at model.py:" in findings["fallbacks_to_eager"]["message"]
    assert "print(x.shape)" in findings["fallbacks_to_eager"]["message"]
    assert not [f for f in findings.values() if f["status"] == "improved"]
    assert "not an improvement" in findings["saved_bytes"]["message"]
    # a budget on eager frames, without a baseline
    code, out, _ = cli(capsys, "check", "model.py", "--backend", "aot_eager", "--max-fallbacks-to-eager", "0")
    assert code == 1 and "fallbacks_to_eager 1 > max 0" in out
