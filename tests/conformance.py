"""The conformance harness: each model through tcinspect and through torch's own ground truth, in one process.

A ``Case`` holds the tcinspect report of a model and ``Truth``, what torch itself says about the
same compile, taken in the same process just before:

- ``graphs``: how many graphs Dynamo handed to the backend (a counting backend around aot_eager or
  Inductor), and Dynamo's own ``counters["stats"]["unique_graphs"]``;
- ``graph_break_counter``: ``counters["graph_break"]`` after the run (message -> count);
- ``explain_break_sites``: the user frame of every break torch's explain machinery reports
  (``ExplainWithBackend`` around the counting backend: what ``torch._dynamo.explain`` reads, in the same run);
- ``recompiles``: compile ids of ``get_compilation_metrics()`` that recompiled a frame (``a/b``, b > 0);
- ``ops_per_graph``: the call_function / call_method / call_module nodes of each graph the counting
  backend was handed, in order (``len(gm.graph.nodes)`` less placeholders, outputs and get_attr);
- ``kernels`` / ``output_code``: for Inductor cases, what ``run_and_get_code`` returns.

Session fixtures in conftest.py build one Case per model; tests (and later checks, such as per-kernel
provenance on the Inductor cases) read them.
"""

from __future__ import annotations

import os
import runpy
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

MODELS = Path(__file__).resolve().parent / "conformance_models"


@dataclass
class Truth:
    """What torch says about one compile of the model (same inputs, same process)."""

    graphs: int
    unique_graphs: int
    graph_break_counter: dict[str, int]
    explain_break_sites: set[tuple[str, int]]
    recompiles: list[str]
    kernels: Optional[list[str]] = None
    output_code: list[str] = field(default_factory=list)
    ops_per_graph: list[int] = field(default_factory=list)
    #: (compile id, the exception's type or "") of each graph handed to the backend, in order
    handed: list[tuple[str, str]] = field(default_factory=list)
    #: PyTorch CI's coverage figures from Dynamo's counters after the run: calls_captured, unique_graphs,
    #: fallbacks_to_eager (counters["frames"]["total"] - ["ok"])
    coverage: dict[str, int] = field(default_factory=dict)


def coverage_counters() -> dict[str, int]:
    """calls_captured, unique_graphs and fallbacks_to_eager as benchmarks/dynamo/check_graph_breaks.py reads them."""
    from torch._dynamo.utils import counters

    return {"calls_captured": int(counters["stats"]["calls_captured"]),
            "unique_graphs": int(counters["stats"]["unique_graphs"]),
            "fallbacks_to_eager": int(counters["frames"]["total"] - counters["frames"]["ok"])}


@dataclass
class Case:
    name: str
    report: Any  # tcinspect.report.Report
    truth: Truth
    model: Any = None
    inputs: tuple = ()


@contextmanager
def on_path(directory: Path) -> Iterator[None]:
    sys.path.insert(0, str(directory))
    try:
        yield
    finally:
        sys.path.remove(str(directory))


def load_model_file(path: Path) -> tuple[Any, tuple, list]:
    """A model file's model, example_inputs and input_sets, imported as Python would."""
    with on_path(path.parent):
        ns = runpy.run_path(str(path))
    return ns["model"], tuple(ns["example_inputs"]), list(ns.get("input_sets", []))


def _reset() -> None:
    import torch._dynamo
    from torch._dynamo.utils import clear_compilation_metrics, counters

    torch._dynamo.reset()
    counters.clear()
    clear_compilation_metrics()


def _step(fn: Callable[..., Any], inputs: tuple, backward: bool) -> Any:
    from tcinspect.capturing.outputs import scalar_loss

    out = fn(*inputs)
    loss = scalar_loss(out) if backward else None
    if loss is not None:
        loss.backward()
    return out


