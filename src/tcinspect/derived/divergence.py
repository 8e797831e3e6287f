"""Where the ranks of a distributed run diverge (pure; no torch): each compile compared across ranks by its
presence, graph, graph breaks, guards, recompiles, kernels, DDP split, collectives and cache outcomes.

Computed as the ranks are merged into one report (``merge.merge``), so the report carries it and every
stage after this one reads it (or calls ``divergences`` on ranks of its own).
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Optional

from tcinspect.derived import cachekeys, collectives
from tcinspect.derived.ids import ADDRESS, DEVICE_INDEX, masked
from tcinspect.report import OK, Divergence, GraphBreak, OutputCode, RankGroup, RankReport, break_identity
from tcinspect.vocabulary import outcome

#: Ranks whose run finished: a compile they lack is a divergence, not a rank that stopped early.
_FINISHED = ("ok", "failed", "error")
#: what a ``compile`` divergence says of the ranks that lack the compile
NOT_COMPILED = "not compiled"


def divergences(ranks: Sequence[RankReport], keys: Optional[Mapping[int, RankKeys]] = None) -> tuple[Divergence, ...]:
    """Where ranks differ: a run-level status difference first, then each compile in order,
    comparing its presence, graph, graph breaks, guards, recompile, kernels and DDP split.

    ``keys``: each rank's ``rank_keys``, where they were made already (by the processes that read the ranks);
    the others are made here. Only the first rank of each group is looked at again, for the text it shows."""
    if len(ranks) < 2:
        return ()
    out: list[Divergence] = []
    by_rank = {r.rank: r for r in ranks}
    status = _diverging("", "status", {r.rank: _status(r)[0] for r in ranks}, lambda r: _status(by_rank[r])[1])
    made = {r.rank: k if keys is not None and (k := keys.get(r.rank)) is not None else rank_keys(r) for r in ranks}
    table = {r: dict(k.compiles) for r, k in made.items()}
    order = [r.rank for r in ranks]
    finished = {r.rank for r in ranks if r.status in _FINISHED}
    views: dict[int, _RankView] = {}

    def view(rank: int) -> _RankView:
        if rank not in views:
            views[rank] = _RankView(by_rank[rank])
        return views[rank]

    if status is not None:
        out.append(status)
    for cid in sorted({c for t in table.values() for c in t}, key=_compile_order_key):
        present = [r for r in order if cid in table[r]]
        # a rank that ended early is compared on the compiles it reached, not on those it never got to
        absent = [r for r in order if cid not in table[r] and r in finished]
        if absent:
            compiled = {r: "compiled" for r in present}
            compiled.update({r: "absent" for r in absent})
            d = _diverging(cid, "compile", compiled, functools.partial(_presence, view, cid, compiled))
            if d is not None:
                out.append(d)
        # the ranks that made the compile are compared too: one rank without it must not hide how the others differ
        here = len(out)
        for i, (aspect, value) in enumerate(_ASPECTS):
            d = _diverging(cid, aspect, {r: table[r][cid][i] for r in present},
                           functools.partial(_text, view, value, cid))
            if d is not None:
                out.append(d)
        if len(out) == here:  # the same compile on every rank: did they all compile it, or load it from a cache?
            d = _diverging(cid, "cache", {r: table[r][cid][-1] for r in present},
                           functools.partial(_text, view, _cache, cid))
            if d is not None:
                out.append(d)
    ids = {r: tuple(table[r]) for r in order if r in finished}
    d = _diverging("", "compile_ids", ids, lambda r: _compile_ids_text(ids[r]))
    if d is not None:
        out.append(d)
    out.extend(execution_order(ranks))
    out = [_describe_collectives(d, view) if d.aspect == "collectives" else d for d in out]
    out = [_describe_cache(d, view) if d.aspect == "cache" else d for d in out]
    if not any(d.aspect == "guards" for d in out):
        return tuple(out)
    return tuple(_describe_guards(d, view) if d.aspect == "guards" else d for d in out)


def execution_order(ranks: Sequence[RankReport]) -> tuple[Divergence, ...]:
    """The first run at which ranks ran different compiled graphs (``graph_execution_order``), each group of ranks
    shown with the graph it ran there; () when they ran them in one order. Only the ranks that recorded an order
    are compared: torch records it only inside ``record_and_log_graph_execution_order()``."""
    orders = {r.rank: r.graph_execution_order for r in ranks if r.graph_execution_order}
    if len(orders) < 2:
        return ()
    by_rank = {r.rank: r for r in ranks}
    at = next((i for i in range(max(len(o) for o in orders.values()))
               if len({o[i] if i < len(o) else None for o in orders.values()}) > 1), None)
    if at is None:
        return ()

    def text(rank: int) -> str:
        order = orders[rank]
        shown = [f"[{g}]" if i == at else g for i, g in enumerate(order[max(0, at - 3):at + 4], max(0, at - 3))]
        around = ("… " if at > 3 else "") + " ".join(shown) + (" …" if at + 4 < len(order) else "")
        if at >= len(order):
            return _clip(f"no run {at + 1}: ran {len(order)} graphs · order {around}")
        function = next((g.function for g in by_rank[rank].stages.dynamo.graphs if g.compile_id == order[at]), "")
        return _clip(f"run {at + 1} of {len(order)}: {order[at]}{' ' + function if function else ''} · order {around}")

    d = _diverging("", "execution_order", {r: o[at] if at < len(o) else None for r, o in orders.items()}, text)
    return (d,) if d is not None else ()


def _presence(view: Callable[[int], _RankView], cid: str, compiled: Mapping[int, str], rank: int) -> str:
    return f"compiled {view(rank).function(cid)}".strip() if compiled[rank] == "compiled" else NOT_COMPILED


def _text(view: Callable[[int], _RankView], value: Callable[[_RankView, str], tuple[Any, str]], cid: str,
          rank: int) -> str:
    return value(view(rank), cid)[1]


@dataclass(frozen=True)
class RankKeys:
    """What ``divergences`` compares of one rank: for each compile (in compile order), each aspect's value as a
    digest of its canonical text, in ``_ASPECTS`` order, then the cache outcomes'. Small, so the processes that
    read ranks send it instead of the parent finding it again; made of nothing that depends on the process (no
    hash, id or set iteration order), so ranks read by different processes compare alike."""

    compiles: tuple[tuple[str, tuple[bytes, ...]], ...]


def rank_keys(rank: RankReport) -> RankKeys:
    """One rank's ``RankKeys``."""
    v = _RankView(rank)
    return RankKeys(tuple((cid, tuple(_digest(value(v, cid)[0]) for _, value in (*_ASPECTS, ("cache", _cache))))
                          for cid in sorted(v.compile_ids, key=_compile_order_key)))


