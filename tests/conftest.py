"""Shared fixtures (compiled captures are session-scoped: Inductor on 2 CPU cores is slow) and the hooks that
keep the markers true: ``torch`` on every test that needs torch, and a run that deselects them (``pytest -m
"not torch"``) never imports torch (see docs/testing.md)."""

from __future__ import annotations

import ast
import functools
import importlib.abc
import inspect
import itertools
import os
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import MODELS, SAMPLES

# The terminal the tests run in does not choose their output's width: the CLI writes 120 columns to a pipe unless
# COLUMNS says otherwise, and a shell (or pytest-xdist's workers, which set COLUMNS=80) may say otherwise. A test
# that wants a width sets COLUMNS itself.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)

#: The session fixtures that run torch: a test using any of them (directly or through another fixture) is
#: marked ``torch``; those that compile with Inductor mark it ``slow`` as well.
TORCH_FIXTURES = {"inductor_cache", "tiny_report", "breaks_report", "conformance", "bert_kwargs_report"}
INDUCTOR_FIXTURES = {"tiny_report"}
#: Markers that mean torch is needed: a test with any of them is marked ``torch`` too.
IMPLY_TORCH = {"slow", "gpu", "distributed", "conformance"}


def _module_marks(path: Path) -> set[str]:
    """The marker names of a test module's ``pytestmark``, read without importing it, plus ``torch`` where the
    module imports torch at its top level."""
    tree = ast.parse(path.read_bytes(), filename=str(path))
    marks: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            marks |= {n.attr for n in ast.walk(node.value) if isinstance(n, ast.Attribute)
                      and isinstance(n.value, ast.Attribute) and n.value.attr == "mark"}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(m.split(".")[0] == "torch" for m in modules):
                marks.add("torch")
    if marks & IMPLY_TORCH:
        marks.add("torch")
    return marks


_RUNS_TORCH = {"capture", "capture_file", "assert_compiles", "load_callable"}


@functools.cache
def _body_needs_torch(func) -> bool:
    """Whether a test or fixture function imports torch (or tcinspect's capturing package) in its body, or calls
    one of tcinspect's capture entry points."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(m.split(".")[0] == "torch" or m.startswith("tcinspect.capturing") for m in modules):
                return True
        elif isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if name in _RUNS_TORCH:
                return True
    return False


def _needs_torch(item) -> bool:
    """A test needs torch where its own body or any fixture it uses (its whole closure) does."""
    if _body_needs_torch(getattr(item, "function", None)):
        return True
    info = getattr(item, "_fixtureinfo", None)
    for name in getattr(item, "fixturenames", ()):
        if name in TORCH_FIXTURES:
            return True
        for fixturedef in (info.name2fixturedefs.get(name, ()) if info else ()):
            if _body_needs_torch(fixturedef.func):
                return True
    return False


def _deselects_torch(config) -> bool:
    """Whether the ``-m`` expression leaves out every test marked ``torch``, whatever its other markers."""
    expr = config.option.markexpr
    if not expr:
        return False
    from _pytest.mark.expression import Expression

    compiled = Expression.compile(expr)
    names = sorted({line.split(":")[0].strip() for line in config.getini("markers")} - {"torch"})
    for values in itertools.product((False, True), repeat=len(names)):
        marks = dict(zip(names, values), torch=True)
        if compiled.evaluate(lambda name, /, marks=marks, **kwargs: marks.get(name, False)):
            return False
    return True


class _NoTorch(importlib.abc.MetaPathFinder):
    """In the torch-free layer: any import of torch fails, and is remembered so that the test fails too (even
    where the code under test catches the ImportError)."""

    def __init__(self) -> None:
        self.tried: list[str] = []

    def find_spec(self, fullname, path=None, target=None):
        if fullname == "torch" or fullname.startswith("torch."):
            self.tried.append(fullname)
            raise ModuleNotFoundError(f"the torch-free layer imported {fullname}: mark the test `torch`")
        return None


_no_torch: _NoTorch | None = None

#: Installed in the torch-free layer's child processes (a ``sitecustomize`` on their PYTHONPATH): the same
#: finder, writing what it refused to the file the parent reads after each test.
_CHILD_FINDER = """import importlib.abc, os, sys


class _NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname == "torch" or fullname.startswith("torch."):
            with open(os.environ["TCINSPECT_TEST_TORCH_TRIED"], "a") as f:
                f.write(fullname + " (in a child process)\\n")
            raise ModuleNotFoundError(f"the torch-free layer imported {fullname}: mark the test `torch`")
        return None


