"""What in a report needs action, ranked by what it costs: the answer every command leads with (pure; no torch).

Each finding is read from what the report already holds, which is torch's record of the run: the frames run eagerly
(coverage), graph breaks by cost (``breaks.break_costs``), recompiles with their suggestion, CUDA graph skips, cache
bypasses and slow cold compiles (``CompileTime.findings``), guard overhead (``guard_cost.levers``) and memory.
Nothing here estimates a figure; a finding torch gave no figure for has none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Optional

from tcinspect.analysis import coverage as coverage_views
from tcinspect.analysis.breaks import break_costs
from tcinspect.report import NOT_RUN, OK, Report, SourceLocation

#: Finding.kind, in the order findings rank: what decides whether the model runs compiled at all comes first, then
#: what splits or repeats its compiles, then what slows the compiled code down.
KINDS = ("failure", "ranks", "eager", "graph_break", "recompile", "cudagraph_skip", "cache", "guard_overhead", "memory")

#: Findings a command shows (the rest are counted, and every one is in the YAML/JSON ``findings``).
SHOWN = 8

#: A compiled step's memory peak this much above eager's is a finding.
MEMORY_RATIO = 1.1


@dataclass(frozen=True)
class Finding:
    """One thing that needs action: what happened, what it costs, the user's line, the fix, where the detail is."""

    kind: str  # one of KINDS
    what: str
    #: torch's own words for it (a failed guard, why it gave up, a skip reason), quoted as torch's; "" where none
    torch_says: str = ""
    #: what it costs, in torch's figures ("12 ATen ops ran eagerly", "1.20 s of compile time"); "" where none
    cost: str = ""
    #: the user's line, "file.py:12 `code`"; "" where torch recorded none
    where: str = ""
    fix: str = ""
    #: "torch" where the fix is torch's own hint, "tcinspect" where it is tcinspect's suggestion
    fix_from: str = "tcinspect"
    #: the command that shows the detail
    detail: str = ""


def _short(loc: Optional[SourceLocation]) -> str:
    if loc is None:
        return ""
    return f"{loc.short()} `{loc.code}`" if loc.code else loc.short()


def _plural(n: int, word: str, many: str = "") -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {many or word + 's'}"


def _times(n: int) -> str:
    return "once" if n == 1 else "twice" if n == 2 else f"{n} times"


# ----------------------------------------------------------------------------- "your code"

#: torch's own files as torch names them in a guard's frame: shortened below the torch/ directory
#: (torch/utils/_traceback.py shorten_filename: "_dynamo/output_graph.py:1135 in init_ambient_guards"), 2.11-2.15.
#: A path is shortened against torch's directory, so a project holding its own venv has its files shortened alike
#: ("tests/models/m.py"): only torch's private packages and the modules of its public ones a model runs through
#: count, not every name torch has a package for (a project's own "distributed/" is the project's).
_TORCH_PREFIXES = ("_dynamo/", "_inductor/", "_functorch/", "_subclasses/", "_higher_order_ops/", "_prims/",
                   "_prims_common/", "_refs/", "_decomp/", "_library/", "_logging/", "_export/", "_strobelight/",
                   "_guards.py", "_ops.py", "_tensor.py", "_jit_internal.py", "_meta_registrations.py",
                   "nn/modules/", "nn/functional.py", "nn/parallel/", "nn/utils/parametrize", "fx/experimental/",
                   "fx/passes/", "fx/graph_module.py", "fx/_symbolic_trace.py", "fx/interpreter.py",
                   "autograd/function.py", "autograd/graph.py", "utils/_", "utils/hooks.py", "utils/checkpoint.py",
                   "distributed/_composable/", "distributed/fsdp/", "distributed/tensor/", "distributed/_tensor/",
                   "distributed/distributed_c10d.py", "distributed/algorithms/", "amp/autocast_mode.py")
#: "<path>:<line> in <function>", how torch names a frame (torch/utils/_traceback.py format_frame)
_FRAME = re.compile(r"(?P<file>[^\s:]+\.py):(?P<line>\d+) in (?P<fn>[\w<>.]+)")


