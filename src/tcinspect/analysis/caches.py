"""The compile caches of a report (pure; no torch): every look-up, why it missed, what changed since.

A miss of the FX graph cache is explained by its key: torch lists the key's components (``[hash] name:
value``), and the components whose hash differs from the same graph's look-up in an earlier report
(the previous report of the model file, a baseline, another rank) are what changed. The same
comparison serves ``compile-time``, ``diff``, ``check --expect-warm`` and rank divergence.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tcinspect.derived.cachekeys import CACHE_TITLES, HASH_CHARS, SHOWN, by_id, changed_components, lookup_id, lookups
from tcinspect.report import CacheLookup, CompileTiming, Report


def with_changes(rep: Report, previous: Report, compared_with: str) -> Report:
    """``rep`` with each FX graph cache miss compared with the same graph's look-up in ``previous``."""
    if rep.compile_time is None or previous.compile_time is None:
        return rep
    before = by_id(previous.compile_time)
    compiles = []
    for t in rep.compile_time.compiles:
        caches = []
        for c in t.caches:
            was = before.get(lookup_id(t, c))
            if c.state == "miss" and c.components and was is not None and was.components:
                c = replace(c, changed=changed_components(was, c), compared_with=compared_with)
            caches.append(c)
        compiles.append(replace(t, caches=tuple(caches)))
    return replace(rep, compile_time=replace(rep.compile_time, compiles=tuple(compiles)))


def explanation(c: CacheLookup) -> str:
    """Why a look-up missed or was bypassed, in one line ('' for a hit)."""
    if c.state == "bypass":
        return c.reason or "no reason given"
    if c.state != "miss":
        return ""
    if c.changed:
        more = f" (+{len(c.changed) - SHOWN} more)" if len(c.changed) > SHOWN else ""
        return "changed since " + (c.compared_with or "the last run") + ": " + "; ".join(c.changed[:SHOWN]) + more
    if c.compared_with:
        return (f"key unchanged since {c.compared_with}: the entry is not in this cache directory "
                "(a cold or cleared cache, or another TORCHINDUCTOR_CACHE_DIR)")
    if c.cache == "aot_autograd":
        return "torch lists no key components for AOTAutograd; see the FX graph look-ups of this compile"
    return "no earlier run of this graph recorded to compare with"


def document(rep: Report) -> list[dict[str, Any]]:
    """The ``caches`` section of ``compile-time``'s YAML/JSON: one entry per look-up."""
    out = []
    for t, c in lookups(rep.compile_time):
        entry: dict[str, Any] = {"compile_id": t.compile_id, "part": c.part or t.part, "cache": c.cache,
                                 "state": c.state, "key": c.key}
        if c.reason:
            entry["reason"] = c.reason
        if c.state == "bypass":
            entry["where"] = bypass_site(rep, t, c)
        if c.saved_s:
            entry["saved_s"] = c.saved_s
        if c.cost_s:
            entry["warm_start_saves_s"] = c.cost_s
        if c.state == "miss":
            entry["why"] = explanation(c)
            entry["changed"] = list(c.changed)
        if c.remote:
            entry["remote"] = list(c.remote)
        entry["components"] = len(c.components)
        out.append(entry)
    return out


def warm_start_saves(rep: Report) -> float:
    """Compile time a warm start would save: what each FX graph cache miss took, by torch's measure."""
    return round(sum(c.cost_s for _, c in lookups(rep.compile_time) if c.state == "miss"), 3)


#: compiling kernels under this share of what the FX graph cache misses took: their compiled code was reused
REUSED_SHARE = 0.2


def kernel_code_reused(compile_s: float, misses_s: float) -> str:
    """A line saying that the misses compiled little C++/Triton code, which came from Inductor's code cache: why a
    run whose FX graph look-ups all missed can take a fraction of a cold run's time; "" when they compiled it."""
    if misses_s <= 0 or compile_s >= REUSED_SHARE * misses_s:
        return ""
    return (f"compiling kernels took {compile_s:.2f} s of the misses' {misses_s:.2f} s: their compiled C++/Triton "
            "code came from Inductor's code cache (TORCHINDUCTOR_CACHE_DIR, shared by tcinspect's capture and your "
            "runs); the rest is tracing and code generation, which only an FX graph cache hit skips")


