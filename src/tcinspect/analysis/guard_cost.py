"""What the guards cost on every call: per compile, guards that grow with the model, per-call means, and
the levers of PyTorch's "Reducing Guard Overhead" page that the report's evidence supports. Pure."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional

from tcinspect.report import CallCost, CompileGuardCost, DynamoGraph, Guard, Report

#: A layer index, once a source is readable: an attribute indexed by a whole number (``.h[3]``, a ModuleList's
#: ``_modules['3']``); ``L['args'][0]`` (a positional argument) is not one, nor ``.size()[0]``, nor a
#: function's ``__closure__[2]`` or ``__defaults__[0]``.
_LAYER = re.compile(r"\.(?!__)[A-Za-z_]\w*(\[(\d+)\])")
_DICT_HOPS = re.compile(r"\._(?:modules|parameters|buffers)\['([A-Za-z_]\w*)'\]")
_INDEX_HOPS = re.compile(r"\._modules\['(\d+)'\]")


def readable(source: str) -> str:
    """A guard source as the user wrote it: ``._modules['h']._modules['0']`` becomes ``.h[0]``."""
    if "._" not in source:
        return source
    return _DICT_HOPS.sub(r".\1", _INDEX_HOPS.sub(r"[\1]", source))


@dataclass(frozen=True)
class Family:
    """Guards on the same path in every layer of a repeated container (``h[*]``): they grow with depth."""

    container: str  # the container with its index normalised, e.g. "L['args'][0].transformer.h[*]"
    layers: int
    guards: int  # in all layers together
    per_layer: tuple[int, ...]  # guards in each layer, by index
    lambda_guards: int = 0


@lru_cache(maxsize=1 << 16)  # each guard's source is split again for every view that counts families
def _layer_split(source: str) -> Optional[tuple[str, str]]:
    """(container with [*], the layer's index) for a source inside a repeated layer, else None."""
    text = readable(source)
    m = _LAYER.search(text)  # the outermost index: a family is counted once, in its outermost container
    return (text[:m.start(1)] + "[*]", m.group(2)) if m else None


def families(guards: tuple[Guard, ...], lambda_expressions: tuple[str, ...] = ()) -> list[Family]:
    """Guards grouped by the repeated container their source sits in (layer indices normalised), largest
    first; only containers with two or more layers. A lambda guard counts in the container its expression
    first reaches into (``A.config is A.layers[1].attn.config``)."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for g in guards:
        split = _layer_split(g.source)
        if split:
            counts[split[0]][split[1]] += 1
    lambdas: Counter[str] = Counter()
    for expression in lambda_expressions:
        split = _layer_split(expression)
        if split:
            lambdas[split[0]] += 1
    out = [Family(c, len(n), sum(n.values()), tuple(n[k] for k in sorted(n, key=int)), lambdas[c])
           for c, n in counts.items() if len(n) >= 2]
    return sorted(out, key=lambda f: -f.guards)


@dataclass(frozen=True)
class Lever:
    """One knob of PyTorch's "Reducing Guard Overhead" page, with the evidence in this report for it."""

    name: str
    how: str
    evidence: str
    risk: str
    compile_ids: tuple[str, ...] = ()


DOCS = "https://docs.pytorch.org/docs/main/user_guide/torch_compiler/compile/programming_model.reducing_guard_overhead.html"


def _float_guards(c: CompileGuardCost) -> list[str]:
    return [x.expression for x in c.lambda_guards if "math.isnan(" in x.expression or "float input" in x.user_code]


def levers(rep: Report) -> list[Lever]:
    """The levers the report's evidence supports (none when it supports none)."""
    cost = rep.guard_cost
    if cost is None:
        return []
    graphs = {g.compile_id: g for g in rep.stages.dynamo.graphs}
    out = []
    floats = [(c.compile_id, _float_guards(c)) for c in cost.compiles if _float_guards(c)]
    if floats:
        n = sum(len(x) for _, x in floats)
        out.append(Lever(
            "specialize_float", "torch._dynamo.config.specialize_float = True",
            f"{n} lambda guard(s) on float inputs Dynamo made symbolic (e.g. `{floats[0][1][0]}`): evaluated in "
            "Python on every call",
            "a float input becomes a constant of the graph: each new value recompiles (up to the recompile limit)",
            tuple(cid for cid, _ in floats)))
    growing = [(c, families(graphs[c.compile_id].guards)) for c in cost.compiles if c.compile_id in graphs]
    growing = [(c, f) for c, f in growing if f]
    untagged = [(c, f) for c, f in growing if c.tag_safe_roots == 0]
    if untagged:
        c, fams = untagged[0]
        f = fams[0]
        out.append(Lever(
            "recursive dict tags", "torch._dynamo.config.use_recursive_dict_tags_for_guards = True",
            f"guards grow with the model ({f.container}: {f.layers} layers, {f.guards} guards in {c.compile_id}) "
            "and no guard manager is a tag-safe root (tag_safe=(…, True)): every module's guards run on every call",
            "Dynamo skips a module's guards while its dicts' version tags are unchanged: a change its tags do not "
            "show (state mutated outside the module's __dict__) goes unseen, and stale compiled code runs",
            tuple(x.compile_id for x, _ in untagged)))
    if growing:
        c, fams = growing[0]
        measured = ", ".join(f"{x.compile_id} {_us(latency_of(x))}" for x, _ in growing if latency_of(x) is not None)
        entries = _entries_per_frame(rep)
        out.append(Lever(
            "skip_guard_eval_unsafe", "with torch.compiler.set_stance(skip_guard_eval_unsafe=True): (after warm-up)",
            f"guards grow with the model ({fams[0].container}: {fams[0].layers} layers)"
            + (f"; guard latency {measured}" if measured else "")
            + (f"; cache entries per frame: {entries}" if entries else ""),
            "Dynamo then runs only the guards that tell a frame's cache entries apart: if anything else a guard "
            "checked changes (a module attribute, a global, grad mode, a new shape or dtype), the wrong compiled "
            "code runs silently and gives wrong results; use it only when every call's inputs and state match a "
            "warm-up call's",
            tuple(x.compile_id for x, _ in growing)))
    return out


def _entries_per_frame(rep: Report) -> str:
    """Graphs compiled per frame (the cache entries its lookup may try), e.g. "forward 2"."""
    per: dict[str, list[DynamoGraph]] = defaultdict(list)
    for g in rep.stages.dynamo.graphs:
        per[g.compile_id.split("/")[0]].append(g)
    return ", ".join(f"{gs[0].function} {len(gs)}" for gs in per.values())


def latency_of(c: CompileGuardCost) -> Optional[float]:
    """torch's guard latency for the compile: the printed value (two decimals), else compilation_metrics'."""
    return c.printed_latency_us if c.printed_latency_us is not None else c.guard_latency_us


def _us(v: Optional[float]) -> str:
    return "-" if v is None else f"{v:,.2f} us"


def max_latency(rep: Report) -> Optional[tuple[str, float]]:
    """The compile with the largest guard latency as compilation_metrics states it (``check``'s metric)."""
    cost = rep.guard_cost
    found = [(c.compile_id, c.guard_latency_us if c.guard_latency_us is not None else latency_of(c))
             for c in (cost.compiles if cost else ())]
    known = [(cid, v) for cid, v in found if v is not None]
    return max(known, key=lambda kv: kv[1]) if known else None


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


@dataclass(frozen=True)
class InputSetCost:
    """Medians over one input set's timed calls (a shared machine's outliers move a mean, not a median)."""

    input_set: int
    calls: int
    call_us: float
    lookup_us: float
    lookups: float
    before_first_op_us: Optional[float]
    compile_ids: tuple[str, ...]
    entries_tried: int  # the most entries any of its calls tried in one frame

    @property
    def before_share(self) -> Optional[float]:
        return None if self.before_first_op_us is None or not self.call_us else self.before_first_op_us / self.call_us


def per_input_set(calls: tuple[CallCost, ...]) -> list[InputSetCost]:
    by: dict[int, list[CallCost]] = defaultdict(list)
    for c in calls:
        by[c.input_set].append(c)
    out = []
    for k in sorted(by):
        cs = by[k]
        firsts = [c.before_first_op_us for c in cs if c.before_first_op_us is not None]
        out.append(InputSetCost(
            k, len(cs), _median([c.call_us for c in cs]), _median([c.lookup_us for c in cs]),
            _median([float(c.lookups) for c in cs]), _median(firsts) if firsts else None,
            tuple(dict.fromkeys(cid for c in cs for cid in c.compile_ids)),
            max((t for c in cs for t in c.entries_tried), default=0)))
    return out


def document(rep: Report) -> Optional[dict[str, Any]]:
    """The guard-cost part of the `guards` YAML/JSON; None when the report has none."""
    cost = rep.guard_cost
    if cost is None:
        return None
    graphs = {g.compile_id: g for g in rep.stages.dynamo.graphs}
    compiles = []
    for c in cost.compiles:
        g: Optional[DynamoGraph] = graphs.get(c.compile_id)
        placed = Counter(x.placement for x in c.lambda_guards)
        compiles.append({
            "compile_id": c.compile_id, "function": c.function, "guards": len(g.guards) if g else 0,
            "guard_latency_us": c.guard_latency_us, "printed_latency_us": c.printed_latency_us,
            "lambda_guards": len(c.lambda_guards), "lambda_guards_by_placement": dict(sorted(placed.items())),
            "lambda_guard_list": [{"placement": x.placement, "source": x.source, "expression": x.expression,
                                   "user_code": x.user_code} for x in c.lambda_guards],
            "tag_safe_roots": c.tag_safe_roots,
            "growing_with_model": [{"container": f.container, "layers": f.layers, "guards": f.guards,
                                    "per_layer": list(f.per_layer), "lambda_guards": f.lambda_guards}
                                   for f in (families(g.guards, tuple(x.expression for x in c.lambda_guards))
                                             if g else [])],
        })
    out: dict[str, Any] = {"compiles": compiles,
                           "levers": [{"name": x.name, "how": x.how, "evidence": x.evidence, "risk": x.risk,
                                       "compile_ids": list(x.compile_ids), "docs": DOCS} for x in levers(rep)]}
    if cost.per_call is not None:
        p = cost.per_call
        out["per_call"] = {
            "runs": p.runs, "note": p.note, "compiled_during": list(p.compiled_during),
            "frames": [{"function": f.function, "file": f.file, "line": f.line, "cache_entries": list(f.compile_ids)}
                       for f in p.frames],
            "input_sets": [{"input_set": s.input_set, "calls": s.calls, "call_us": round(s.call_us, 3),
                            "lookup_us": round(s.lookup_us, 3), "lookups": s.lookups,
                            "before_first_op_us": None if s.before_first_op_us is None else round(s.before_first_op_us, 3),
                            "before_first_op_share": None if s.before_share is None else round(s.before_share, 4),
                            "compile_ids": list(s.compile_ids), "entries_tried": s.entries_tried}
                           for s in per_input_set(p.calls)],
        }
    return out
