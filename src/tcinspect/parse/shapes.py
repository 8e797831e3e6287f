"""Dynamic-shape events -> the report's shapes section. Pure: no torch import.

torch (torch/fx/experimental/symbolic_shapes.py, 2.11-2.15) logs, inside each compile's context:
``create_symbol`` (a size became a symbol: symbol, val, vr, source, user_stack, stack),
``create_unbacked_symbol`` (``.item()``, ``nonzero``: symbol, vr, user_stack, stack),
``symbolic_shape_specialization`` (a symbol became a constant: symbol, sources, value, reason, stack,
user_stack) and ``guard_added_fast`` (expr, user_stack, stack). ``guard_on_data_dependent_error`` (expr,
unhinted_expr, expr_id, stack) is logged only under TORCH_DTRACE (``dtrace_structured``), as is
``expression_created``, whose ``result_id`` names the user line of that expression. Stack frames are
``{"line", "name", "filename", "loc"}`` with the file name interned: an index into the ``str`` records,
which the recorder and the TORCH_TRACE reader replace with the name itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Optional

from tcinspect.parse import shape_guards
from tcinspect.parse.events import CALL_SHAPES_ARTIFACT, Event
from tcinspect.report import (
    DataDependentError,
    InputShape,
    Recompile,
    ShapeGuard,
    Shapes,
    ShapeSymbol,
    SourceLocation,
    Specialization,
)
from tcinspect.vocabulary import KEEP_DYNAMIC, size_source, specialized, where

CREATE_SYMBOL = "create_symbol"
CREATE_UNBACKED = "create_unbacked_symbol"
SPECIALIZATION = "symbolic_shape_specialization"
GUARD_ADDED = "guard_added_fast"
DATA_DEPENDENT = "guard_on_data_dependent_error"
EXPRESSION_CREATED = "expression_created"

#: the events this module reads (parse/events.py PARSED)
NAMES = (CREATE_SYMBOL, CREATE_UNBACKED, SPECIALIZATION, GUARD_ADDED, DATA_DEPENDENT)
#: events whose stack frames name interned files (the recorder and the TORCH_TRACE reader name them)
WITH_FRAMES = (*NAMES, EXPRESSION_CREATED)

#: files of torch's symbolic-shape machinery itself: the frame that made a symbol a constant is the
#: innermost frame outside them (the op, Dynamo variable or decomposition that asked)
_MACHINERY = ("fx/experimental/symbolic_shapes.py", "fx/experimental/sym_node.py", "fx/experimental/recording.py",
              "utils/_sympy/", "/sympy/", "torch/__init__.py", "utils/_traceback.py", "_logging/", "_dynamo/utils.py",
              "utils/_stats.py", "/contextlib.py", "/functools.py")


class _Malformed(Exception):
    """An event whose metadata is not of the form this module reads."""


def _location(frame: Any) -> SourceLocation:
    if not isinstance(frame, dict) or not isinstance(frame.get("line"), int):
        raise _Malformed
    file = frame.get("filename")
    return SourceLocation(file=file if isinstance(file, str) else f"<file #{file}>", line=int(frame["line"]),
                          function=str(frame.get("name") or ""), code=str(frame.get("loc") or "").strip())


def _frames(value: Any) -> list[SourceLocation]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Malformed
    return [_location(f) for f in value]


def _innermost(value: Any) -> Optional[SourceLocation]:
    frames = _frames(value)
    return frames[-1] if frames else None


def library_frame(stack: Any) -> Optional[SourceLocation]:
    """The innermost frame of torch's stack outside the symbolic-shape machinery."""
    for loc in reversed(_frames(stack)):
        if not any(part in loc.file for part in _MACHINERY):
            return loc
    return None


def _text(meta: dict[str, Any], key: str, required: bool = True) -> str:
    value = meta.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, (str, int)):
        raise _Malformed
    return str(value)


def _call_shapes(ev: Event) -> list[InputShape]:
    data = json.loads(ev.payload) if ev.payload else None
    if not isinstance(data, list):
        raise _Malformed
    out = []
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("shape"), list):
            raise _Malformed
        name, label = str(item.get("name", "")), str(item.get("label", ""))
        out.append(InputShape(call=ev.call, name=name, shape=tuple(int(d) for d in item["shape"]),
                              label=label if label != name else ""))
    return out