def ground_truth(make: Callable[[], tuple[Any, tuple, list]], *, backend: str = "aot_eager",
                 backward: bool = True) -> Truth:
    """Compile a model with a counting backend and ask torch's own records what happened.

    ``make`` builds the model and its inputs afresh (same seed) for each run: a model may change
    its own state while it runs (Switch Transformers' router does), so no run may see another's.
    """
    import torch
    from torch._dynamo.utils import counters, get_compilation_metrics

    model, inputs, input_sets = make()

    handed = [0]
    ops: list[int] = []
    inner = torch._dynamo.lookup_backend(backend)

    seen: list[tuple[str, str]] = []

    def counting(gm: Any, example_inputs: Any) -> Any:
        from torch._guards import CompileContext

        handed[0] += 1
        ops.append(op_count(gm))
        seen.append((str(CompileContext.current_compile_id()), ""))
        try:
            return inner(gm, example_inputs)
        except Exception as exc:
            seen[-1] = (seen[-1][0], type(exc).__name__)
            raise

    kernels: Optional[list[str]] = None
    code: list[str] = []
    # torch._dynamo.explain's own graph detail (_explain_graph_detail), gathered in this run rather than in a
    # second compile of the model: every graph's compile_subgraph_reason, over every input set
    from torch._dynamo.backends.debugging import ExplainWithBackend

    explainer = ExplainWithBackend(counting)
    _reset()
    try:
        compiled = torch.compile(model, backend=explainer)

        def run_all() -> None:
            for args in (inputs, *input_sets):
                _step(compiled, args, backward)

        if backend == "inductor":
            from torch._inductor.utils import run_and_get_code

            from helpers import launched

            _, code = run_and_get_code(run_all)
            kernels = [name for c in code for name in launched(c)]
        else:
            run_all()
        unique = int(counters["stats"]["unique_graphs"])
        breaks = dict(counters["graph_break"])
        coverage = coverage_counters()
        # compilation_metrics holds a second entry for a compile's backward: each compile id once
        recompiles = list(dict.fromkeys(m.compile_id for m in get_compilation_metrics()
                                        if m.compile_id and int(str(m.compile_id).split("/")[-1]) > 0))
        sites = {(os.path.basename(r.user_stack[-1].filename), r.user_stack[-1].lineno)
                 for r in explainer.output().break_reasons if r.user_stack}
    finally:
        _reset()
    return Truth(handed[0], unique, breaks, sites, recompiles, kernels, list(code), ops, seen, coverage)


def op_count(gm: Any) -> int:
    """A graph's operations as torch holds them: its call_function, call_method and call_module nodes."""
    return sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module"))


def script_truth(path: Path) -> Truth:
    """Run a script as __main__ (its own torch.compile calls) and read Dynamo's counters."""
    from torch._dynamo.utils import counters, get_compilation_metrics

    _reset()
    old_argv = list(sys.argv)
    try:
        sys.argv = [str(path)]
        with on_path(path.parent):
            runpy.run_path(str(path), run_name="__main__")
        unique = int(counters["stats"]["unique_graphs"])
        metrics = get_compilation_metrics()
        # the script picks its own backends: each graph's op count is the one Dynamo recorded with its
        # compile (compilation_metrics' graph_op_count, torch._dynamo.utils.count_calls of the graph)
        return Truth(unique, unique, dict(counters["graph_break"]), set(),
                     list(dict.fromkeys(m.compile_id for m in metrics
                                        if m.compile_id and int(str(m.compile_id).split("/")[-1]) > 0)),
                     # a compile that made no graph records 0 (Dynamo hands no empty graph to a backend)
                     ops_per_graph=[m.graph_op_count for m in metrics if m.graph_op_count],
                     coverage=coverage_counters())
    finally:
        sys.argv = old_argv
        _reset()


def not_in_counter(b: Any) -> bool:
    """A graph-break event counters["graph_break"] leaves out (torch 2.13 symbolic_convert counts only
    a break it resumes after): a data-dependent branch (jump_graph_break), a break after which Dynamo
    skips the rest of the frame or the whole frame, and the break Dynamo adds when the backend failed."""
    text = b.raw or b.reason
    return b.break_type in ("Data-dependent branching", "Backend compiler exception") or any(
        s in text for s in ("cannot resume from", "Skipping the function", "results in a skip"))


def break_type_counts(counter: dict[str, int]) -> Counter:
    """``counters["graph_break"]`` by break type: each message's first line is the registry's type."""
    out: Counter = Counter()
    for message, n in counter.items():
        out[message.splitlines()[0].strip()] += n
    return out
