"""Where the ranks of a distributed run diverge (pure; no torch): each compile compared across ranks by its
presence, graph, graph breaks, guards, recompiles, kernels, DDP split, collectives and cache outcomes.

Computed as the ranks are merged into one report (``merge.merge``), so the report carries it and every
stage after this one reads it (or calls ``divergences`` on ranks of its own).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Optional

from tcinspect.derived import cachekeys, collectives
from tcinspect.report import OK, Divergence, GraphBreak, OutputCode, RankGroup, RankReport, break_identity
from tcinspect.vocabulary import outcome

#: Ranks whose run finished: a compile they lack is a divergence, not a rank that stopped early.
_FINISHED = ("ok", "failed", "error")


def divergences(ranks: Sequence[RankReport]) -> tuple[Divergence, ...]:
    """Where ranks differ: a run-level status difference first, then each compile in order,
    comparing its presence, graph, graph breaks, guards, recompile, kernels and DDP split."""
    if len(ranks) < 2:
        return ()
    out: list[Divergence] = []
    status = _diverging("", "status", {r.rank: _status(r) for r in ranks})
    if status is not None:
        out.append(status)
    views = [_RankView(r) for r in ranks]
    for cid in sorted({c for v in views for c in v.compile_ids}, key=compile_order):
        present = [v for v in views if cid in v.compile_ids]
        # a rank that ended early is compared on the compiles it reached, not on those it never got to
        absent = [v for v in views if cid not in v.compile_ids and v.rank.status in _FINISHED]
        if absent:
            values = {v.rank.rank: ("compiled", f"compiled {v.function(cid)}".strip()) for v in present}
            values.update({v.rank.rank: ("absent", "not compiled") for v in absent})
            d = _diverging(cid, "compile", values)
            if d is not None:
                out.append(d)
        # the ranks that made the compile are compared too: one rank without it must not hide how the others differ
        here = len(out)
        for aspect, value in _ASPECTS:
            d = _diverging(cid, aspect, {v.rank.rank: value(v, cid) for v in present})
            if d is not None:
                out.append(d)
        if len(out) == here:  # the same compile on every rank: did they all compile it, or load it from a cache?
            d = _diverging(cid, "cache", {v.rank.rank: _cache(v, cid) for v in present})
            if d is not None:
                out.append(d)
    finished = [v for v in views if v.rank.status in _FINISHED]
    d = _diverging("", "compile_ids", {v.rank.rank: _compile_ids(v) for v in finished})
    if d is not None:
        out.append(d)
    out = [_describe_collectives(d, views) if d.aspect == "collectives" else d for d in out]
    out = [_describe_cache(d, views) if d.aspect == "cache" else d for d in out]
    if not any(d.aspect == "guards" for d in out):
        return tuple(out)
    return tuple(_describe_guards(d, views) if d.aspect == "guards" else d for d in out)


def compile_order(cid: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", cid))


class _RankView:
    """One rank's report indexed by compile id."""

    def __init__(self, rank: RankReport) -> None:
        self.rank = rank
        dyn = rank.stages.dynamo
        self.graphs = {g.compile_id: g for g in dyn.graphs}
        self.breaks: dict[str, list[GraphBreak]] = {}
        for b in dyn.graph_breaks:
            self.breaks.setdefault(b.compile_id, []).append(b)
        self.recompiles = {r.compile_id: r for r in dyn.recompiles}
        self.outputs: dict[str, list[OutputCode]] = {}
        for o in rank.stages.inductor.outputs:
            self.outputs.setdefault(o.compile_id, []).append(o)
        self.splits = {s.compile_id: s for s in rank.ddp_splits}
        self.metrics = {m.compile_id: m for m in rank.compiles}
        self.compile_ids = set(self.graphs) | set(self.breaks) | set(self.recompiles) | set(self.outputs) | \
            set(self.metrics)

    def function(self, cid: str) -> str:
        g = self.graphs.get(cid)
        m = self.metrics.get(cid)
        return (g.function if g else "") or (m.function if m else "")


def _clip(text: str, width: int = 100) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _status(r: RankReport) -> tuple[Any, str]:
    text = r.status if r.status == OK else f"{r.status}: {outcome(r)}"
    return (r.status, r.error, r.where), _clip(text)


