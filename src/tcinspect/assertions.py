"""In-test use: assert that a model compiles within budgets, with a message that lists the breaks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from tcinspect.analysis.breaks import distinct_breaks
from tcinspect.analysis.checks import Limits, check_limits
from tcinspect.report import Options, Report


def assert_compiles(model: Any, *inputs: Any, input_sets: Sequence[tuple] = (), max_graph_breaks: Optional[int] = 0,
                    max_recompiles: Optional[int] = 0, max_graphs: Optional[int] = None,
                    max_kernels: Optional[int] = None, backend: str = "eager", dynamic: str = "",
                    backward: bool = True) -> Report:
    """Compile ``model`` on ``inputs`` (then ``input_sets``) and fail unless every budget holds.

    Args:
        model: an ``nn.Module`` or callable.
        *inputs: its positional arguments.
        input_sets: more argument tuples, run in order (their recompiles count).
        max_graph_breaks, max_recompiles, max_graphs, max_kernels: budgets (None: unchecked).
        backend: "eager" (Dynamo only, fast) by default; "inductor" to count kernels.
    Returns the report, for further assertions.
    """
    from tcinspect.capturing.engine import capture

    if max_kernels is not None and backend != "inductor":
        raise ValueError("max_kernels needs backend='inductor' (other backends generate no kernels)")
    rep = capture(model, *inputs, input_sets=input_sets,
                  options=Options(backend=backend, dynamic=dynamic, backward=backward))
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
