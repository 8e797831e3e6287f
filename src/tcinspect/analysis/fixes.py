"""``breaks --try-fixes``: the torch._dynamo.config settings a report's graph breaks and eager frames suggest, and
what a trial capture with one of them changed against the report (pure; no torch).

A setting to try comes from the break itself, never from a list of guesses:

- a config named with its value in tcinspect's suggested fix or in torch's own hints (``Set
  `torch._dynamo.config.capture_scalar_outputs = True```, torch's graph-break registry);
- ``reorderable_logging_functions``, where the fix or a hint names it, with the function the break calls
  (``print``, from torch's explanation or the user's line; ``logging.Logger.info`` for ``log.info(...)``);
- ``nested_graph_breaks=True`` for a break inside a function the compiled frame called (torch then resumes
  in that function instead of breaking the caller);
- for a frame run eagerly (or a graph the backend failed on): the config torch's exception names,
  DynamicOutputShapeException -> capture_dynamic_output_shape_ops, DataDependentOutputException on
  ``_local_scalar_dense`` (``.item()``) -> capture_scalar_outputs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

from tcinspect.analysis.coverage import frames_by_id
from tcinspect.report import FrameCoverage, GraphBreak, Report, SourceLocation, break_identity


@dataclass(frozen=True)
class ConfigFix:
    """One torch._dynamo.config setting to try, and the places (``file:line``) of the breaks it should remove."""

    config: str
    value: str
    places: tuple[str, ...] = ()

    @property
    def setting(self) -> str:
        """As Options.dynamo_config holds it: ``name=value``."""
        return f"{self.config}={self.value}"


@dataclass(frozen=True)
class Figures:
    """The counts a fix is judged by, as the report states them (Summary; Coverage: torch's counters)."""

    graph_breaks: int
    calls_captured: int
    fallbacks_to_eager: int
    recompiles: int

    @classmethod
    def of(cls, rep: Report) -> Figures:
        s = rep.summary
        return cls(s.graph_breaks, s.calls_captured, s.fallbacks_to_eager, s.recompiles)


#: What a trial found: fewer breaks or eager frames and nothing worse (helps), fewer but something worse (mixed),
#: the same counts (no effect), something worse only (worse: more breaks, eager frames or recompiles, fewer calls
#: captured, or outputs that no longer match eager), the trial failed (error), or nothing ran (not tried: this torch
#: lacks the config, or the function to add is not found).
VERDICTS = ("helps", "mixed", "no effect", "worse", "error", "not tried")


@dataclass(frozen=True)
class FixTrial:
    """One config fix tried in a capture of its own, against the report it was suggested by."""

    fix: ConfigFix
    verdict: str
    before: Figures
    #: None when the trial produced no report (``error`` says why)
    after: Optional[Figures] = None
    #: the trial's verify result: compiled outputs and gradients against eager (None: no trial report)
    outputs_match_eager: Optional[bool] = None
    #: why the trial failed or was not run: its one line (a crash, a timeout, the model raised, no such config)
    error: str = ""
    #: torch's one line for a break or eager frame still at one of the fix's places after it, e.g.
    #: "GB0296: attempted to reorder a debugging function that can't actually be reordered"
    reason: str = ""

    @property
    def verified(self) -> bool:
        """Whether the trial showed the fix works: fewer breaks or eager frames, nothing worse, outputs as eager's."""
        return self.verdict == "helps"


_SETTING = re.compile(r"torch\._dynamo\.config\.(?P<name>\w+)`?\s*(?:=|\bto\b)\s*`?(?P<value>True|False)\b")
_BUILTIN = re.compile(r"builtin (?:operator )?`(?P<fn>[A-Za-z_][\w.]*)`")
_CALL = re.compile(r"^\s*(?:[\w.]+\s*=\s*)?(?P<fn>[A-Za-z_][\w.]*)\s*\(")
_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<fn>.+)_at_\d+$")
#: torch's exceptions (and break types) whose text names no config but whose config is known
#: (torch/_subclasses/fake_tensor.py; the hints of GB0036 and GB0124 name the same configs)
_BY_EXCEPTION = (
    (re.compile(r"DynamicOutputShapeException|Dynamic shape operator"), "capture_dynamic_output_shape_ops"),
    (re.compile(r"DataDependentOutputException.*_local_scalar_dense|Tensor\.item\(\)"), "capture_scalar_outputs"),
)
LOGGING_CONFIG = "reorderable_logging_functions"