def _graph(v: _RankView, cid: str) -> tuple[Any, str]:
    g = v.graphs.get(cid)
    if g is None:
        return None, "no graph"
    nodes = g.graph.nodes
    key = tuple((n.op, n.target, n.dtype, n.shape) for n in nodes)
    calls = [n.target.rsplit(".", 1)[-1] for n in nodes if n.op in ("call_function", "call_method", "call_module")]
    inputs = ", ".join(f"{n.dtype}[{', '.join(n.shape)}]" for n in nodes if n.op == "placeholder" and n.dtype)
    text = _clip(f"{g.graph.op_count} ops: {', '.join(calls)}", 90)
    return key, text + (f" · inputs {_clip(inputs, 60)}" if inputs else "")


def _breaks(v: _RankView, cid: str) -> tuple[Any, str]:
    items = v.breaks.get(cid, [])
    if not items:
        return (), "no graph break"
    key = tuple(sorted({break_identity(b) for b in items}))
    text = "; ".join(f"{b.break_type} at {b.user_frame.short() if b.user_frame else '?'}" for b in items)
    return key, _clip(text)


# object ids and addresses in guards (ID_MATCH, TYPE_MATCH, ...) differ from process to process
_ADDRESS = re.compile(r"\b\d{7,}\b|0x[0-9a-fA-F]{6,}")
# each rank runs on its own GPU, so a tensor guard's device index differs by design: TENSOR_MATCH
# prints it as "device=1" (torch 2.11-2.15), a device as "cuda:1"
_DEVICE_INDEX = re.compile(r"(?<=device=)\d+|(?<=cuda:)\d+")
_KEYSET = re.compile(r"DispatchKeySet\([^)]*\),\s*")


def guard_key(g: Any) -> tuple[str, str, str]:
    """A guard as ranks compare it: without object ids and without the rank's own GPU index."""
    return g.guard_type, g.source, _DEVICE_INDEX.sub("#", _ADDRESS.sub("#", g.expression))


def _guards(v: _RankView, cid: str) -> tuple[Any, str]:
    g = v.graphs.get(cid)
    keys = _guard_keys(g.guards) if g is not None else frozenset()
    return keys, f"{len(keys)} guards"


@functools.lru_cache(maxsize=256)
def _guard_keys(guards: tuple[Any, ...]) -> frozenset[tuple[str, str, str]]:
    """The guard keys of one graph's guards: ranks that compiled alike share their guards, computed once."""
    return frozenset(guard_key(x) for x in guards)


def _recompiles(v: _RankView, cid: str) -> tuple[Any, str]:
    r = v.recompiles.get(cid)
    if r is None:
        return None, "no recompile"
    return r.reasons, _clip("recompiled: " + ("; ".join(r.reasons) or "(PyTorch gave no reason)"))


def _kernels(v: _RankView, cid: str) -> tuple[Any, str]:
    outs = v.outputs.get(cid, [])
    key = tuple((o.part, tuple(k.name for k in o.kernels)) for o in outs)
    names = [k.name for o in outs for k in o.kernels]
    return key, _clip(f"{len(names)} kernels" + (f": {', '.join(names)}" if names else ""))


def _cache(v: _RankView, cid: str) -> tuple[Any, str]:
    """The compile's cache outcomes: AOTAutograd's, then the FX graph cache's for each Inductor output."""
    m = v.metrics.get(cid)
    aot = m.aot_autograd_cache if m is not None else ""
    fx = tuple((o.part, o.cache) for o in v.outputs.get(cid, []) if o.cache)
    if not aot and not fx:
        return ((), ()), "no cache look-up"
    text = ([f"AOTAutograd cache {aot}"] if aot else []) + [f"FX graph cache {part} {state}" for part, state in fx]
    return (aot, fx), ", ".join(text)


def _compile_ids(v: _RankView) -> tuple[Any, str]:
    ids = tuple(sorted(v.compile_ids, key=compile_order))
    return ids, _clip(f"{len(ids)} compiles: {' '.join(ids)}")


def _ddp(v: _RankView, cid: str) -> tuple[Any, str]:
    s = v.splits.get(cid)
    if s is None:
        return None, "not split"
    key = tuple((c.name, c.parameters) for c in s.children)
    return key, _clip(f"{len(s.children)} buckets: " + " | ".join(
        f"{c.name} {len(c.parameters)} params" for c in s.children))


def _collectives(v: _RankView, cid: str) -> tuple[Any, str]:
    cols = collectives.of_stages(v.rank.stages, cid)
    if not cols:
        return (), "no collective"
    return tuple(c.key for c in cols), _clip(f"{len(cols)} collectives: " + ", ".join(c.text() for c in cols))


