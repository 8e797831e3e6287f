"""Guard cost: torch's guard latency per compile, the guards it evaluates in Python, and tcinspect's per-call
profile (``guards --per-call``), from the structured trace. No torch import."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional

from tcinspect.parse import events as ev_mod
from tcinspect.parse.guards import _stable, source_of
from tcinspect.parse.memo import memoized
from tcinspect.report import (
    CallCost,
    CompileGuardCost,
    FrameCacheEntries,
    GuardCost,
    LambdaGuard,
    PerCallCost,
)

if TYPE_CHECKING:
    from tcinspect.parse.run import RunEvents

#: CheckFunctionManager ends the guard tree it logs with this line (torch/_dynamo/guards.py, 2.11-2.15)
_LATENCY = re.compile(r"^Guard latency = ([0-9.]+) us\s*$", re.M)
_LAMBDA = re.compile(r"^(?P<indent>(?:\| )*)\+- LAMBDA_GUARD:\s*(?P<rest>.*)$")
_MANAGER = re.compile(r"^(?P<indent>(?:\| )*)\+- \w*GuardManager: source=(?P<source>.*?), (?:accessed_by|type)=")
_TAG_SAFE_ROOT = re.compile(r"tag_safe=\((?:True|False), True\)")


def printed_latency(text: str) -> Optional[float]:
    """The ``Guard latency = … us`` line of a dynamo_cpp_guards_str payload, or None."""
    m = _LATENCY.search(text)
    return float(m.group(1)) if m else None


def lambda_guards(text: str) -> tuple[LambdaGuard, ...]:
    """The LAMBDA_GUARDs of a guard tree, each with its place: root, epilogue, or a leaf of a source's manager.

    GuardManagerWrapper.__str__ prints the RootGuardManager at depth 0 ("+- RootGuardManager"), its own leaf
    guards at depth 1, each child manager's guards one level below it, and the root's epilogue lambda guards
    last, at depth 0 (torch/_dynamo/guards.py, 2.11-2.15).
    """
    out = []
    managers: list[tuple[int, str]] = []  # the open managers: (depth, source)
    for line in text.splitlines():
        m = _MANAGER.match(line)
        if m:
            depth = len(m["indent"]) // 2
            while managers and managers[-1][0] >= depth:
                managers.pop()
            managers.append((depth, m["source"]))
            continue
        m = _LAMBDA.match(line)
        if not m:
            continue
        depth = len(m["indent"]) // 2
        while managers and managers[-1][0] >= depth:
            managers.pop()
        expression, _, comment = m["rest"].partition("  # ")
        expression = _stable(expression.strip())
        if depth == 0:
            placement, source = "epilogue", source_of(expression)
        elif depth == 1:
            placement, source = "root", source_of(expression)
        else:
            placement, source = "leaf", managers[-1][1] if managers else source_of(expression)
        out.append(LambdaGuard(expression=expression, placement=placement, source=_stable(source),
                               user_code=re.sub(r"\s+#\s+", "  # ", comment.strip())))
    return tuple(out)


@memoized
def _of_tree(text: str) -> tuple[Optional[float], tuple[LambdaGuard, ...], int]:
    """A guard tree's printed latency, lambda guards and tag-safe roots (the same tree on ranks that compiled alike)."""
    return printed_latency(text), lambda_guards(text), len(_TAG_SAFE_ROOT.findall(text))


def _metric(meta: dict[str, Any]) -> Optional[float]:
    v = meta.get("guard_latency_us")
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def build(events: Sequence[ev_mod.Event]) -> Optional[GuardCost]:
    """Per compile: torch's guard latency and lambda guards; with the per-call artifact, the timed calls.
    None when no compile logged guards or a latency and nothing was timed."""
    groups = ev_mod.by_compile_id([e for e in events if e.name in ("dynamo_cpp_guards_str", "compilation_metrics")])
    compiles = []
    for cid, group in groups.items():
        last = max((e.attempt for e in group), default=0)
        tree = next((e for e in reversed(group) if e.name == "dynamo_cpp_guards_str" and e.attempt == last), None)
        metrics = next((e for e in reversed(group) if e.name == "compilation_metrics"), None)
        latency = _metric(metrics.meta) if metrics is not None else None
        if tree is None and latency is None:
            continue
        function = str(metrics.meta.get("co_name") or "") if metrics is not None else ""
        printed, lambdas, tag_safe = _of_tree(tree.payload if tree is not None else "")
        compiles.append(CompileGuardCost(
            compile_id=cid, function=function, guard_latency_us=latency, printed_latency_us=printed,
            lambda_guards=lambdas, tag_safe_roots=tag_safe))
    per_call = _per_call(events)
    if not compiles and per_call is None:
        return None
    return GuardCost(compiles=tuple(compiles), per_call=per_call)


def _per_call(events: Sequence[ev_mod.Event]) -> Optional[PerCallCost]:
    ev = next((e for e in reversed(events) if e.name == ev_mod.PER_CALL_ARTIFACT), None)
    data = ev_mod.json_payload(ev) if ev is not None else None
    if not isinstance(data, dict):
        return None

    def opt(v: Any) -> Optional[float]:
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    calls = tuple(CallCost(
        input_set=int(c.get("input_set", 0)), call_us=float(c.get("call_us", 0.0)),
        lookup_us=float(c.get("lookup_us", 0.0)), lookups=int(c.get("lookups", 0)),
        before_first_op_us=opt(c.get("before_first_op_us")),
        compile_ids=tuple(str(x) for x in c.get("compile_ids", [])),
        entries_tried=tuple(int(x) for x in c.get("entries_tried", [])))
        for c in data.get("calls", []) if isinstance(c, dict))
    frames = tuple(FrameCacheEntries(function=str(f.get("function", "")), file=str(f.get("file", "")),
                                     line=int(f.get("line", 0)), compile_ids=tuple(str(x) for x in f.get("compile_ids", [])))
                   for f in data.get("frames", []) if isinstance(f, dict))
    return PerCallCost(runs=int(data.get("runs", 0)), calls=calls, frames=frames,
                       compiled_during=tuple(str(x) for x in data.get("compiled_during", [])),
                       note=str(data.get("note", "")))


def section(run: RunEvents) -> Optional[GuardCost]:
    """The report's section of what the guards cost, from a run (report/sections.py registers it)."""
    return build(run.events)