def torch_file(file: str) -> bool:
    """Whether a file torch names is torch's own: a path inside the torch package, absolute or as torch shortens it."""
    f = file.replace("\\", "/")
    return "/torch/" in f or f.startswith(("torch/", *_TORCH_PREFIXES))


@dataclass(frozen=True)
class YourCode:
    """A guard's "user code" as torch recorded it, split: the user's line, or torch's own frame or note."""

    code: str = ""  # the user's source line ("" where the frame is torch's or torch named none)
    where: str = ""  # "file.py:12 in fn", shortened by torch
    #: torch's own frame ("_dynamo/output_graph.py:1135 in init_ambient_guards") or note ("unknown source …,
    #: please file a bug": torch asking its users, not tcinspect)
    torch_text: str = ""

    @property
    def internal(self) -> bool:
        return not self.code and bool(self.torch_text)


def your_code(user_code: str) -> YourCode:
    """Split a guard's recorded user code ("<line>  # <file>:<n> in <fn>", a bare torch frame, or torch's note)."""
    text = user_code.strip()
    if not text:
        return YourCode()
    if text.startswith("(") and text.endswith(")"):  # "(unknown source L['x'].stride()[0], please file a bug)"
        return YourCode(torch_text=text[1:-1])
    code, sep, rest = text.partition("  # ")
    frame = _FRAME.match(rest if sep else code)
    if not sep and frame is not None and frame.end() == len(code):  # a bare frame: torch's own, no user line
        return YourCode(where=code, torch_text=code if torch_file(frame["file"]) else "")
    if frame is None:  # no frame: a note of torch's ("implicit guard for float input due to NaN specialization …")
        return YourCode(torch_text=text)
    where = frame.group(0)
    if torch_file(frame["file"]):
        return YourCode(where=where, torch_text=f"{where} `{code.strip()}`")
    return YourCode(code=code.strip(), where=where)


# ----------------------------------------------------------------------------- the findings


def _input_name(i: int, script: bool) -> str:
    if i < 0:
        return ""
    if script:
        return f"call {i + 1}"
    return "example_inputs" if i == 0 else f"input_sets[{i - 1}]"


def _compile_seconds(rep: Report, cids: set[str]) -> float:
    """torch's compile time of these compiles: compilation_metrics' frame time and each backward's."""
    s = sum(c.entire_frame_compile_time_s for c in rep.compiles if c.compile_id in cids)
    if rep.compile_time is not None:
        s += sum(t.total_s for t in rep.compile_time.compiles if t.part == "backward" and t.compile_id in cids)
    return s


def _failure(rep: Report) -> list[Finding]:
    if rep.failure is not None:
        return [Finding("failure", rep.failure.cause, fix=rep.failure.fix, detail="tcinspect trace --stage summary")]
    failed = [(name, st) for name, st in (("Dynamo", rep.stages.dynamo), ("AOTAutograd", rep.stages.aot_autograd),
                                          ("Inductor", rep.stages.inductor)) if st.status not in (OK, NOT_RUN)]
    out = [Finding("failure", f"{name} failed", torch_says=st.error, detail="tcinspect trace --stage summary")
           for name, st in failed[:1]]
    if rep.error and not out:
        out.append(Finding("failure", "the capture is incomplete", torch_says=rep.error,
                           detail="tcinspect trace --stage summary"))
    return out