sys.meta_path.insert(0, _NoTorch())
"""


def pytest_configure(config):
    global _no_torch
    if _deselects_torch(config) and _no_torch is None:
        _no_torch = _NoTorch()
        sys.meta_path.insert(0, _no_torch)
        import tempfile

        child = Path(tempfile.mkdtemp(prefix="tcinspect-no-torch-"))
        (child / "sitecustomize.py").write_text(_CHILD_FINDER)
        os.environ["TCINSPECT_TEST_TORCH_TRIED"] = str(child / "tried.txt")
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(child), os.environ.get("PYTHONPATH")]))
        _children_refuse_torch(str(child))


def _children_refuse_torch(child: str) -> None:
    """Every child process gets the finder, also one started with an environment of its own."""
    import subprocess

    original = subprocess.Popen.__init__

    def init(self, *args, **kwargs):
        env = kwargs.get("env")
        if env is not None:
            env = dict(env, TCINSPECT_TEST_TORCH_TRIED=os.environ["TCINSPECT_TEST_TORCH_TRIED"])
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [child, env.get("PYTHONPATH")]))
            kwargs["env"] = env
        original(self, *args, **kwargs)

    subprocess.Popen.__init__ = init  # type: ignore[method-assign]


class _NotCollected(pytest.Module):
    """A test module the torch-free layer leaves unimported: it collects nothing."""

    def collect(self):
        return []


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path, parent):
    """The torch-free layer does not import the test modules that need torch at their top level (named on the
    command line or found in a directory)."""
    if _no_torch is not None and "torch" in _module_marks(module_path):
        return _NotCollected.from_parent(parent, path=module_path)
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Before ``-m`` selects: ``torch`` on every test that needs it (its module's marks, markers that imply
    torch, its body or a fixture it uses importing torch or capturing), ``slow`` on those that use a fixture
    compiled with Inductor."""
    module_marks: dict[Path, set[str]] = {}
    for item in items:
        path = Path(str(item.fspath))
        if path not in module_marks:
            module_marks[path] = _module_marks(path) if path.suffix == ".py" else set()
        marked = {m.name for m in item.iter_markers()}
        names = marked | module_marks[path]  # "torch" there too where the module imports torch at its top
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & INDUCTOR_FIXTURES and "slow" not in names:
            item.add_marker(pytest.mark.slow)
            names.add("slow")
        # the marker itself, so that `-m torch` selects what `-m "not torch"` leaves out
        if "torch" not in marked and ("torch" in names or names & IMPLY_TORCH or _needs_torch(item)):
            item.add_marker(pytest.mark.torch)


def _tried_torch() -> list[str]:
    """What the torch-free layer refused since the last call, in this process and in its children."""
    assert _no_torch is not None
    tried, _no_torch.tried = _no_torch.tried, []
    in_children = Path(os.environ["TCINSPECT_TEST_TORCH_TRIED"])
    if in_children.exists():
        tried += in_children.read_text().split("\n")[:-1]
        in_children.unlink()
    return sorted(set(tried))


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """In the torch-free layer, a module whose import tried to import torch (even where it caught the error)
    is a collection error."""
    outcome = yield
    if _no_torch is not None and isinstance(collector, pytest.Module) and (tried := _tried_torch()):
        report = outcome.get_result()
        report.outcome = "failed"
        report.longrepr = (f"{collector.nodeid} imported {', '.join(tried)} in the torch-free layer: give the "
                           "module `pytestmark = pytest.mark.torch`")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """In the torch-free layer, a test whose setup, call or teardown tried to import torch, in this process or
    in a child, fails, naming the marker it lacks."""
    outcome = yield
    if call.when == "teardown":
        _check_slow(item, outcome.get_result())
    if _no_torch is not None and (tried := _tried_torch()):
        report = outcome.get_result()
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} imported {', '.join(tried)} in the "
                           "torch-free layer: mark it `torch` (pytestmark in its module, or a torch fixture)")


_INDUCTOR_RUNS = [0]