def place(loc: Optional[SourceLocation]) -> str:
    return f"{loc.file}:{loc.line}" if loc is not None else "?"


def _at(here: str, places: Sequence[str]) -> bool:
    """Whether ``here`` (``file:line``) is one of ``places``: the same line of the same file, one path perhaps
    relative and the other absolute (two captures, in two processes, need not spell a file alike)."""
    file, _, line = here.rpartition(":")
    for p in places:
        other, _, other_line = p.rpartition(":")
        if line == other_line and (file == other or file.endswith("/" + other) or other.endswith("/" + file)):
            return True
    return False


def _by_exception(text: str) -> list[tuple[str, str]]:
    return [(config, "True") for pattern, config in _BY_EXCEPTION if pattern.search(text)]


def _logging_function(b: GraphBreak) -> str:
    """The function a logging break calls: torch's explanation names a builtin (``print``), else the user's line
    (``logging.info(...)``); "" when neither says."""
    named = _BUILTIN.search(b.explanation)
    if named:
        return named["fn"]
    line = b.model_frame or b.user_frame
    call = _CALL.match(line.code) if line is not None else None
    if call and "logging.Logger method" in b.break_type:
        # ``log.info(...)`` on a Logger (GB0291): the function is the method, as the Logger class holds it
        return f"logging.Logger.{call['fn'].rsplit('.', 1)[-1]}"
    return call["fn"] if call else ""


def _nested(b: GraphBreak, frame: Optional[FrameCoverage]) -> bool:
    """Whether the break is inside a function the compiled frame called (a resumed frame counts as its own)."""
    if b.model_frame is not None:
        return True
    loc = b.user_frame
    if frame is None or loc is None or not loc.function or not frame.function:
        return False
    resumed = _RESUME.match(frame.function)
    return (loc.file, loc.function) != (frame.file, resumed["fn"] if resumed else frame.function)


def settings_for(b: GraphBreak, frame: Optional[FrameCoverage] = None) -> list[tuple[str, str]]:
    """The (config, value) settings one break suggests, in order (``frame``: the compile it broke)."""
    text = " ".join((b.fix, *b.hints))
    found = [(m["name"], m["value"]) for m in _SETTING.finditer(text)]
    if LOGGING_CONFIG in text:
        fn = _logging_function(b)
        if fn:
            found.append((LOGGING_CONFIG, fn))
    found += _by_exception(" ".join((b.break_type, b.explanation, b.reason)))
    if _nested(b, frame):
        found.append(("nested_graph_breaks", "True"))
    return list(dict.fromkeys(found))


def candidates(rep: Report) -> tuple[ConfigFix, ...]:
    """Each config fix the report's distinct breaks, eager frames and backend failures suggest, once, with the
    places it should clear, in the order the breaks were first seen."""
    frames = frames_by_id(rep)
    found: dict[tuple[str, str], list[str]] = {}

    def add(settings: Sequence[tuple[str, str]], where: str) -> None:
        for s in settings:
            places = found.setdefault(s, [])
            if where not in places:
                places.append(where)

    firsts: dict[tuple[str, str, int, str], GraphBreak] = {}  # each distinct break's first event, in order
    for b in rep.stages.dynamo.graph_breaks:
        firsts.setdefault(break_identity(b), b)
    for b in firsts.values():
        add(settings_for(b, frames.get(b.compile_id)), place(b.user_frame))
    for f in rep.coverage.eager_frames if rep.coverage is not None else ():
        add(_by_exception(f"{f.fail_type}: {f.reason}"), place(f.user_frame) if f.user_frame else f"{f.file}:{f.line}")
    for bf in rep.stages.dynamo.backend_failures:
        add(_by_exception(bf.error), place(bf.user_frame) if bf.user_frame else f"{bf.file}:{bf.line}")
    return tuple(ConfigFix(config, value, tuple(places)) for (config, value), places in found.items())


def _still_there(after: Report, places: Sequence[str]) -> str:
    """torch's one line for the first break, eager frame or backend failure left at one of ``places``."""
    for b in after.stages.dynamo.graph_breaks:
        if _at(place(b.user_frame), places):
            return f"{b.gb_id}: {b.break_type}" if b.gb_id else b.break_type
    for f in after.coverage.eager_frames if after.coverage is not None else ():
        if f.user_frame is not None and _at(place(f.user_frame), places):
            return f"frame run eagerly: {f.fail_type}: {f.reason}".rstrip(": ")
    for bf in after.stages.dynamo.backend_failures:
        if bf.user_frame is not None and _at(place(bf.user_frame), places):
            return f"the backend failed: {bf.error}"
    return ""