def _eager(rep: Report, costs: list[Any]) -> tuple[list[Finding], set[int]]:
    """Frames that ran eagerly (torch gave up on them, their backend failed, or the recompile limit was hit); and the
    breaks they account for (by id), which are not said again."""
    out: list[Finding] = []
    said: set[int] = set()
    for f in coverage_views.eager_frames(rep):
        cost = ""
        fix, fix_from = "", "tcinspect"
        for d, c in costs:
            if c.frame_ran_eagerly and f.compile_id in d.compile_ids:
                said.add(id(d))
                if c.eager_ops:
                    cost = f"{_plural(c.eager_ops, 'ATen op')} of the measured call ran eagerly"
                fix, fix_from = d.first.fix, "torch" if d.first.fix in d.first.hints else "tcinspect"
                break
        out.append(Finding("eager", f"{f.function} ({f.file.rsplit('/', 1)[-1]}:{f.line}) runs eagerly: torch gave up "
                                    "on the whole frame (a fallback to eager)",
                           torch_says=f.reason or f.fail_type, cost=cost, where=_short(f.user_frame), fix=fix,
                           fix_from=fix_from, detail="tcinspect breaks"))
    for b in rep.stages.dynamo.backend_failures:
        out.append(Finding("eager", f"backend {rep.options.backend or '?'} failed on {b.function} "
                                    f"({b.file.rsplit('/', 1)[-1]}:{b.line}): the frame runs eagerly",
                           torch_says=b.error, where=_short(b.user_frame), detail="tcinspect trace --stage dynamo"))
    for r in rep.stages.dynamo.recompiles:
        if r.limit_hit:
            out.append(Finding("eager", f"{r.function} hit the recompile limit at {r.compile_id}: it runs eagerly from "
                                        "then on", torch_says=r.reasons[0] if r.reasons else "", fix=r.suggestion,
                               detail="tcinspect guards"))
    return out, said


def _breaks(rep: Report, costs: list[Any], said: set[int]) -> list[Finding]:
    out = []
    for d, c in costs:
        if id(d) in said:
            continue
        b = d.first
        if c.eager_ops:
            cost = f"{_plural(c.eager_ops, 'ATen op')} of the measured call ran eagerly"
        elif c.calls_before or c.calls_after:
            cost = f"splits the graph: {c.calls_before} calls before it, {c.calls_after or 0} after"
        else:
            cost = ""
        what = f"graph break: {b.break_type}" + (f" ({_times(d.count)})" if d.count > 1 else "")
        out.append(Finding("graph_break", what, torch_says=b.explanation, cost=cost, where=_short(b.user_frame),
                           fix=b.fix, fix_from="torch" if b.fix in b.hints else "tcinspect", detail="tcinspect breaks"))
    return out


def _recompiles(rep: Report) -> list[Finding]:
    """Recompiles of one frame for one cause, together: how often, which calls, the failed guard, the fix."""
    groups: dict[tuple[str, str], list[Any]] = {}
    for r in rep.stages.dynamo.recompiles:
        if not r.limit_hit:
            groups.setdefault((r.function, r.suggestion), []).append(r)
    frames = {c.compile_id: c for c in rep.compiles}
    script = rep.target.kind == "script"
    out = []
    for (function, suggestion), items in groups.items():
        cids = [r.compile_id for r in items]
        seconds = _compile_seconds(rep, set(cids))
        calls = [n for n in dict.fromkeys(_input_name(r.input_set, script) for r in items) if n]
        m = frames.get(items[0].compile_id)
        # the frame Dynamo compiled, where it is the user's (torch.compile of a function compiles torch's wrapper)
        frame = f" ({m.file.rsplit('/', 1)[-1]}:{m.line})" if m is not None and m.file and not torch_file(m.file) \
            else ""
        what = (f"{function}{frame} recompiled {_times(len(items))} "
                f"({', '.join(cids[:4])}{', …' if len(cids) > 4 else ''})")
        if calls:
            what += f" at {', '.join(calls[:3])}{', …' if len(calls) > 3 else ''}"
        out.append(Finding("recompile", what, torch_says=items[0].reasons[0] if items[0].reasons else "",
                           cost=f"{seconds:.2f} s compiling" if seconds else "", fix=suggestion,
                           detail="tcinspect guards"))
    return out


