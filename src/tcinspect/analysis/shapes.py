"""Views of a report's dynamic shapes: each input dim's fate, and a spec that would compile once. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from tcinspect.report import Report, Shapes, Specialization
from tcinspect.vocabulary import KEEP_DYNAMIC, size_source, specialized, where

#: what a dim of an input is, across the calls observed
STATIC = "static"  # one size in every call
DYNAMIC = "dynamic"  # several sizes, and torch kept it a symbol
SPECIALIZED = "specialized"  # several sizes, and the code made it a constant (a graph per size)
RECOMPILED = "recompiled"  # several sizes, no symbol recorded (dynamic=False, or compiled once per size)


@dataclass(frozen=True)
class DimView:
    """One dim of one tensor input: the sizes the calls had, and what torch made of it."""

    name: str  # the argument, as Dynamo names it ("x", "args[0]")
    dim: int
    source: str  # Dynamo's source: L['x'].size()[1]
    sizes: tuple[int, ...]  # distinct, in call order
    status: str  # STATIC | DYNAMIC | SPECIALIZED | RECOMPILED
    symbols: tuple[str, ...] = ()
    specializations: tuple[Specialization, ...] = ()
    label: str = ""  # the parameter's own name, for the spec (input_ids where Dynamo sees args[0])

    @property
    def low(self) -> int:
        return min(self.sizes)

    @property
    def high(self) -> int:
        return max(self.sizes)


def dims(rep: Report) -> list[DimView]:
    """Every dim of every tensor input the calls had, in input order."""
    sh = rep.shapes
    if sh is None or not sh.inputs:
        return []
    sizes: dict[tuple[str, int], dict[int, None]] = {}
    labels = {inp.name: inp.label or inp.name for inp in sh.inputs}
    for inp in sh.inputs:
        for d, size in enumerate(inp.shape):
            sizes.setdefault((inp.name, d), {})[size] = None
    out = []
    for (name, d), seen in sizes.items():
        source = size_source(name, d)
        specs = specialized(sh, source)
        syms = tuple(dict.fromkeys(s.symbol for s in sh.symbols if s.source == source))
        if len(seen) == 1:
            status = STATIC
        elif specs:
            status = SPECIALIZED
        elif syms:
            status = DYNAMIC
        else:
            status = RECOMPILED
        out.append(DimView(name, d, source, tuple(seen), status, syms, tuple(specs), labels[name]))
    return out


@dataclass(frozen=True)
class Spec:
    """A suggested dynamic-shapes spec: the calls as torch.compile should see them to compile once."""

    dims: tuple[DimView, ...]
    mark_dynamic: tuple[str, ...]  # ``torch._dynamo.mark_dynamic(x, 1, min=16, max=40)`` lines
    dynamic_shapes: str  # torch.export's form: {"x": {1: Dim("x_dim1", min=16, max=40)}}
    #: why it cannot compile once (a dim the code specializes), "" when it can
    blocked: str = ""


def suggested_spec(rep: Report) -> Optional[Spec]:
    """Dynamic where the observed sizes vary and the code allows it, static elsewhere; None without inputs."""
    views = dims(rep)
    if not views:
        return None
    varying = [v for v in views if v.status != STATIC]
    marks = []
    shapes: dict[str, list[str]] = {}
    for v in varying:
        if v.status == SPECIALIZED:
            continue
        # torch specializes sizes 0 and 1 (the 0/1 specialization): a range must start at 2
        low = max(v.low, 2)
        marks.append(f"torch._dynamo.mark_dynamic({v.label}, {v.dim}, min={low}, max={v.high})")
        shapes.setdefault(v.label, []).append(f'{v.dim}: Dim("{v.label}_dim{v.dim}", min={low}, max={v.high})')
    names = dict.fromkeys(v.label for v in views)
    form = "{" + ", ".join(f'"{n}": ' + ("{" + ", ".join(shapes[n]) + "}" if n in shapes else "None")
                           for n in names) + "}"
    blocked = "; ".join(
        f"{v.source} varies ({', '.join(map(str, v.sizes))}) but {where(v.specializations[0].user_frame)} makes it a "
        f"constant ({v.specializations[0].reason}): a graph per size until the code changes"
        for v in varying if v.status == SPECIALIZED)
    return Spec(tuple(views), tuple(marks), form, blocked)


@dataclass(frozen=True)
class Violation:
    """A mark_dynamic / dynamic_shapes constraint torch refused, and the line that forced the equality."""

    source: str
    value: str
    specialization: Optional[Specialization]


def violations(rep: Report) -> list[Violation]:
    """Constraint violations of a failed run, each with the specialization that caused it."""
    text = rep.error + "\n" + "\n".join(c.fail_reason for c in rep.compiles)
    if "Constraints violated" not in text and "ConstraintViolation" not in text:
        return []
    import re

    out = []
    sh = rep.shapes
    for source in dict.fromkeys(re.findall(r"[LG]\[[^\]]+\](?:\.\w+|\[[^\]]+\])*\.size\(\)\[\d+\]", text)):
        specs = specialized(sh, source)
        out.append(Violation(source, specs[0].value if specs else "", specs[0] if specs else None))
    return out


def advice(rep: Report) -> list[str]:
    """One line for each dim the code specializes: where, why, and what would keep it dynamic."""
    sh: Optional[Shapes] = rep.shapes
    if sh is None:
        return []
    out = []
    seen: dict[str, list[Specialization]] = {}
    for s in sh.specializations:
        for source in s.sources:
            seen.setdefault(source, []).append(s)
    for source, specs in seen.items():
        values = ", ".join(dict.fromkeys(s.value for s in specs))
        out.append(f"{source} = {values} by {where(specs[0].user_frame)} ({specs[0].reason}): "
                   f"mark_dynamic/dynamic=True cannot keep it dynamic; {KEEP_DYNAMIC}")
    return out


def spec_marks(rep: Report) -> list[tuple[str, int, int, int]]:
    """The dims of the suggested spec to mark dynamic, as (input name, dim, min, max), for ``shapes --verify-spec``:
    those it finds dynamic or recompiled (min at least 2, as mark_dynamic takes it)."""
    spec = suggested_spec(rep)
    return [(d.name, d.dim, max(d.low, 2), d.high) for d in (spec.dims if spec else ())
            if d.status in ("dynamic", "recompiled")]