def build(events: Sequence[Event]) -> tuple[Optional[Shapes], dict[str, int]]:
    """The shapes section of a run's events (None when torch logged no dynamic-shape event), and the
    events of these names that could not be read, by name (Report.parse's artifacts_not_understood)."""
    symbols: list[ShapeSymbol] = []
    specs: list[Specialization] = []
    guards: list[ShapeGuard] = []
    dd: list[DataDependentError] = []
    inputs: list[InputShape] = []
    bad: dict[str, int] = {}
    lines: dict[tuple[str, int], SourceLocation] = {}  # expression_created result_id -> user line (TORCH_DTRACE)
    for ev in events:
        if ev.name == EXPRESSION_CREATED:
            try:
                where = _innermost(ev.meta.get("user_stack"))
            except _Malformed:
                continue  # read only to name a data-dependent error's line
            if where is not None and isinstance(ev.meta.get("result_id"), int):
                lines[(ev.compile_id, ev.meta["result_id"])] = where
            continue
        if ev.name not in NAMES and ev.name != CALL_SHAPES_ARTIFACT:
            continue
        m = ev.meta
        try:
            if ev.name == CALL_SHAPES_ARTIFACT:
                inputs.extend(_call_shapes(ev))
            elif ev.name == CREATE_SYMBOL:
                symbols.append(ShapeSymbol(
                    compile_id=ev.compile_id, symbol=_text(m, "symbol"), source=_text(m, "source"),
                    hint=_text(m, "val", required=False), value_range=_text(m, "vr", required=False),
                    user_frame=_innermost(m.get("user_stack"))))
            elif ev.name == CREATE_UNBACKED:
                symbols.append(ShapeSymbol(
                    compile_id=ev.compile_id, symbol=_text(m, "symbol"), value_range=_text(m, "vr", required=False),
                    unbacked=True, user_frame=_innermost(m.get("user_stack"))))
            elif ev.name == SPECIALIZATION:
                sources = m.get("sources")
                if not isinstance(sources, list):
                    raise _Malformed
                specs.append(Specialization(
                    compile_id=ev.compile_id, symbol=_text(m, "symbol"), sources=tuple(str(s) for s in sources),
                    value=_text(m, "value"), reason=_text(m, "reason", required=False),
                    user_frame=_innermost(m.get("user_stack")), library_frame=library_frame(m.get("stack"))))
            elif ev.name == GUARD_ADDED:
                guards.append(ShapeGuard(compile_id=ev.compile_id, expression=_text(m, "expr"),
                                         user_frame=_innermost(m.get("user_stack")), stage=stage_of(m.get("stack"))))
            elif ev.name == DATA_DEPENDENT:
                expr_id = m.get("expr_id")
                dd.append(DataDependentError(
                    compile_id=ev.compile_id, expression=_text(m, "expr"),
                    unhinted=_text(m, "unhinted_expr", required=False),
                    user_frame=lines.get((ev.compile_id, expr_id)) if isinstance(expr_id, int) else None))
        except (_Malformed, ValueError, TypeError):
            bad[ev.name] = bad.get(ev.name, 0) + 1
    guards = [_with_sources(g, symbols) for g in guards]
    if not (symbols or specs or guards or dd):
        return None, bad
    return Shapes(symbols=tuple(symbols), specializations=tuple(specs), guards=tuple(guards),
                  data_dependent=tuple(dd), inputs=tuple(inputs)), bad


def _with_sources(guard: ShapeGuard, symbols: Iterable[ShapeSymbol]) -> ShapeGuard:
    named = set(re.findall(r"\b[su]\d+\b", guard.expression))
    sources = tuple(dict.fromkeys(f"{s.symbol}: {s.source}" for s in symbols
                                  if s.compile_id == guard.compile_id and s.symbol in named and s.source))
    return replace(guard, sources=sources) if sources else guard


#: torch's packages, innermost first, by the compiler stage whose code runs there. A decomposition Inductor
#: registers runs while AOTAutograd traces, so those files decide nothing (the stage calling them does).
_STAGE_FILES = (("torch/_inductor/decomposition.py", ""), ("torch/_decomp/", ""), ("torch/_inductor/", "inductor"),
                ("torch/_functorch/", "aot_autograd"), ("torch/_dynamo/", "dynamo"))