def _cudagraph_skips(rep: Report) -> list[Finding]:
    cg = rep.cudagraphs
    if cg is None:
        return []
    by_reason: dict[str, list[Any]] = {}
    for g in cg.graphs:
        if g.status == "skipped":
            by_reason.setdefault(g.reason, []).append(g)
    out = []
    for reason, graphs in by_reason.items():
        names = [f"{g.compile_id} {g.part}".strip() for g in graphs]
        lines = [x for g in graphs for x in g.user_lines]
        out.append(Finding("cudagraph_skip", f"CUDA graphs skipped {', '.join(names[:3])}"
                                             f"{', …' if len(names) > 3 else ''}: that graph runs without one",
                           torch_says=reason, where=lines[0].rsplit("/", 1)[-1] if lines else "",
                           fix=_CUDAGRAPH_FIXES.get(next((k for k in _CUDAGRAPH_FIXES if reason.startswith(k)), ""), ""),
                           detail="tcinspect trace --stage cudagraphs"))
    from tcinspect.analysis.cudagraphs import islands, kernel_share

    found = [i for i in islands(rep) if any(p.cudagraphable for g in cg.graphs if (g.compile_id, g.part) ==
                                            (i.compile_id, i.part) for p in g.partitions)]
    if found:  # the worst eager island that splits a graph CUDA graphs capture the rest of
        worst, share = found[0], kernel_share(cg)
        p = worst.partition
        out.append(Finding("cudagraph_skip", f"an eager island splits {worst.compile_id} {worst.part}: partition "
                                             f"{p.index} runs outside CUDA graphs"
                                             + (f" ({len(found)} islands in all)" if len(found) > 1 else ""),
                           torch_says=", ".join(p.reasons),
                           cost=f"{_plural(p.kernels, 'kernel')} outside CUDA graphs"
                                + (f"; {100 * share:.0f}% of all kernels inside" if share is not None else ""),
                           where=p.user_lines[0].rsplit("/", 1)[-1] if p.user_lines else "",
                           fix=next((f for k, f in _ISLAND_FIXES.items() if any(r.startswith(k) for r in p.reasons)),
                                    "move that work onto the GPU, or out of the compiled function"),
                           detail="tcinspect trace --stage cudagraphs"))
    if cg.rerecordings:
        out.append(Finding("cudagraph_skip", f"CUDA graphs re-recorded {_times(cg.rerecordings)}",
                           cost=f"{_plural(cg.recordings, 'recording')} in all",
                           fix="a new size of a dynamic shape, or an input at a new address, records a new CUDA graph: "
                               "keep the sizes the graph sees few (pad to buckets)",
                           detail="tcinspect trace --stage cudagraphs"))
    return out


#: torch's skip reasons (torch/_inductor/cudagraph_utils.py, 2.11-2.15) whose remedy the reason itself names
_CUDAGRAPH_FIXES = {
    "mutated inputs": "the graph mutates one of its inputs in place (the line shown): mutate a copy, or move the "
                      "mutation out of the compiled function",
    "cpu device": "a CPU tensor takes part in the graph: move it to the GPU, or let graph_partition split it out",
    "non gpu ops": "an op runs off the GPU: move its tensors to the GPU",
}


#: torch's partition reasons (Scheduler.should_partition, 2.11-2.15) and the remedy each names
_ISLAND_FIXES = {
    "cpu ops": "the island runs on the CPU (a .cpu(), a CPU tensor): keep that work on the GPU",
    "DeviceCopy ops": "a copy between devices splits the CUDA graphs: keep the tensors on one device",
    "dynamic shape ops": "cudagraph_skip_dynamic_graphs leaves dynamic-shape ops out: mark fewer sizes dynamic, "
                         "or let CUDA graphs record one graph per size",
    "CUDAGraph-unsafe custom ops": "a custom op tagged cudagraph_unsafe: make it capturable, or keep it outside",
    "unbacked binding ops": "a data-dependent size (.item(), nonzero) is read on the host: avoid it in the step",
}


def _caches(rep: Report) -> list[Finding]:
    ct = rep.compile_time
    if ct is None:
        return []
    # a restart is a graph break's (said with the break); a recompile's cost is said with the recompile
    wanted = ("cache_bypass", "cold_cache", "cold_compile", "compile_threads", "autotune")
    items = sorted((f for f in ct.findings if f.kind in wanted), key=lambda f: -f.seconds)
    # a message that states its seconds is not followed by them again
    return [Finding("cache", f.message, cost=f"{f.seconds:.2f} s compiling" if f.seconds and f"{f.seconds:.2f} s"
                    not in f.message else "", fix=f.fix, detail="tcinspect compile-time") for f in items]