def _inductor_compiles():
    """How many times Inductor compiled (a cache hit included) in this process, read from torch's own timing of
    ``compile_fx_inner`` (``dynamo_utils.dynamo_timed("compile_fx_inner")``, torch 2.11-2.15): counted by a
    wrapper around ``dynamo_timed`` (installed once torch is imported), and torch's ``compilation_time_metrics``
    record (which ``torch._dynamo.reset()`` clears)."""
    utils = sys.modules.get("torch._dynamo.utils")
    if utils is None:
        return None
    timed = getattr(utils, "dynamo_timed", None)
    if timed is not None and not getattr(timed, "_tcinspect_counts", False):
        def counting(key, *args, **kwargs):
            if key == "compile_fx_inner":
                _INDUCTOR_RUNS[0] += 1
            return timed(key, *args, **kwargs)

        counting._tcinspect_counts = True  # type: ignore[attr-defined]
        utils.dynamo_timed = counting
    runs = getattr(utils, "compilation_time_metrics", {}).get("compile_fx_inner")
    return _INDUCTOR_RUNS[0], (id(runs), len(runs)) if runs is not None else None


_INDUCTOR_BEFORE = pytest.StashKey[object]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """A test that compiles with Inductor in this process (its setup included) must be marked ``slow``: the count
    before it, for the check after its teardown."""
    item.stash[_INDUCTOR_BEFORE] = _inductor_compiles()
    yield


def _check_slow(item, report) -> None:
    """A warning (``PytestWarning``, in the summary) names a test that compiled with Inductor unmarked."""
    before, now = item.stash.get(_INDUCTOR_BEFORE, None), _inductor_compiles()
    grew = now is not None and (before is None or now[0] != before[0] or (now[1] is not None and now[1] != before[1]))
    if grew and item.get_closest_marker("slow") is None and item.get_closest_marker("gpu") is None:
        item.warn(pytest.PytestWarning(f"{item.nodeid} compiled with Inductor: mark it `slow` (docs/testing.md)"))


def pytest_sessionfinish(session, exitstatus):
    if _no_torch is None:
        return
    if "torch" in sys.modules:  # the finder above makes this unreachable; it states what the layer promises
        sys.stderr.write("\nthe torch-free layer imported torch\n")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(autouse=True)
def _records_in_process_given_back():
    """A test that forgets this process's records of what it saw compiled (``records.forget_in_process``, as a new
    process would) gets them back after it: a session fixture's capture made before it (``tiny_report``) is recalled
    by the tests after it, in whichever order a worker runs the modules. Records the test added stay."""
    records = sys.modules.get("tcinspect.capturing.records")
    kept = dict(records._IN_PROCESS) if records is not None else {}
    yield
    if kept and records is not None:
        for key, record in kept.items():
            records._IN_PROCESS.setdefault(key, record)


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
    from tcinspect.report import CompileOptions

    return capture_file(SAMPLES / "graph_breaks.py", compile=CompileOptions(backend="aot_eager"))


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
    from tcinspect.report import CompileOptions

    options = CompileOptions(backend=backend)
    if name in hf.BUILDERS:
        def make():
            model, inputs = hf.BUILDERS[name]()
            return model, inputs, _HF_INPUT_SETS.get(name, lambda _: [])(hf)

        truth = harness.ground_truth(make, backend=backend)
        model, inputs, sets = make()
        report = capture(model, *inputs, input_sets=sets, compile=options)
        return harness.Case(name, report, truth, model, inputs)
    if name == "train_script":
        path = harness.MODELS / "train_script.py"
        truth = harness.script_truth(path)
        return harness.Case(name, capture_file(path), truth)
    path = {"mlp_train": harness.MODELS / "mlp_train.py", "two_file": harness.MODELS / "two_file" / "model.py",
            "resnet": harness.MODELS / "resnet.py", "adamw_step": harness.MODELS / "adamw_step.py"}[name]
    truth = harness.ground_truth(lambda: harness.load_model_file(path), backend=backend)
    return harness.Case(name, capture_file(path, compile=options), truth)


@pytest.fixture(scope="session")
def bert_kwargs_report():
    """tests/models/bert_kwargs.py (Hugging Face BERT called with keywords; its first call sets
    config.problem_type, so the input set recompiles) through the eager backend."""
    from tcinspect.capturing.engine import capture_file
    from tcinspect.report import CompileOptions

    return capture_file(MODELS / "bert_kwargs.py", compile=CompileOptions(backend="eager"))


#: Headless Chromium's flags for the browser tests: no sandbox (CI runs as root), and nothing that reaches out
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium (Debian's, driven by Playwright) for every browser test of the session: each test
    opens its own page. Tests that use it are marked ``needs_browser`` (tests/test_html.py), skipped without it."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        yield b
        b.close()
