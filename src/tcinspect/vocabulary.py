"""The report's shared words: what the stages that build a report (parse) and those that read it
(analysis, render) both say about it. Pure; imports only the data model.

Each group names the report field whose values it describes: compile-time phase groups
(``Phase.group``), how a rank ended (``RankReport.status``), and dynamic shapes' sources and lines
(``Shapes``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from tcinspect.report import Phase, RankReport, Shapes, SourceLocation, Specialization

# ----------------------------------------------------------------------------- tensors

#: bytes per element of each dtype as FX prints it (torch/fx/graph.py's dtype abbreviations)
ITEMSIZE = {
    "f64": 8, "f32": 4, "f16": 2, "bf16": 2, "c128": 16, "c64": 8, "c32": 4, "i64": 8, "i32": 4, "i16": 2,
    "i8": 1, "u64": 8, "u32": 4, "u16": 2, "u8": 1, "b8": 1, "f8e4m3fn": 1, "f8e5m2": 1, "f8e4m3fnuz": 1,
    "f8e5m2fnuz": 1, "f8e8m0fnu": 1,
}


def static_nbytes(dtype: str, shape: Sequence[str]) -> Optional[int]:
    """A tensor's size in bytes from its printed dtype and shape; None where a size is symbolic or the dtype
    unknown."""
    size = ITEMSIZE.get(dtype)
    if size is None:
        return None
    for d in shape:
        if not d.isdigit():
            return None
        size *= int(d)
    return size


# ----------------------------------------------------------------------------- compile-time phases

#: Phase groups, in pipeline order; each span's exclusive time counts towards one of them.
GROUPS = ("dynamo", "aot_autograd", "graph_passes", "lowering", "scheduling", "codegen", "compile", "autotune",
          "cache", "inductor", "other")
GROUP_TITLES = {
    "dynamo": "Dynamo (bytecode tracing, guards)",
    "aot_autograd": "AOTAutograd (dispatch, partitioning)",
    "graph_passes": "FX graph passes (pre-grad, joint, post-grad)",
    "lowering": "Inductor lowering",
    "scheduling": "Inductor scheduling (fusion)",
    "codegen": "Inductor code generation",
    "compile": "C++/Triton compile (async included)",
    "autotune": "autotuning",
    "cache": "cache keys, look-ups, loads and saves",
    "inductor": "Inductor (other)",
    "other": "other (outside any timed phase)",
}

#: Root spans: what compilation_metrics (forward) and bwd_compilation_metrics (backward) measure.
FORWARD_ROOT = "entire_frame_compile"
BACKWARD_ROOT = "entire_backward_compile"


def breakdown(phase: Phase) -> dict[str, float]:
    """Exclusive seconds by group over a tree: they add up to the root's inclusive time.

    A compile root's own exclusive time is "other" (the gaps between its timed phases); a span
    outside any compile (e.g. autotuning at the first call) keeps its own group.
    """
    out = {g: 0.0 for g in GROUPS}

    def walk(p: Phase, root: bool) -> None:
        out["other" if root and p.name in (FORWARD_ROOT, BACKWARD_ROOT) else p.group] += p.self_s
        for c in p.children:
            walk(c, False)

    walk(phase, True)
    return {g: round(v, 6) for g, v in out.items() if v > 0}


# ----------------------------------------------------------------------------- ranks

#: Rank statuses with no result file: the rank ended before it could write one.
ENDED = ("crashed", "timed_out", "stopped", "missing")


def outcome(r: RankReport) -> str:
    """How a rank ended, with the user's line it was at when it crashed, hung or was stopped."""
    cause = r.error.partition(" — ")[0]  # a rank's error keeps its fix; the table shows the cause
    return cause + (f" (in {r.where})" if r.where and r.status in ENDED else "")


def ranks_text(ranks: Sequence[int]) -> str:
    """``rank 1`` / ``ranks 0, 2-5``."""
    spans: list[str] = []
    nums = sorted(ranks)
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        spans.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ("rank " if len(nums) == 1 else "ranks ") + ", ".join(spans)


def ranks_cut(ranks: Sequence[int], spans: int) -> str:
    """``ranks 0-4, 6-12, … (896 ranks)``: ``ranks_text`` cut to ``spans`` spans, for a line or a table cell."""
    text = ranks_text(ranks)
    head, _, rest = text.partition(" ")
    parts = rest.split(", ")
    if len(parts) <= spans:
        return text
    return f"{head} {', '.join(parts[:spans])}, … ({len(ranks)} ranks)"


# ----------------------------------------------------------------------------- dynamic shapes


def size_source(name: str, dim: int) -> str:
    """Dynamo's source of an argument's size: ``L['x'].size()[1]``; ``args[0]`` is ``L['args'][0]``."""
    if name.startswith(("L[", "G[")):
        return f"{name}.size()[{dim}]"
    base, bracket, rest = name.partition("[")
    return f"L['{base}']{bracket}{rest}.size()[{dim}]"


def specialized(shapes: Optional[Shapes], source: str) -> list[Specialization]:
    """The specializations of ``source`` in a run, in order."""
    return [s for s in (shapes.specializations if shapes else ()) if source in s.sources]


def where(loc: Optional[SourceLocation]) -> str:
    """``file.py:12 `code```, or "a line torch did not name"."""
    if loc is None:
        return "a line torch did not name"
    return f"{loc.short()} `{loc.code}`" if loc.code else loc.short()


#: How to keep a size dynamic that the code makes a constant (the advice of `shapes`, recompiles and `check`).
KEEP_DYNAMIC = ("to keep it dynamic, the code must not need its value: no Python iteration or branching on the size "
                "(tensor ops instead of a `range()` over it), torch._check(...) to state what the code assumes, "
                "torch.fx.experimental.symbolic_shapes.guard_or_false(...) for a test that may fall back, or "
                "torch._dynamo.mark_unbacked(tensor, dim) (no hint: the code then cannot branch on it at all)")