def _guard_overhead(rep: Report) -> list[Finding]:
    from tcinspect.analysis import guard_cost as gc

    cost = rep.guard_cost
    levers = gc.levers(rep)
    if cost is None or not levers or not cost.compiles:
        return []
    worst = max(cost.compiles, key=lambda c: gc.latency_of(c) or -1.0)
    lat = gc.latency_of(worst)
    lambdas = sum(len(c.lambda_guards) for c in cost.compiles)
    spent = f"guard latency {lat:,.2f} us ({worst.compile_id}, torch's measure)" if lat is not None else ""
    if cost.per_call is not None and cost.per_call.calls:
        sets = gc.per_input_set(cost.per_call.calls)
        spent = f"cache lookup {sum(s.lookup_us for s in sets) / len(sets):,.2f} us a call (torch.profiler)"
    lever = levers[0]
    return [Finding("guard_overhead", f"{_plural(rep.summary.guards, 'guard')} run before every call "
                                      f"({lambdas:,} of them in Python: lambda guards)", cost=spent,
                    fix=f"{lever.how} ({lever.name}: read its risk first)", detail="tcinspect guards")]


def _memory(rep: Report) -> list[Finding]:
    from tcinspect.analysis.memory import human, peak_ratio

    ratio = peak_ratio(rep)
    m = rep.memory.measured if rep.memory is not None else None
    if ratio is None or m is None or ratio < MEMORY_RATIO:
        return []
    return [Finding("memory", f"the compiled step's memory peak is {ratio:.2f}× eager's",
                    cost=f"{human(m.compiled_peak - m.compiled_start)} above the step's start, eager "
                         f"{human(m.eager_peak - m.eager_start)} (CUDA caching allocator)",
                    fix="see what the compiled graphs save for backward, by module and line", detail="tcinspect memory")]


def _ranks(rep: Report) -> list[Finding]:
    from tcinspect.analysis import divergence as rank_divergence
    from tcinspect.derived.runs import TITLES

    out = []
    if rep.mixed_runs:  # tcinspect's reading of the logs' origins (parse/ranks), not torch's words
        said = ", ".join(dict.fromkeys(TITLES.get(m.what, m.what) for m in rep.mixed_runs))
        out.append(Finding("ranks", f"these rank logs are not one run's ({said}): where ranks differ, it may be the "
                                    "logs that differ, not the job's ranks",
                           fix="read a directory holding one run's logs (one file per rank, written together)",
                           detail="tcinspect trace --format yaml (mixed_runs)"))
    bad = [r for r in rep.ranks if r.status != OK]
    for r in bad[:2]:
        out.append(Finding("ranks", f"rank {r.rank} {r.status}", torch_says=r.error, where=r.where,
                           detail="tcinspect trace"))
    divs = rep.divergence
    consequence = rank_divergence.consequence(rep, divs) if divs else ""
    first = rank_divergence.first_compile(divs) if divs else ""
    if consequence:
        out.append(Finding("ranks", f"ranks differ: {consequence}",
                           cost=f"first at compile {first} "
                                f"({', '.join(d.aspect for d in divs if d.compile_id == first)})" if first else "",
                           detail="tcinspect trace (Divergence)"))
    elif first:
        out.append(Finding("ranks", f"ranks differ first at compile {first} "
                                    f"({', '.join(d.aspect for d in divs if d.compile_id == first)}): what they check "
                                    "or generate differs, not what they run", detail="tcinspect trace (Divergence)"))
    return out


def _of_one(rep: Report) -> list[Finding]:
    costs = break_costs(rep)
    eager, said = _eager(rep, costs)
    return [*_failure(rep), *eager, *_breaks(rep, costs, said), *_recompiles(rep), *_cudagraph_skips(rep),
            *_caches(rep), *_guard_overhead(rep), *_memory(rep)]


