"""Shared fixtures: compiled captures are session-scoped (Inductor on 2 CPU cores is slow)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_models"
DATA = Path(__file__).resolve().parent / "data"
MODELS = Path(__file__).resolve().parent / "models"


@pytest.fixture(autouse=True)
def _private_report_cache(tmp_path, monkeypatch):
    """Every test gets its own tcinspect report cache, so no test reuses another's report."""
    monkeypatch.setenv("TCINSPECT_CACHE_DIR", str(tmp_path / "tcinspect-cache"))


@pytest.fixture(autouse=True)
def _compile_in_process(monkeypatch):
    """The CLI compiles in a child process by default; here torch is already imported, and a child would
    import it again (3-4 s a test). tests/test_corpus.py's crash rows and tests/test_misuse.py test the
    default by removing this."""
    monkeypatch.setenv("TCINSPECT_IN_PROCESS", "1")


@pytest.fixture(scope="session")
def inductor_cache(tmp_path_factory):
    """One Inductor cache for the whole session: the second compile of a model is warm."""
    from torch._inductor import config as inductor_config

    d = tmp_path_factory.mktemp("inductor-cache")
    old = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(d)
    # The suite's "user" tracks provenance (level 1, here and in child processes): tcinspect saves the
    # entries of such a user's compiles, so later captures of the same model in the session are warm.
    # At the default level 0 tcinspect saves none (tests/test_caches.py tests that).
    old_level, old_env = inductor_config.trace.provenance_tracking_level, os.environ.get("INDUCTOR_PROVENANCE")
    inductor_config.trace.provenance_tracking_level = 1
    os.environ["INDUCTOR_PROVENANCE"] = "1"
    yield d
    inductor_config.trace.provenance_tracking_level = old_level
    for key, value in (("TORCHINDUCTOR_CACHE_DIR", old), ("INDUCTOR_PROVENANCE", old_env)):
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def tiny_report(inductor_cache):
    """sample_models/tiny.py through Inductor (C++ kernels), forward + backward, cold."""
    from tcinspect.capturing.engine import capture_file

    return capture_file(SAMPLES / "tiny.py")


@pytest.fixture(scope="session")
def breaks_report(inductor_cache):
    """sample_models/graph_breaks.py through aot_eager (Dynamo + AOTAutograd, no Inductor)."""
    from tcinspect.capturing.engine import capture_file
    from tcinspect.report import Options

    return capture_file(SAMPLES / "graph_breaks.py", options=Options(backend="aot_eager"))


def run_cli(*args: str, env: dict | None = None, cwd: Path | None = None, timeout: int = 600):
    """Run the real CLI in a subprocess; returns CompletedProcess with text output."""
    import subprocess

    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "tcinspect", *args], capture_output=True, text=True,
                          env=full_env, cwd=cwd or ROOT, timeout=timeout)


def launched(wrapper: str) -> list[str]:
    """Oracle: the kernels an Inductor wrapper's call() launches, read with plain regexes."""
    import re

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


def cli(capsys, *args):
    """Run the CLI in-process through its error boundary: (exit code, stdout, stderr)."""
    from tcinspect.cli import main

    code = main(list(args))
    return (code, *capsys.readouterr())


@pytest.fixture(scope="session")
def conformance(inductor_cache):
    """The conformance cases, built on first use and shared: ``conformance(name, backend)`` -> Case
    (tcinspect's report and torch's ground truth for the same model, same process; see conformance.py)."""
    import conformance as harness

    built: dict = {}

    def get(name: str, backend: str = "aot_eager"):
        import torch._dynamo

        if (name, backend) not in built:
            # Dynamo's profile-guided dynamic shapes would carry what the first of the two runs learnt
            # (written to the cache directory) into the second: each run starts from nothing instead
            with torch._dynamo.config.patch(automatic_dynamic_local_pgo=False):
                built[name, backend] = _build_case(harness, name, backend)
        return built[name, backend]

    return get


#: Further input sets per Hugging Face case (each one a recompile): longer sequences.
_HF_INPUT_SETS = {"switch_transformers": lambda hf: [(hf._ids(128, seq=12), None, hf._ids(128, seq=6))]}


def _build_case(harness, name: str, backend: str):
    from conformance_models import hf
    from tcinspect.capturing.engine import capture, capture_file
    from tcinspect.report import Options

    options = Options(backend=backend)
    if name in hf.BUILDERS:
        def make():
            model, inputs = hf.BUILDERS[name]()
            return model, inputs, _HF_INPUT_SETS.get(name, lambda _: [])(hf)

        truth = harness.ground_truth(make, backend=backend)
        model, inputs, sets = make()
        report = capture(model, *inputs, input_sets=sets, options=options)
        return harness.Case(name, report, truth, model, inputs)
    if name == "train_script":
        path = harness.MODELS / "train_script.py"
        truth = harness.script_truth(path)
        return harness.Case(name, capture_file(path), truth)
    path = {"mlp_train": harness.MODELS / "mlp_train.py", "two_file": harness.MODELS / "two_file" / "model.py",
            "resnet": harness.MODELS / "resnet.py", "adamw_step": harness.MODELS / "adamw_step.py"}[name]
    truth = harness.ground_truth(lambda: harness.load_model_file(path), backend=backend)
    return harness.Case(name, capture_file(path, options=options), truth)


@pytest.fixture(scope="session")
def bert_kwargs_report():
    """tests/models/bert_kwargs.py (Hugging Face BERT called with keywords; its first call sets
    config.problem_type, so the input set recompiles) through the eager backend."""
    from tcinspect.capturing.engine import capture_file
    from tcinspect.report import Options

    return capture_file(MODELS / "bert_kwargs.py", options=Options(backend="eager"))
