"""Compile time, phase by phase: torch's timed spans -> one tree per compile. Pure: no torch.

torch times every compiler phase with ``dynamo_timed`` (torch/_dynamo/utils.py) and logs each as a
pair of ``chromium_event`` records on the structured trace: ``{"ph": "B"|"E", "name", "ts" (µs)}``,
plus instant events (``"ph": "i"``) for cache look-ups. ``spans_to_trees`` turns such records into a
tree per root span, whatever they were read from (a live capture, a recorded trace, a TORCH_TRACE
log); ``build`` adds torch's compilation_metrics, the cache look-ups and the findings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Optional

from tcinspect import jsonfast
from tcinspect.parse.events import CHROMIUM_EVENT, Event, compact_span, json_payload
from tcinspect.parse.memo import memoized
from tcinspect.report import (
    CacheKeyComponent,
    CacheLookup,
    CompileTime,
    CompileTimeFinding,
    CompileTiming,
    Phase,
    Recompile,
)
from tcinspect.vocabulary import BACKWARD_ROOT, FORWARD_ROOT, breakdown

if TYPE_CHECKING:
    from tcinspect.parse.run import RunEvents

#: chromium_event_timed("dynamo") wraps entire_frame_compile and adds only bookkeeping: left out, so
#: that the forward root is the span torch's own total measures.
_WRAPPERS = frozenset({"dynamo"})

_EXACT = {
    "entire_frame_compile": "dynamo", "entire_backward_compile": "inductor", "bytecode_tracing": "dynamo",
    "build_guards": "dynamo", "gc": "dynamo", "insert_deferred_runtime_asserts": "dynamo",
    "backend_compile": "aot_autograd", "create_aot_dispatcher_function": "aot_autograd",
    "aot_collect_metadata": "aot_autograd", "aot_trace_joint_graph": "aot_autograd",
    "min_cut_rematerialization_partition": "aot_autograd",
    "GraphLowering.run": "lowering",
    "Scheduler.__init__": "scheduling", "Scheduler.fused_nodes": "scheduling",
    "Scheduler.codegen": "codegen", "GraphLowering.codegen": "codegen", "code_gen": "codegen",
    "PythonWrapperCodegen.generate": "codegen", "GraphLowering.compile_to_fn": "codegen",
    "compile_file": "compile", "async_compile.wait": "compile", "PyCodeCache.load_by_key_path": "compile",
    "inductor_compile": "inductor", "fx_codegen_and_compile": "inductor",
    "additional_fake_tensor_prop": "inductor",
}


def group_of(name: str, parent: str = "other") -> str:
    """The phase group of a span named ``name``; a name tcinspect does not know takes its parent's.

    Everything inside a cache span is cache time: loading a hit imports its compiled code.
    """
    if parent == "cache":
        return "cache"
    if name in _EXACT:
        return _EXACT[name]
    low = name.lower()
    if name.startswith("compile_attempt_"):
        return "dynamo"
    if name.startswith("compile_fx."):  # compile_fx.<locals>.fw_compiler_base / bw_compiler / ...
        return "inductor"
    if "autotun" in low or "benchmark" in low or "select_algorithm" in low:
        return "autotune"
    if "precompil" in low:  # e.g. mm_template_precompiling: Triton templates compiled before autotuning
        return "compile"
    if "cache" in low or "triton_key" in low or "torch_key" in low or low.startswith("tritonbundler"):
        return "cache"
    if "pre_grad_passes" in low or "post_grad_passes" in low or "joint_graph_passes" in low:
        return "graph_passes"
    if "triton" in low and "compile" in low:
        return "compile"
    return parent


@dataclass(frozen=True)
class Span:
    """One chromium_event record: B(egin), E(nd) or i(nstant), at ``ts`` µs."""

    ph: str
    name: str
    ts: float
    compile_id: str = ""  # "" for a span logged outside any compile (a compile worker thread)
    args: dict[str, Any] = field(default_factory=dict, compare=False)


def span_of(ev: Event) -> Optional[Span]:
    """The span of a recorded chromium_event (None for any other event)."""
    if ev.name != CHROMIUM_EVENT:
        return None
    data = compact_span(ev.meta, ev.payload)
    if not data:
        return None
    args = data.get("args") or {}
    cid = ev.compile_id or str(args.get("compile_id") or "")
    return Span(str(data.get("ph", "")), str(data.get("name", "")), float(data.get("ts") or 0.0),
                "" if cid == "None" else cid, args)


@dataclass
class _Open:
    name: str
    start: float
    args: dict[str, Any]
    children: list[_Tree] = field(default_factory=list)


@dataclass
class _Tree:
    """A closed span with absolute times (µs); turned into a Phase relative to its root."""

    name: str
    start: float
    end: float
    args: dict[str, Any]
    children: list[_Tree]


@dataclass
class Trees:
    """What ``spans_to_trees`` made: root spans per compile id, worker spans, and what did not fit."""

    roots: dict[str, list[_Tree]] = field(default_factory=dict)
    workers: list[_Tree] = field(default_factory=list)
    instants: list[Span] = field(default_factory=list)
    unmatched: int = 0


def spans_to_trees(spans: Iterable[Span]) -> Trees:
    """Pair begin and end records into nested spans: a stack per compile id, one for worker threads.

    An end whose start is not open is counted and dropped; spans still open under it are closed
    there (as torch's own logger does). Spans logged outside any compile (compile workers, which
    run in parallel) are paired apart and kept out of the compiles' trees.
    """
    out = Trees()
    stacks: dict[str, list[_Open]] = {}
    waiting: dict[str, list[_Open]] = {}  # worker spans open, by name
    for s in spans:
        if s.name in _WRAPPERS:
            continue
        if s.ph == "i":
            out.instants.append(s)
            continue
        if not s.compile_id:
            _worker(s, waiting, out)
            continue
        stack = stacks.setdefault(s.compile_id, [])
        if s.ph == "B":
            stack.append(_Open(s.name, s.ts, dict(s.args)))
            continue
        if s.ph != "E":
            continue
        at = next((i for i in range(len(stack) - 1, -1, -1) if stack[i].name == s.name), None)
        if at is None:
            out.unmatched += 1
            continue
        while len(stack) > at:
            top = stack.pop()
            closed = _Tree(top.name, top.start, max(s.ts, top.start), {**top.args, **s.args}, top.children)
            if len(stack) > at:
                out.unmatched += 1  # an inner span that never ended: closed with its parent
            if stack:
                stack[-1].children.append(closed)
            else:
                out.roots.setdefault(s.compile_id, []).append(closed)
    # started, never ended (a crash)
    out.unmatched += sum(len(st) for st in stacks.values()) + sum(len(q) for q in waiting.values())
    return out


def _worker(s: Span, waiting: dict[str, list[_Open]], out: Trees) -> None:
    """A span of a compile worker thread. Workers run side by side and every thread logs as tid 0, so
    an end closes the earliest open span of its name (a worker span never contains another)."""
    queue = waiting.setdefault(s.name, [])
    if s.ph == "B":
        queue.append(_Open(s.name, s.ts, dict(s.args)))
    elif s.ph == "E":
        if not queue:
            out.unmatched += 1
            return
        first = queue.pop(0)
        out.workers.append(_Tree(first.name, first.start, max(s.ts, first.start), {**first.args, **s.args}, []))


def to_phase(tree: _Tree, origin: float, parent_group: str = "other") -> Phase:
    """A span tree as a Phase, times in seconds from ``origin`` (µs)."""
    group = group_of(tree.name, parent_group)
    children = tuple(to_phase(c, origin, group) for c in tree.children)
    seconds = (tree.end - tree.start) / 1e6
    inside = sum(c.seconds for c in children)
    return Phase(name=tree.name, group=group, start_s=round((tree.start - origin) / 1e6, 6), seconds=round(seconds, 6),
                 self_s=round(max(seconds - inside, 0.0), 6), children=children)


# ----------------------------------------------------------------------------- events -> CompileTime


def _num(d: dict[str, Any], key: str) -> float:
    v = d.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0


def _compile_threads(metrics: dict[str, Any]) -> int:
    text = metrics.get("inductor_config")
    if not isinstance(text, str):
        return 0
    m = re.search(r'"compile_threads":\s*(\d+)', text)
    return int(m.group(1)) if m else 0


def _caches(events: Sequence[Event], spans: Optional[Sequence[Optional[Span]]] = None) \
        -> dict[tuple[str, str], list[CacheLookup]]:
    """Cache look-ups per (compile id, root part), from torch's fx_graph_cache_* / aotautograd_cache_* artifacts.

    An FX graph look-up belongs to the root span open when it was logged. An AOTAutograd cache hit
    loads the forward's and then the backward's FX graph (AOTAutogradCache.inductor_load) while the
    forward compiles: both are listed under the forward compile, each with its own part.
    """
    out: dict[tuple[str, str], list[CacheLookup]] = {}
    open_root: dict[str, str] = {}
    loading: dict[str, int] = {}  # compile id -> AOTAutogradCache.inductor_load spans open
    loaded: dict[str, int] = {}  # compile id -> FX graphs loaded by AOTAutograd cache hits so far
    for i, ev in enumerate(events):
        if ev.name == CHROMIUM_EVENT:
            s = span_of(ev) if spans is None else spans[i]  # spans: each event's span_of, computed once
            if s is None or not s.compile_id or s.ph not in ("B", "E"):
                continue
            if s.name in (FORWARD_ROOT, BACKWARD_ROOT):
                if s.ph == "B":
                    open_root[s.compile_id] = "forward" if s.name == FORWARD_ROOT else "backward"
                else:
                    open_root.pop(s.compile_id, None)
            elif s.name == "AOTAutogradCache.inductor_load":
                loading[s.compile_id] = loading.get(s.compile_id, 0) + (1 if s.ph == "B" else -1)
            continue
        if ev.name == PRECOMPILE_BYPASS and ev.compile_id:
            data = json_payload(ev)
            data = data if isinstance(data, dict) else {}
            root = open_root.get(ev.compile_id, "forward")
            out.setdefault((ev.compile_id, root), []).append(
                CacheLookup("precompile", "", "bypass", str(data.get("_reason") or "")))
            continue
        m = _CACHE_EVENT.fullmatch(ev.name)
        if m is None or not ev.compile_id:
            continue
        cid = ev.compile_id
        data, found = _cache_artifact(ev.payload)
        reason = str(data.get("cache_bypass_reason") or "")
        root = open_root.get(cid, "forward")
        if m.group(1) == "aotautograd":
            lookup = CacheLookup("aot_autograd", "", m.group(2), reason, round(_num(data, "time_saved_ms") / 1e3, 3),
                                 **found)
        elif loading.get(cid, 0) > 0:
            n = loaded.get(cid, 0)
            loaded[cid] = n + 1
            lookup = CacheLookup("fx_graph", "forward" if n % 2 == 0 else "backward", m.group(2), reason,
                                 round(_num(data, "time_saved_ns") / 1e9, 3), **found)
        else:
            lookup = CacheLookup("fx_graph", root, m.group(2), reason, round(_num(data, "time_saved_ns") / 1e9, 3),
                                 **found)
        out.setdefault((cid, root), []).append(lookup)
    return out


PRECOMPILE_BYPASS = "precompile_cache_bypass"
#: how much of a key component's value a report keeps (its hash stands for the whole)
COMPONENT_VALUE_CHARS = 160
#: the value is the rest of the string, which can be long (a graph's code): it is cut before it is copied
_COMPONENT = re.compile(r"\[(?P<hash>[^\]]*)\] (?P<name>[^:]+?): ")


def key_components(items: Any) -> tuple[CacheKeyComponent, ...]:
    """torch's ``components`` list (``[hash] name: value`` strings) as components; others skipped."""
    if not isinstance(items, list):
        return ()
    if all(isinstance(item, str) for item in items):  # equal on ranks that compiled alike: read once (parse/memo.py)
        return _components(tuple(items))
    return _read_components(items)


