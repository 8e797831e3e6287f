"""In-test use: assert that a model compiles within budgets, with a message that lists the breaks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Optional

from tcinspect.analysis.breaks import distinct_breaks
from tcinspect.analysis.check.judge import check_limits
from tcinspect.analysis.check.limits import Limits
from tcinspect.errors import UsageError
from tcinspect.report import CompileOptions, Report

#: ``assert_compiles``' default: Dynamo only, the fastest compile that counts breaks and recompiles.
DEFAULT_COMPILE = CompileOptions(backend="eager")


def assert_compiles(model: Any, *inputs: Any, compile: Optional[CompileOptions] = None,
                    input_sets: Sequence[tuple] = (), max_graph_breaks: Optional[int] = 0,
                    max_recompiles: Optional[int] = 0, max_graphs: Optional[int] = None,
                    max_kernels: Optional[int] = None, **old: Any) -> Report:
    """Compile ``model`` on ``inputs`` (then ``input_sets``) and fail unless every budget holds.

    Args:
        model: an ``nn.Module`` or callable.
        *inputs: its positional arguments.
        compile: the torch.compile options (``CompileOptions``); default ``CompileOptions(backend="eager")``
            (Dynamo only, fast); ``backend="inductor"`` to count kernels.
        input_sets: more argument tuples, run in order (their recompiles count).
        max_graph_breaks, max_recompiles, max_graphs, max_kernels: budgets (None: unchecked).
        backend, dynamic, backward: deprecated; use ``compile=CompileOptions(...)``.
    Returns the report, for further assertions.
    """
    from tcinspect.capturing.engine import capture, deprecated

    if old:
        unknown = sorted(set(old) - {"backend", "dynamic", "backward"})
        if unknown:
            raise UsageError(f"assert_compiles() takes no {unknown[0]}=",
                             "pass compile=CompileOptions(...) and the max_* budgets")
        if compile is not None:
            raise UsageError(f"compile= and {sorted(old)[0]}= were both given",
                             f"put {sorted(old)[0]} in compile=CompileOptions(...)")
        spelled = ", ".join(f"{k}={v!r}" for k, v in old.items())
        deprecated(f"assert_compiles({spelled}) is deprecated and will be removed in the next release; use "
                   f"compile=CompileOptions({spelled})")
        compile = replace(DEFAULT_COMPILE, **old)  # CompileOptions checks the values
    compile = DEFAULT_COMPILE if compile is None else compile
    if not isinstance(compile, CompileOptions):
        raise UsageError(f"compile={compile!r} is not a CompileOptions", "pass compile=CompileOptions(backend='eager')")
    if max_kernels is not None and compile.backend != "inductor":
        raise UsageError(f"max_kernels needs the inductor backend (backend {compile.backend!r} generates no kernels)",
                         "pass compile=CompileOptions(backend='inductor')")
    rep = capture(model, *inputs, input_sets=input_sets, compile=compile)
    if not rep.ok:
        raise AssertionError(f"torch.compile failed: {rep.error}")
    failures = [f for f in check_limits("model", rep, Limits(max_graphs, max_graph_breaks, max_recompiles, max_kernels))
                if f.status == "fail"]
    if failures:
        raise AssertionError(explain(rep, [f.message for f in failures]))
    return rep


def explain(rep: Report, problems: Sequence[str]) -> str:
    lines = [f"torch.compile budget exceeded: {'; '.join(problems)}"]
    for d in distinct_breaks(rep):
        loc = d.first.user_frame
        where = f"{loc.file}:{loc.line} in {loc.function}" if loc else "?"
        lines.append(f"  graph break at {where}: {d.first.break_type}" + (f" (x{d.count})" if d.count > 1 else ""))
        if loc and loc.code:
            lines.append(f"      {loc.code}")
        if d.first.fix:
            lines.append(f"      fix: {d.first.fix}")
    for r in rep.stages.dynamo.recompiles:
        lines.append(f"  recompile {r.compile_id} of {r.function}: {'; '.join(r.reasons) or '(no reason given)'}")
    return "\n".join(lines)
