"""The compile caches' look-ups compared (pure; no torch): which look-up is which, and which key components
changed between two look-ups of the same graph. ``analysis.caches`` explains them; the divergence of ranks
(``derived.divergence``) names the components that differ between ranks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Optional

from tcinspect.report import CacheLookup, CompileTime, CompileTiming

CACHE_TITLES = {"fx_graph": "FX graph cache", "aot_autograd": "AOTAutograd cache", "precompile": "precompile cache"}
#: at most this many changed components are named in one line (the YAML/JSON has them all)
SHOWN = 4

#: how much of each component's hash a baseline keeps
HASH_CHARS = 12

LookupId = tuple[str, str, str]  # compile id, part, cache


def lookups(ct: Optional[CompileTime]) -> Iterator[tuple[CompileTiming, CacheLookup]]:
    """Every cache look-up of a compile time, with the compile it belongs to."""
    for t in ct.compiles if ct is not None else ():
        for c in t.caches:
            yield t, c


def lookup_id(t: CompileTiming, c: CacheLookup) -> LookupId:
    return t.compile_id, c.part or t.part, c.cache


def by_id(ct: Optional[CompileTime]) -> dict[LookupId, CacheLookup]:
    """The look-ups of a run by (compile id, part, cache); the first one where a graph was looked up twice."""
    out: dict[LookupId, CacheLookup] = {}
    for t, c in lookups(ct):
        out.setdefault(lookup_id(t, c), c)
    return out


def _short(value: str, width: int = 60) -> str:
    value = " ".join(value.split())
    return value if len(value) <= width else value[: width - 1] + "…"


def changed_components(before: CacheLookup, after: CacheLookup) -> tuple[str, ...]:
    """``name: before → after`` for each key component whose hash differs (added and removed ones too)."""
    old = {k.name: k for k in before.components}
    new = {k.name: k for k in after.components}
    out = []
    for name, comp in new.items():
        was = old.get(name)
        if was is None:
            out.append(f"{name}: (absent) → {_short(comp.value)}")
        elif was.hash != comp.hash:
            if _short(was.value) == _short(comp.value):
                out.append(f"{name}: {_short(comp.value)} (hash {was.hash[:8]} → {comp.hash[:8]})")
            else:
                out.append(f"{name}: {_short(was.value)} → {_short(comp.value)}")
    out += [f"{name}: {_short(was.value)} → (absent)" for name, was in old.items() if name not in new]
    return tuple(out)