def judge(before: Report, fix: ConfigFix, after: Optional[Report] = None, error: str = "",
          tried: bool = True) -> FixTrial:
    """The trial of ``fix``: ``after`` its report, or ``error`` why there is none (``tried`` False: torch lacks the
    config, so nothing ran)."""
    was = Figures.of(before)
    if after is None or after.failure is not None:
        why = error or (f"{after.failure.cause} — {after.failure.fix}".rstrip(" —") if after and after.failure else "")
        return FixTrial(fix, "error" if tried else "not tried", was, error=why)
    now = Figures.of(after)
    match = after.verification.ok if after.verification is not None else None
    better = now.graph_breaks < was.graph_breaks or now.fallbacks_to_eager < was.fallbacks_to_eager
    worse = (match is False or now.graph_breaks > was.graph_breaks or now.fallbacks_to_eager > was.fallbacks_to_eager
             or now.recompiles > was.recompiles or now.calls_captured < was.calls_captured)
    verdict = ("mixed" if worse else "helps") if better else ("worse" if worse else "no effect")
    return FixTrial(fix, verdict, was, now, match, reason=_still_there(after, fix.places))


def fixes_document(trials: Sequence[FixTrial]) -> list[dict[str, Any]]:
    """The ``fixes`` list of the `breaks --try-fixes` YAML/JSON: one row per trial, before and after side by side
    (after: None where the trial made no report)."""
    rows = []
    for t in trials:
        a = t.after
        rows.append({
            "config": t.fix.config, "value": t.fix.value, "verified": t.verified, "verdict": t.verdict,
            "breaks_before": t.before.graph_breaks, "breaks_after": a.graph_breaks if a else None,
            "calls_captured_before": t.before.calls_captured, "calls_captured_after": a.calls_captured if a else None,
            "fallbacks_to_eager_before": t.before.fallbacks_to_eager,
            "fallbacks_to_eager_after": a.fallbacks_to_eager if a else None,
            "recompiles_before": t.before.recompiles, "recompiles_after": a.recompiles if a else None,
            "outputs_match_eager": t.outputs_match_eager, "error": t.error, "reason": t.reason,
            "places": list(t.fix.places),
        })
    return rows


#: a suggested fix nothing checked yet
NOT_VERIFIED = "not verified: run breaks --try-fixes"
#: a suggested fix --try-fixes cannot check (it edits the code)
CODE_CHANGE = "not verified: a code change (--try-fixes tries torch._dynamo.config settings only)"


def fix_status(b: GraphBreak, trials: Optional[Sequence[FixTrial]], frame: Optional[FrameCoverage] = None) -> str:
    """Whether the break's suggested fix (``b.fix``) was verified, in words: ``trials`` None where --try-fixes did not
    run; "" for a break with no suggested fix. A fix is verified by a trial of a config it names; a setting tried
    for the break that the fix does not name (nested_graph_breaks) is added as "also tried"."""
    if not b.fix:
        return ""
    checkable = any(config in b.fix for config, _ in settings_for(b, frame))
    if trials is None:
        return NOT_VERIFIED if checkable else CODE_CHANGE
    mine = [t for t in trials if _at(place(b.user_frame), t.fix.places)]
    named = [t for t in mine if t.fix.config in b.fix]
    also = "; also tried: " + "; ".join(f"{t.fix.setting} {_outcome(t)}" for t in mine if t not in named)
    also = also if len(named) < len(mine) else ""
    if not named:
        return (CODE_CHANGE if not checkable else NOT_VERIFIED) + also
    works = [t for t in named if t.verified]
    if works:
        t = works[0]
        removed = "removes it" if not t.reason else "helps; still here: " + t.reason
        return f"verified: {t.fix.setting} {removed} (outputs match eager){also}"
    return "tried, does not fix it: " + "; ".join(f"{t.fix.setting} {_outcome(t)}" for t in named) + also


def _outcome(t: FixTrial) -> str:
    if t.verdict in ("error", "not tried"):
        return f"({t.verdict}: {t.error})"
    why = f"; still there: {t.reason}" if t.reason else ""
    if t.outputs_match_eager is False:
        why += "; outputs differ from eager"
    return f"({t.verdict}{why})"
