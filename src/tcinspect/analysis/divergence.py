"""Per-rank views of a distributed run (pure; no torch): one rank as a whole report, and what the divergences
between ranks' recordings mean for the user (``derived.divergence`` finds them as the ranks are merged). What a
failed rank means for the whole run is decided where the ranks are merged: ``tcinspect.parse.ranks.rank_failure``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from tcinspect.derived import collectives
from tcinspect.derived.divergence import NOT_COMPILED, compile_order, guard_key, masked_identity
from tcinspect.derived.ids import masked
from tcinspect.report import (
    OK,
    Divergence,
    RankReport,
    Report,
)
from tcinspect.vocabulary import ranks_cut, ranks_text

# ----------------------------------------------------------------------------- per-rank views


def rank_report(rep: Report, rr: RankReport) -> Report:
    """One rank as a whole report (for the commands and checks that read one)."""
    return rep.replace(stages=rr.stages, compiles=rr.compiles, calls=rr.calls, input_errors=rr.input_errors,
                       device=rr.device or rep.device, error="" if rr.status == OK else rr.error, ranks=(),
                       compile_time=rr.compile_time, divergence=())


def per_rank(rep: Report) -> list[tuple[str, Report]]:
    """(prefix, report) for each rank of a distributed report ("rank 1: "); just ``("", rep)`` otherwise."""
    if not rep.ranks:
        return [("", rep)]
    return [(f"rank {r.rank}: ", rank_report(rep, r)) for r in rep.ranks]


def labelled(findings: Sequence[Any], prefix: str) -> list[Any]:
    """``check`` findings of one rank, each message starting with the rank."""
    return [replace(f, message=prefix + f.message) for f in findings]


def document(rep: Report, build: Callable[[Report], dict[str, Any]]) -> dict[str, Any]:
    """A command's YAML/JSON document, with each rank's own under ``ranks`` and the divergences."""
    doc = build(rep)
    if not rep.ranks:
        return doc
    shared = ("torch_version", "target", "device")
    doc["ranks"] = [{"rank": r.rank, "status": r.status, "error": r.error,
                     **{k: v for k, v in build(rank_report(rep, r)).items() if k not in shared}} for r in rep.ranks]
    doc["divergence"] = [serialize_divergence(d) for d in rep.divergence]
    if rep.mixed_runs:  # rank logs of more than one run (the warning on stderr says so too)
        doc["mixed_runs"] = [{"what": m.what, "groups": [{"ranks": list(g.ranks), "value": g.value} for g in m.groups]}
                             for m in rep.mixed_runs]
    return doc


def serialize_divergence(d: Divergence) -> dict[str, Any]:
    return {"compile_id": d.compile_id, "aspect": d.aspect,
            "groups": [{"ranks": list(g.ranks), "value": g.value} for g in d.groups]}


#: Aspects shown in the divergence but not failed by ``check`` (compile_ids repeats the compile aspect).
INFORMATIONAL_ASPECTS = ("cache", "compile_ids")
#: The aspect that best says why ranks differ at a compile, most telling first (the rest follow from it).
TELLING_ASPECTS = ("graph_breaks", "recompiles", "compile", "collectives", "graph", "ddp_split", "guards", "kernels")


def break_line(ranks: Sequence[RankReport], cid: str) -> tuple[str, int]:
    """Where the first break at ``cid`` is, on the first rank that broke there."""
    for r in ranks:
        for b in r.stages.dynamo.graph_breaks:
            if b.compile_id == cid and b.user_frame is not None:
                return b.user_frame.file, b.user_frame.line
    return "", 0


def describe(d: Divergence) -> str:
    """One line: where and how ranks differ."""
    where = f"at compile {d.compile_id}" if d.compile_id else "in the run"
    groups = "; ".join(f"{ranks_text(g.ranks)}: {g.value}" for g in d.groups)
    return f"ranks diverge {where} ({d.aspect}): {groups}"


def first_compile(divs: Sequence[Divergence]) -> str:
    """The first compile id where ranks differ ('' if they differ only in how the run ended)."""
    return next((d.compile_id for d in divs if d.compile_id), "")


#: spans of a rank list, compile ids and groups said in the consequence line before it is cut
_SAID = 4


def _ranks_cut(ranks: Sequence[int]) -> str:
    return ranks_cut(ranks, _SAID)


def _ids_cut(cids: Sequence[str]) -> str:
    return ", ".join(cids) if len(cids) <= _SAID else f"{', '.join(cids[:_SAID])}, … ({len(cids)} compiles)"


def consequence(rep: Report, divs: Sequence[Divergence]) -> str:
    """What the ranks' divergence does to the job, in one line: the compiles one group of ranks made and another
    did not, the collectives each group's compiled graphs run (a collective only some ranks of its group issue
    hangs a live job), the compiles whose graphs differ. "" where ranks differ only in what they check or how they
    generate code (guards, recompile reasons, kernels, caches)."""
    said: list[str] = []
    # compiles some finished ranks made and others did not, by which ranks lack them
    lacking: dict[tuple[tuple[int, ...], tuple[int, ...]], list[str]] = {}
    functions: dict[tuple[tuple[int, ...], tuple[int, ...]], list[str]] = {}
    for d in divs:
        if d.aspect != "compile":
            continue
        have = tuple(sorted(r for g in d.groups if g.value != NOT_COMPILED for r in g.ranks))
        lack = tuple(sorted(r for g in d.groups if g.value == NOT_COMPILED for r in g.ranks))
        lacking.setdefault((lack, have), []).append(d.compile_id)
        fn = next((g.value.removeprefix("compiled ") for g in d.groups if g.value != NOT_COMPILED), "")
        if fn and fn != "compiled" and fn not in functions.setdefault((lack, have), []):
            functions[(lack, have)].append(fn)
    for (lack, have), cids in list(lacking.items())[:2]:
        fns = functions.get((lack, have), [])
        said.append(f"{_ranks_cut(lack)} did not compile {_ids_cut(cids)}"
                    + (f" ({', '.join(fns[:_SAID])})" if fns else "") + f", which {_ranks_cut(have)} compiled")
    # the collectives of each rank's compiled graphs: ranks that compiled alike share their parts, counted once
    counted: dict[tuple[int, int, int], int] = {}
    by_count: dict[int, list[int]] = {}
    for r in rep.ranks:
        part = (id(r.stages.dynamo), id(r.stages.aot_autograd), id(r.stages.inductor))
        if part not in counted:
            counted[part] = len(collectives.of_stages(r.stages))
        by_count.setdefault(counted[part], []).append(r.rank)
    hang = " (a collective that only some ranks of its group issue hangs a live job)"
    if len(by_count) > 1:
        groups = sorted(by_count.items(), key=lambda kv: kv[1][0])
        counts = [f"{_ranks_cut(ranks)} {'runs' if len(ranks) == 1 else 'run'} {n}" for n, ranks in groups[:_SAID]]
        said.append(f"{counts[0]} collective{'' if groups[0][0] == 1 else 's'} in the compiled graphs, "
                    + ", ".join(counts[1:]) + (", …" if len(groups) > _SAID else "") + hang)
    else:
        cids = sorted({d.compile_id for d in divs if d.aspect == "collectives"}, key=compile_order)
        if cids:
            said.append(f"ranks run different collectives at compile {_ids_cut(cids)}{hang}")
    # the first compile's differing aspects are named after this line: its graph is not said twice
    first = first_compile(divs)
    graphs = sorted({d.compile_id for d in divs if d.aspect == "graph" and d.compile_id != first}, key=compile_order)
    if graphs:
        said.append(f"ranks compiled different graphs at compile {_ids_cut(graphs)}")
    # the order ranks ran their graphs in: collectives issued in another order than a peer's deadlock a live job
    order = next((d for d in divs if d.aspect == "execution_order"), None)
    if order is not None:
        runs = [g.value.split(":")[0] for g in order.groups]
        first_run = next((r for r in runs if r.startswith("run ")), runs[0])
        said.append(f"ranks ran their compiled graphs in different orders (first at {first_run})")
    return "; ".join(said)


def rank_values(rep: Report) -> list[tuple[RankReport, dict[str, Any]]]:
    """Each rank with the summary counts the per-rank table shows."""
    out = []
    for r in rep.ranks:
        s = r.summary
        out.append((r, {"graphs": s.graphs, "graph_breaks": s.graph_breaks, "recompiles": s.recompiles,
                        "guards": s.guards, "kernels": s.kernels,
                        "ddp_buckets": sum(len(x.children) for x in r.ddp_splits),
                        "collectives": len(collectives.of_stages(r.stages)),
                        "compile_time_s": s.compile_time_s}))
    return out


#: A rank's compile time is called out when it is this many times the others' median, and at least SPREAD_S longer.
SPREAD_RATIO, SPREAD_S = 1.5, 1.0


def compile_spread(rep: Report) -> str:
    """The rank that compiled longest, when it kept the others waiting: "" when ranks took alike.

    Ranks meet at their first collective, so the others wait for the slowest compile."""
    times = {r.rank: r.summary.compile_time_s for r in rep.ranks}
    if len(times) < 2:
        return ""
    slow = max(times, key=lambda k: times[k])
    others = sorted(v for k, v in times.items() if k != slow)
    median = others[len(others) // 2] if len(others) % 2 else (others[len(others) // 2 - 1] + others[len(others) // 2]) / 2
    if times[slow] < SPREAD_RATIO * median or times[slow] - median < SPREAD_S:
        return ""
    return (f"rank {slow} compiled for {times[slow]:.1f} s while the other ranks took a median {median:.1f} s: "
            "they wait for it at their first collective")


def breaks_key(rep: Report) -> Any:
    """What the `breaks` view of a rank shows: ranks with the same key are shown once (object ids masked)."""
    dyn = rep.stages.dynamo
    return (tuple(g.graph.op_count for g in dyn.graphs),
            tuple((b.compile_id, masked_identity(b)) for b in dyn.graph_breaks))


def guards_key(rep: Report) -> Any:
    """What the `guards` view of a rank shows, with object ids (which differ per process) masked."""
    dyn = rep.stages.dynamo
    return (tuple((g.compile_id, frozenset(guard_key(x) for x in g.guards)) for g in dyn.graphs),
            tuple((r.compile_id, tuple(masked(x) for x in r.reasons)) for r in dyn.recompiles))