def _describe_collectives(d: Divergence, views: Sequence[_RankView]) -> Divergence:
    """Each group as its first collective that differs from the others': order, kind, group, size."""
    lists = {v.rank.rank: collectives.of_stages(v.rank.stages, d.compile_id) for v in views}
    groups = [lists[g.ranks[0]] for g in d.groups if g.ranks[0] in lists]
    first = next((i for i in range(max(len(x) for x in groups))
                  if len({x[i].key if i < len(x) else None for x in groups}) > 1), 0)

    def text(cols: list[collectives.Collective]) -> str:
        if first >= len(cols):
            return f"no collective {first + 1} (runs {len(cols)})"
        c = cols[first]
        return _clip(f"collective {first + 1} of {len(cols)}: {c.part} {c.text()} (node {c.node})")

    return replace(d, groups=tuple(replace(g, value=text(lists[g.ranks[0]])) for g in d.groups))


_ASPECTS: tuple[tuple[str, Callable[[_RankView, str], tuple[Any, str]]], ...] = (
    ("graph", _graph), ("graph_breaks", _breaks), ("guards", _guards), ("recompiles", _recompiles),
    ("kernels", _kernels), ("ddp_split", _ddp), ("collectives", _collectives),
)


def _diverging(cid: str, aspect: str, values: dict[int, tuple[Any, str]]) -> Optional[Divergence]:
    """Ranks grouped by value (first-rank order); None when they all agree."""
    groups: dict[Any, list[int]] = {}
    texts: dict[Any, str] = {}
    for rank in sorted(values):
        key, text = values[rank]
        groups.setdefault(key, []).append(rank)
        texts.setdefault(key, text)
    if len(groups) < 2:
        return None
    return Divergence(compile_id=cid, aspect=aspect,
                      groups=tuple(RankGroup(tuple(ranks), texts[key]) for key, ranks in groups.items()))


def _describe_guards(d: Divergence, views: Sequence[_RankView]) -> Divergence:
    """Each group's guards that not every group has: what one rank assumed and another did not."""
    by_rank = {v.rank.rank: v for v in views}
    sets = []
    for g in d.groups:
        graph = by_rank[g.ranks[0]].graphs.get(d.compile_id)
        sets.append({guard_key(x): x for x in (graph.guards if graph is not None else ())})
    common = set.intersection(*(set(s) for s in sets))
    groups = []
    for g, guards in zip(d.groups, sets):
        own = [_KEYSET.sub("", x.expression) for k, x in guards.items() if k not in common]
        text = f"{len(guards)} guards" + (f"; only here: {'; '.join(own[:3])}" + (" …" if len(own) > 3 else "")
                                          if own else "")
        groups.append(RankGroup(g.ranks, _clip(text, 160)))
    return Divergence(d.compile_id, d.aspect, tuple(groups))


def _describe_cache(d: Divergence, views: Sequence[_RankView]) -> Divergence:
    """Each group's cache misses with the key components that differ from another group's look-up of the
    same graph: why one rank missed where another hit (or missed with another key)."""
    by_rank = {v.rank.rank: v for v in views}

    def own(g: RankGroup) -> dict[Any, Any]:
        ct = by_rank[g.ranks[0]].rank.compile_time
        return {k: c for k, c in cachekeys.by_id(ct).items() if k[0] == d.compile_id}

    looked = [own(g) for g in d.groups]
    groups = []
    for i, g in enumerate(d.groups):
        notes = []
        others = [(d.groups[j], looked[j]) for j in range(len(d.groups)) if j != i]
        for key, c in looked[i].items():
            if c.state != "miss":
                continue
            other = next(((o, ls[key]) for o, ls in others if key in ls), None)
            if other is None:
                continue
            o, was = other
            title = f"{key[1]} {cachekeys.CACHE_TITLES.get(key[2], key[2])} miss"
            if c.key and was.key and c.key == was.key:
                if was.state != "hit":
                    continue  # both missed the same key: nothing tells them apart
                notes.append(f"{title}: same key as rank {o.ranks[0]} ({was.state}); the entry was not in this "
                             "rank's cache directory")
            elif c.key and was.key:
                changes = cachekeys.changed_components(was, c)
                shown = "; ".join(changes[:cachekeys.SHOWN]) + (
                    f" (+{len(changes) - cachekeys.SHOWN} more)" if len(changes) > cachekeys.SHOWN else "")
                notes.append(f"{title}: key differs from rank {o.ranks[0]}'s ({was.state}): "
                             + (shown or "no component listed"))
        groups.append(replace(g, value=g.value + "".join(f"; {n}" for n in notes)) if notes else g)
    return replace(d, groups=tuple(groups))