def _of_ranks(rep: Report) -> list[Finding]:
    """Each rank's findings, once per group of ranks that has it (the ranks named in front)."""
    from tcinspect.analysis.divergence import rank_report
    from tcinspect.vocabulary import ranks_cut

    having: dict[tuple[str, ...], list[int]] = {}
    first: dict[tuple[str, ...], Finding] = {}
    texts: dict[tuple[str, ...], set[str]] = {}
    for r in rep.ranks:
        seen: dict[tuple[str, ...], int] = {}
        for f in _of_one(rank_report(rep, r)):
            # a compile time differs rank to rank, an object id process to process: the same finding all the same
            # (a rank's second finding of the same shape pairs with the other ranks' second)
            shape = (f.kind, *(_NUMBERS.sub("#", x) for x in (f.what, f.torch_says, f.where, f.fix)))
            seen[shape] = seen.get(shape, 0) + 1
            key = (*shape, str(seen[shape]))
            having.setdefault(key, []).append(r.rank)
            first.setdefault(key, f)
            texts.setdefault(key, set()).add(f.what + f.torch_says + f.cost)
    out = []
    for key, ranks in having.items():
        f = first[key]
        label = "every rank" if len(ranks) == len(rep.ranks) else ranks_cut(ranks, 3)
        figures = f" (rank {ranks[0]}'s figures)" if len(texts[key]) > 1 else ""
        out.append(replace(f, what=f"{label}: {f.what}{figures}"))
    return out


#: numbers in a finding's text: seconds, object ids
_NUMBERS = re.compile(r"\d+(?:\.\d+)?")


def findings(rep: Report) -> tuple[Finding, ...]:
    """Everything in the report that needs action, costliest kind first (``KINDS``), each kind in torch's order or
    by its cost (breaks: ``break_costs``; caches: seconds)."""
    items = [*_ranks(rep), *_of_ranks(rep)] if rep.ranks else _of_one(rep)
    order = {k: i for i, k in enumerate(KINDS)}
    return tuple(sorted(items, key=lambda f: order[f.kind]))  # stable: each kind keeps its own ranking


def verdict(rep: Report) -> str:
    """One line: whether the model runs compiled, and the counts that say how well (a distributed report: per rank)."""
    if rep.failure is not None or not rep.ok:
        return "the capture failed: " + (rep.failure.cause if rep.failure is not None else rep.error or "a stage failed")
    summaries = [r.summary for r in rep.ranks] if rep.ranks else [rep.summary]

    def count(values: list[int], word: str, many: str = "", zero: str = "") -> str:
        lo, hi = min(values), max(values)
        if lo != hi:
            return f"{lo}–{hi} {many or word + 's'} a rank"
        return zero if not hi and zero else _plural(hi, word, many) + (" on every rank" if rep.ranks else "")

    eager = [max(s.fallbacks_to_eager, 0) + s.graphs_failed for s in summaries]
    parts = [_plural(len(rep.ranks), "rank")] if rep.ranks else []
    parts += [count(eager, "frame run eagerly", "frames run eagerly", "no frame runs eagerly").replace(
                  "1 frame run eagerly", "1 frame runs eagerly"),
              count([s.graph_breaks for s in summaries], "graph break", zero="no graph break"),
              count([s.recompiles for s in summaries], "recompile", zero="no recompile")]
    if rep.coverage is not None and not rep.ranks:
        parts.append(coverage_views.headline(rep.coverage).split(" · ")[0])
        share = coverage_views.compiled_share(rep.coverage.runtime)
        if share is not None:
            parts.append(f"{share:.0%} of the measured call's ATen ops ran compiled")
    return " · ".join(parts)


def document(rep: Report) -> list[dict[str, Any]]:
    """The ``findings`` list of a command's YAML/JSON: every finding, ranked, each as its fields."""
    return [{"kind": f.kind, "what": f.what, "torch_says": f.torch_says, "cost": f.cost, "where": f.where,
             "fix": f.fix, "fix_from": f.fix_from, "detail": f.detail} for f in findings(rep)]