def stage_of(stack: Any) -> str:
    """The compiler stage that added a guard: the innermost frame of torch's stack in a stage's package."""
    if not isinstance(stack, list):
        return ""
    for frame in reversed(stack):
        name = frame.get("filename") if isinstance(frame, dict) else None
        if not isinstance(name, str):
            continue
        name = name.replace("\\", "/")
        for part, stage in _STAGE_FILES:
            if part in name:
                if stage:
                    return stage
                break
    return ""


def with_final_guards(shapes: Optional[Shapes], final: Mapping[str, Sequence[str]]) -> Optional[Shapes]:
    """Each shape guard marked with whether its compile's final guards (``final``: compile id -> the guard
    expressions Dynamo installed) enforce it (parse/shape_guards.py); "" for a compile with none recorded, a guard
    on a symbol with no source (an unbacked one) or one that module cannot read."""
    if shapes is None or not shapes.guards:
        return shapes
    fixed: dict[str, dict[str, int]] = {}
    for s in shapes.specializations:
        if re.fullmatch(r"-?\d+", s.value):
            fixed.setdefault(s.compile_id, {})[s.symbol] = int(s.value)
    out = []
    for g in shapes.guards:
        have = final.get(g.compile_id)
        out.append(replace(g, in_final_guards=shape_guards.enforced(g.expression, g.sources, have,
                                                                    fixed.get(g.compile_id)))
                   if have and g.sources else g)
    return replace(shapes, guards=tuple(out))


_SIZE_MISMATCH = re.compile(r"tensor '(?P<name>[^']+)' size mismatch at index (?P<dim>\d+)")


def sources_in(reason: str) -> set[str]:
    """The size sources a failed guard names, as Dynamo's sources: ``L['x'].size()[1]``."""
    found = set()
    for m in _SIZE_MISMATCH.finditer(reason):
        found.add(size_source(m["name"], int(m["dim"])))
    found.update(re.findall(r"[LG]\[[^\]]+\](?:\.\w+|\[[^\]]+\])*\.size\(\)\[\d+\]", reason))
    return found


def specialization_advice(source: str, specs: Sequence[Specialization]) -> str:
    """What to do about a size the code makes a constant: never mark_dynamic or dynamic=True, which it defeats."""
    first = specs[0]
    values = ", ".join(dict.fromkeys(s.value for s in specs))
    lib = f", in {first.library_frame.short()}" if first.library_frame is not None else ""
    return (f"{source} is made a constant by {where(first.user_frame)} (torch: {first.reason or 'no reason given'}"
            f"{lib}; specialized to {values}). dynamic=True or mark_dynamic cannot keep it dynamic "
            f"(mark_dynamic raises a constraint violation): {KEEP_DYNAMIC}. Otherwise a graph per size is the "
            "honest answer: keep the sizes few (pad to buckets) and the recompile limit above their number.")


def with_shape_advice(rec: Recompile, shapes: Optional[Shapes]) -> Recompile:
    """A recompile on a size, explained by what happened to its symbol (replaces the generic shape advice)."""
    if shapes is None or not rec.reasons:
        return rec
    for source in sorted(sources_in(rec.reasons[0])):
        specs = specialized(shapes, source)
        if specs:
            return replace(rec, suggestion=specialization_advice(source, specs))
        made = [s for s in shapes.symbols if s.compile_id == rec.compile_id and s.source == source]
        if made:
            return replace(rec, suggestion=(
                f"{source} changed, and this compile made it a symbol ({made[0].symbol}, automatic dynamic): "
                "one graph now serves its other sizes. This recompile happens once; "
                "torch._dynamo.mark_dynamic(tensor, dim) before the first call avoids it."))
    return rec


def name_files(meta: dict[str, Any], strings: Mapping[int, str]) -> dict[str, Any]:
    """A shape event's metadata with interned file indices in its stacks replaced by the file names."""
    out = dict(meta)
    for key in ("user_stack", "stack"):
        frames = out.get(key)
        if isinstance(frames, list):
            out[key] = [{**f, "filename": strings.get(f["filename"], f["filename"])}
                        if isinstance(f, dict) and isinstance(f.get("filename"), int) else f for f in frames]
    return out