def _read_components(items: Sequence[Any]) -> tuple[CacheKeyComponent, ...]:
    out = []
    for item in items:
        m = _COMPONENT.match(item) if isinstance(item, str) else None
        if m is not None:
            out.append(CacheKeyComponent(m["name"].strip(), m["hash"], _value(item, m.end())))
    return tuple(out)


_components = memoized(_read_components)


def _value(item: str, start: int) -> str:
    """``item[start:].strip()``, cut to ``COMPONENT_VALUE_CHARS`` (and "…"), without copying the whole rest."""
    end = len(item)
    while start < end and item[start].isspace():
        start += 1
    if end - start > 2 * COMPONENT_VALUE_CHARS:  # only a long value's tail is looked at, for trailing whitespace
        tail = item[end - COMPONENT_VALUE_CHARS:]
        stripped = tail.rstrip()
        if stripped:
            return item[start:start + COMPONENT_VALUE_CHARS] + "…"
    value = item[start:end].strip()
    if len(value) > COMPONENT_VALUE_CHARS:
        value = value[:COMPONENT_VALUE_CHARS] + "…"
    return value


@memoized
def _cache_artifact(payload: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A cache artifact's JSON (``{}`` when it is none) and its ``_lookup_fields``: equal on ranks that compiled
    alike, read once (parse/memo.py); neither is changed by its callers."""
    try:
        data = jsonfast.loads(payload) if payload else None
    except ValueError:
        data = None
    data = data if isinstance(data, dict) else {}
    return data, _lookup_fields(data)


def _lookup_fields(data: dict[str, Any]) -> dict[str, Any]:
    """The key, its components, the cost of a miss and remote-cache fields of one cache artifact."""
    remote = tuple(f"{k}: {data[k]}" for k in sorted(data) if "remote" in k.lower())
    return {"key": str(data.get("key") or ""), "components": key_components(data.get("components")),
            "cost_s": round(_num(data, "time_taken_ns") / 1e9, 3) if data.get("cache_state") == "miss" else 0.0,
            "remote": remote}


_CACHE_EVENT = re.compile(r"(fx_graph|aotautograd)_cache_(hit|miss|bypass|disabled)")


def build(events: Iterable[Event], recompiles: Sequence[Recompile] = ()) -> Optional[CompileTime]:
    """Every compile's phase tree, torch's totals, the cache look-ups and the findings; None if no span."""
    evs = list(events)
    each = [span_of(e) for e in evs]
    spans = [s for s in each if s is not None]
    if not spans:
        return None
    trees = spans_to_trees(spans)
    forward_metrics: dict[str, list[dict[str, Any]]] = {}
    backward_metrics: dict[str, list[dict[str, Any]]] = {}
    threads = 0
    for e in evs:
        if e.name == "compilation_metrics" and e.compile_id:
            forward_metrics.setdefault(e.compile_id, []).append(e.meta)
            threads = threads or _compile_threads(e.meta)
        elif e.name == "bwd_compilation_metrics" and e.compile_id:
            backward_metrics.setdefault(e.compile_id, []).append(e.meta)
    caches = _caches(evs, each)
    all_roots = [r for roots in trees.roots.values() for r in roots]
    origin = min((r.start for r in all_roots), default=0.0)

    timings: list[CompileTiming] = []
    for cid, roots in trees.roots.items():
        seen = {"forward": 0, "backward": 0}
        for tree in roots:
            part = {FORWARD_ROOT: "forward", BACKWARD_ROOT: "backward"}.get(tree.name, "runtime")
            metrics = (forward_metrics if part == "forward" else backward_metrics).get(cid, []) \
                if part != "runtime" else []
            m = metrics[seen[part]] if part != "runtime" and seen[part] < len(metrics) else {}
            if part != "runtime":
                seen[part] += 1
            root = to_phase(tree, tree.start)
            total = _num(m, "entire_frame_compile_time_s") if part == "forward" else _num(m, "duration_us") / 1e6
            workers = tuple(to_phase(w, tree.start) for w in sorted(trees.workers, key=lambda w: w.start)
                            if tree.start <= w.start <= tree.end)
            restarts = m.get("restart_reasons") or ()
            timings.append(CompileTiming(
                compile_id=cid, part=part, function=str(m.get("co_name") or ""),
                start_s=round((tree.start - origin) / 1e6, 6), total_s=round(total or root.seconds, 6),
                inductor_s=round(_num(m, "inductor_compile_time_s"), 6), root=root, workers=workers,
                restarts=tuple(sorted(str(r).strip().splitlines()[0] for r in restarts if str(r).strip()))
                if isinstance(restarts, (list, tuple)) else (),
                caches=tuple(caches.get((cid, part), ())) if part != "runtime" else (),
                before_restart_s=round(_num(m, "dynamo_time_before_restart_s"), 6) if restarts else 0.0))
    # a backward compile recorded only by its metrics (its spans were lost) still counts
    for cid, ms in backward_metrics.items():
        have = sum(1 for t in timings if t.compile_id == cid and t.part == "backward")
        for m in ms[have:]:
            timings.append(CompileTiming(compile_id=cid, part="backward", total_s=round(_num(m, "duration_us") / 1e6, 6),
                                         inductor_s=round(_num(m, "inductor_compile_time_s"), 6),
                                         caches=tuple(caches.get((cid, "backward"), ()))))
    functions = {t.compile_id: t.function for t in timings if t.function}
    timings = [t if t.function else _with_function(t, functions.get(t.compile_id, "")) for t in timings]
    timings.sort(key=lambda t: t.start_s)
    result = CompileTime(compiles=tuple(timings), compile_threads=threads, unmatched_spans=trees.unmatched)
    return replace(result, findings=findings(result, recompiles))


def _with_function(t: CompileTiming, function: str) -> CompileTiming:
    return replace(t, function=function)


# ----------------------------------------------------------------------------- findings

#: A phase group taking at least this share of all compile time is worth a finding.
SHARE = 0.25
#: FX graph cache misses that took at least this long to compile (and 10% of compile time) are worth a finding.
WARM_S = 1.0


def findings(ct: CompileTime, recompiles: Sequence[Recompile] = ()) -> tuple[CompileTimeFinding, ...]:
    """What to do about the compile time: avoidable recompiles, bypassed caches, slow phases."""
    out: list[CompileTimeFinding] = []
    by_id: dict[str, float] = {}
    for t in ct.compiles:
        if t.part != "runtime":
            by_id[t.compile_id] = by_id.get(t.compile_id, 0.0) + t.total_s
    total = sum(by_id.values())
    for rc in recompiles:
        cost = by_id.get(rc.compile_id, 0.0)
        shape = any("size mismatch" in r or "stride mismatch" in r or "sizes" in r for r in rc.reasons)
        fix = rc.suggestion or ("mark the changing dimension dynamic before the first call "
                                "(torch._dynamo.mark_dynamic(tensor, dim)) so one graph serves every size"
                                if shape else "make the guarded value constant between calls, or pass it as a tensor")
        why = rc.reasons[0] if rc.reasons else "a guard failed"
        out.append(CompileTimeFinding("recompile", rc.compile_id, round(cost, 3),
                                      f"recompile {rc.compile_id} of {rc.function or '?'} cost {cost:.2f} s ({why})",
                                      fix))
    for t in ct.compiles:
        for c in t.caches:
            if c.state == "bypass":
                cache = "FX graph cache" if c.cache == "fx_graph" else "AOTAutograd cache"
                out.append(CompileTimeFinding(
                    "cache_bypass", t.compile_id, round(t.total_s, 3),
                    f"{cache} bypassed for {t.compile_id} {c.part or t.part}: {c.reason or 'no reason given'}",
                    _bypass_fix(c)))
        if t.restarts:
            out.append(CompileTimeFinding(
                "restart", t.compile_id, round(t.before_restart_s, 3),
                f"Dynamo restarted its analysis of {t.compile_id} {len(t.restarts)} time(s): {'; '.join(t.restarts)}",
                "each restart traces the frame again: fix the graph break that caused it (tcinspect breaks)"))
    groups: dict[str, float] = {}
    for t in ct.compiles:
        if t.root is not None and t.part != "runtime":  # shares of compile time only
            for g, s in breakdown(t.root).items():
                groups[g] = groups.get(g, 0.0) + s
    if total > 0:
        compile_s = groups.get("compile", 0.0)
        misses = any(c.state in ("miss", "bypass") for t in ct.compiles for c in t.caches)
        if compile_s / total >= SHARE and (misses or ct.compile_threads == 1):
            if ct.compile_threads == 1:
                fix = ("compile_threads is 1, so kernels compile one at a time: set TORCHINDUCTOR_COMPILE_THREADS "
                       "to the number of CPU cores (or torch._inductor.config.compile_threads)")
            else:
                fix = ("keep TORCHINDUCTOR_CACHE_DIR between runs (or use torch.compiler.save_cache_artifacts / "
                       "load_cache_artifacts) so later runs load compiled kernels instead of compiling them")
            out.append(CompileTimeFinding("compile_threads" if ct.compile_threads == 1 else "cold_compile", "",
                                          round(compile_s, 3),
                                          f"compiling kernels took {compile_s:.2f} s, {100 * compile_s / total:.0f}% "
                                          "of compile time" + (" (cache misses)" if misses else ""), fix))
        warm = sum(c.cost_s for t in ct.compiles for c in t.caches if c.cache == "fx_graph" and c.state == "miss")
        if not any(f.kind == "cold_compile" for f in out) and warm >= max(WARM_S, 0.1 * total):
            # the misses' own compile time, by torch's measure: never "nothing to fix" beside "a warm start would save"
            n_misses = sum(1 for t in ct.compiles for c in t.caches if c.cache == "fx_graph" and c.state == "miss")
            out.append(CompileTimeFinding(
                "cold_cache", "", round(warm, 3),
                f"{n_misses} FX graph cache miss{'es' if n_misses != 1 else ''} took {warm:.2f} s to compile "
                f"({100 * warm / total:.0f}% of compile time)",
                "run once with this TORCHINDUCTOR_CACHE_DIR and keep it: your own torch.compile saves the entries and "
                "later runs load them (tcinspect's capture saves none of its own, so its reports keep these misses)"))
        autotune = groups.get("autotune", 0.0)
        if autotune / total >= SHARE:
            out.append(CompileTimeFinding("autotune", "", round(autotune, 3),
                                          f"autotuning took {autotune:.2f} s, {100 * autotune / total:.0f}% of compile time",
                                          "autotune once and keep the cache (TORCHINDUCTOR_CACHE_DIR), or use mode="
                                          "'max-autotune-no-cudagraphs'/default where the speed-up does not pay"))
    return tuple(sorted(out, key=lambda f: -f.seconds))


def _bypass_fix(c: CacheLookup) -> str:
    reason = c.reason.lower()
    if "disabled" in reason or "not enabled" in reason:
        return "enable it: torch._inductor.config.fx_graph_cache = True / TORCHINDUCTOR_FX_GRAPH_CACHE=1" \
            if c.cache == "fx_graph" else "enable it: torch._functorch.config.enable_autograd_cache = True"
    if "custom" in reason or "pass" in reason:
        return "a custom pass or op without a cache key makes the graph uncacheable: give it a uuid() " \
               "(CustomGraphPass) or leave it out"
    return "this graph is compiled afresh every run; remove what torch names as uncacheable, if you can"


def section(run: RunEvents) -> Optional[CompileTime]:
    """The report's section of where compile time went, from a run (report/sections.py registers it)."""
    return build(run.events, run.assembled.dynamo.recompiles)