def bypass_site(rep: Report, t: CompileTiming, c: CacheLookup) -> str:
    """The line of the Dynamo graph node whose op torch named in a bypass reason, where one is named."""
    for g in rep.stages.dynamo.graphs:
        if g.compile_id != t.compile_id:
            continue
        for n in g.graph.nodes:
            target = str(n.target)
            short = target.rsplit(".", 1)[-1]
            # torch names the op as "Function name: f", "<function f at ...>" or, for a higher-order op it
            # does not cache (codecache.CacheabilityValidator, 2.13-2.15), "HigherOrderOperator: cond"
            if n.op.startswith("call") and short and (f"Function name: {short}" in c.reason or
                                                     f"<function {short} " in c.reason or
                                                     c.reason.endswith(f"HigherOrderOperator: {short}")):
                where = f"{n.source.file}:{n.source.line}" if n.source is not None else ""
                return f"{where} ({n.name}: {target})" if where else f"{n.name}: {target}"
    return ""


def diff(a: Report, b: Report) -> list[str]:
    """One line per look-up of ``b`` whose key differs from the same graph's in ``a``, naming the components
    (the AOTAutograd cache lists none: its line says only that the key changed)."""
    before = by_id(a.compile_time)
    out = []
    for key, c in by_id(b.compile_time).items():
        was = before.get(key)
        # the same key in both: the same compile, whatever each cache held (a cold and a warm run are no difference)
        if was is None or not (was.key and c.key) or was.key == c.key:
            continue
        changes = changed_components(was, c)
        text = "; ".join(changes[:SHOWN]) + (f" (+{len(changes) - SHOWN} more)" if len(changes) > SHOWN else "")
        out.append(f"{key[0]} {key[1]} {CACHE_TITLES.get(key[2], key[2])}: {was.state} → {c.state}, key changed: "
                   + (text or "no component listed"))
    return out


def expect_warm(rep: Report, hits: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    """(look-up, why) for each look-up that hit in a baseline and does not hit now.

    ``hits``: the baseline's record, ``"compile part cache" -> {"key": ..., "components": {name: hash}}``.
    """
    now = {" ".join(k): c for k, c in by_id(rep.compile_time).items()}
    out = []
    for name, was in sorted(hits.items()):
        c = now.get(name)
        if c is None:
            out.append((name, "not looked up in this run (the graph was not compiled, or the cache was off)"))
            continue
        if c.state == "hit":
            continue
        if c.state == "bypass":
            out.append((name, f"bypassed: {c.reason or 'no reason given'}"))
            continue
        recorded = was.get("components")
        old: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
        changed = [f"{k.name}" for k in c.components if old and old.get(k.name) not in (None, k.hash[:HASH_CHARS])]
        changed += [f"{k.name} (new)" for k in c.components if old and k.name not in old]
        changed += [f"{n} (gone)" for n in old if n not in {k.name for k in c.components}]
        if changed:
            why = "key components changed since the baseline: " + ", ".join(changed[:8]) + \
                (f" (+{len(changed) - 8} more)" if len(changed) > 8 else "")
        elif was.get("key") and was.get("key") == c.key:
            why = "same key as the baseline, but the entry is not in this cache (cold, cleared or another " \
                  "TORCHINDUCTOR_CACHE_DIR)"
        else:
            why = explanation(c)
        out.append((name, f"{c.state}: {why}"))
    return out


def warm_record(rep: Report) -> dict[str, dict[str, Any]]:
    """What ``check --expect-warm`` keeps in a baseline: every look-up that hit, its key and components."""
    return {" ".join(k): {"key": c.key, "components": {x.name: x.hash[:HASH_CHARS] for x in c.components}}
            for k, c in by_id(rep.compile_time).items() if c.state == "hit"}


def expect_warm_findings(model: str, rep: Report, base: dict[str, Any], path: str) -> list[tuple[str, str, str]]:
    """(name, status, message) findings of ``check --expect-warm`` against a baseline entry."""
    hits = base.get("warm")
    if not isinstance(hits, dict):
        return []
    failed = expect_warm(rep, hits)
    if not failed:
        return [("expect warm", "ok", f"{len(hits)} cache look-up(s) hit, as in the baseline")]
    return [("cache miss", "fail", f"{name} hit in the baseline, now {why}") for name, why in failed]