def _digest(key: Any) -> bytes:
    """A key's digest: equal for equal keys (tuples, strings, numbers, None, and sets, sorted first), in any process."""
    if isinstance(key, (frozenset, set)):
        key = ("set", tuple(sorted(key)))
    return hashlib.blake2b(repr(key).encode("utf-8", "surrogatepass"), digest_size=16).digest()


def compile_order(cid: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", cid))


def _compile_order_key(cid: str) -> tuple[tuple[int, ...], str]:
    """Compile order, then the id itself (``!0/1/0`` and ``0/1/0`` have the same numbers): the same in any process."""
    return compile_order(cid), cid


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
    return (r.status, masked(r.error), r.where), _clip(text)


def _graph(v: _RankView, cid: str) -> tuple[Any, str]:
    g = v.graphs.get(cid)
    if g is None:
        return None, "no graph"
    nodes = g.graph.nodes
    # a DTensor's annotation names its device ("DTensor(f32[256, 64][64, 1]cuda:1, S(0))"): each rank's own GPU
    # the shape's sizes are compared as they are: only text is masked
    key = tuple((n.op, masked(n.target), _DEVICE_INDEX.sub("#", n.dtype), n.shape) for n in nodes)
    calls = [n.target.rsplit(".", 1)[-1] for n in nodes if n.op in ("call_function", "call_method", "call_module")]
    inputs = ", ".join(f"{n.dtype}[{', '.join(n.shape)}]" for n in nodes if n.op == "placeholder" and n.dtype)
    text = _clip(f"{g.graph.op_count} ops: {', '.join(calls)}", 90)
    return key, text + (f" · inputs {_clip(inputs, 60)}" if inputs else "")


def _breaks(v: _RankView, cid: str) -> tuple[Any, str]:
    items = v.breaks.get(cid, [])
    if not items:
        return (), "no graph break"
    key = tuple(sorted({masked_identity(b) for b in items}))
    text = "; ".join(f"{b.break_type} at {b.user_frame.short() if b.user_frame else '?'}" for b in items)
    return key, _clip(text)


def masked_identity(b: GraphBreak) -> tuple[str, str, int, str]:
    """A graph break's identity (``break_identity``) as ranks compare it: its text without object ids."""
    kind, file, line, function = break_identity(b)
    return masked(kind), masked(file), line, masked(function)


# object ids and addresses differ from process to process, and each rank's GPU index by design: every key
# below is compared without them (derived/ids.py), while the text shown keeps them
_ADDRESS = ADDRESS
_DEVICE_INDEX = DEVICE_INDEX
_KEYSET = re.compile(r"DispatchKeySet\([^)]*\),\s*")


def guard_key(g: Any) -> tuple[str, str, str]:
    """A guard as ranks compare it: without object ids and without the rank's own GPU index."""
    return g.guard_type, _ADDRESS.sub("#", g.source), _DEVICE_INDEX.sub("#", _ADDRESS.sub("#", g.expression))


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
    # a reason names the object whose id changed (``___check_obj_id(fn, 140439264606080)``): its id is per process
    return tuple(masked(x) for x in r.reasons), _clip(
        "recompiled: " + ("; ".join(r.reasons) or "(PyTorch gave no reason)"))


def _kernels(v: _RankView, cid: str) -> tuple[Any, str]:
    outs = v.outputs.get(cid, [])
    key = tuple((o.part, tuple(masked(k.name) for k in o.kernels)) for o in outs)
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


def _compile_ids_text(ids: tuple[str, ...]) -> str:
    return _clip(f"{len(ids)} compiles: {' '.join(ids)}")


def _ddp(v: _RankView, cid: str) -> tuple[Any, str]:
    s = v.splits.get(cid)
    if s is None:
        return None, "not split"
    key = tuple((masked(c.name), tuple(masked(p) for p in c.parameters)) for c in s.children)
    return key, _clip(f"{len(s.children)} buckets: " + " | ".join(
        f"{c.name} {len(c.parameters)} params" for c in s.children))


def _collectives(v: _RankView, cid: str) -> tuple[Any, str]:
    cols = collectives.of_stages(v.rank.stages, cid)
    if not cols:
        return (), "no collective"
    return tuple(c.key for c in cols), _clip(f"{len(cols)} collectives: " + ", ".join(c.text() for c in cols))


def _describe_collectives(d: Divergence, view: Callable[[int], _RankView]) -> Divergence:
    """Each group as its first collective that differs from the others': order, kind, group, size."""
    lists = {g.ranks[0]: collectives.of_stages(view(g.ranks[0]).rank.stages, d.compile_id) for g in d.groups}
    groups = [lists[g.ranks[0]] for g in d.groups]
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


def _diverging(cid: str, aspect: str, keys: Mapping[int, Any], text: Callable[[int], str]) -> Optional[Divergence]:
    """Ranks grouped by key (first-rank order), each group shown as ``text`` of its first rank; None when they
    all agree."""
    groups: dict[Any, list[int]] = {}
    for rank in sorted(keys):
        groups.setdefault(keys[rank], []).append(rank)
    if len(groups) < 2:
        return None
    return Divergence(compile_id=cid, aspect=aspect,
                      groups=tuple(RankGroup(tuple(ranks), text(ranks[0])) for ranks in groups.values()))


def _describe_guards(d: Divergence, view: Callable[[int], _RankView]) -> Divergence:
    """Each group's guards that not every group has: what one rank assumed and another did not."""
    sets = []
    for g in d.groups:
        graph = view(g.ranks[0]).graphs.get(d.compile_id)
        sets.append({guard_key(x): x for x in (graph.guards if graph is not None else ())})
    common = set.intersection(*(set(s) for s in sets))
    groups = []
    for g, guards in zip(d.groups, sets):
        own = [_KEYSET.sub("", x.expression) for k, x in guards.items() if k not in common]
        text = f"{len(guards)} guards" + (f"; only here: {'; '.join(own[:3])}" + (" …" if len(own) > 3 else "")
                                          if own else "")
        groups.append(RankGroup(g.ranks, _clip(text, 160)))
    return Divergence(d.compile_id, d.aspect, tuple(groups))


def _describe_cache(d: Divergence, view: Callable[[int], _RankView]) -> Divergence:
    """Each group's cache misses with the key components that differ from another group's look-up of the
    same graph: why one rank missed where another hit (or missed with another key)."""

    def own(g: RankGroup) -> dict[Any, Any]:
        ct = view(g.ranks[0]).rank.compile_time
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
