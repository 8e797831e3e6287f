"""Graph breaks: parse ``dynamo_graph_break_reason`` artifacts into structured breaks.

Parsed defensively: the wording differs between torch versions, so every field may be empty and
the raw text is always kept.
"""

from __future__ import annotations

import linecache
import re
from dataclasses import replace
from typing import Optional

from tcinspect.parse.memo import memoized
from tcinspect.report import BackendFailure, GraphBreak, SourceLocation

_AT = re.compile(r"Graph break in user code at (?P<file>.+):(?P<line>\d+)\s*$", re.M)
_REASON = re.compile(r"Graph Break Reason:\s*(?P<rest>.*)$", re.M)
_GB_ID = re.compile(r"/gb/gb(?P<id>\d+)\.html", re.I)
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>.+)$')
_SKIP = "torch.compile cannot properly resume from this graph break"


def _traceback_frames(text: str) -> list[SourceLocation]:
    """Frames of the 'User code traceback:' section (or the whole text), with their code lines."""
    frames: list[SourceLocation] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _FRAME.match(line)
        if not m:
            continue
        code = lines[i + 1].strip() if i + 1 < len(lines) and not _FRAME.match(lines[i + 1]) else ""
        frames.append(SourceLocation(m["file"], int(m["line"]), m["fn"].strip(), code))
    return frames


_LIBRARY = re.compile(r"[/\\](?:site-packages|dist-packages)[/\\]|[/\\]lib[/\\]python\d+(?:\.\d+)?[/\\]|^<frozen ")


def is_library(file: str) -> bool:
    """Whether a file is installed code (a package or the standard library), not the user's own."""
    return bool(_LIBRARY.search(file))


def _model_frame(frame: Optional[SourceLocation], frames: list[SourceLocation],
                 compiled: tuple[str, str]) -> Optional[SourceLocation]:
    """The line of the model that led to a break in another file: walking out from the break, the first
    frame in another file, within the frame being compiled (``compiled``: its file and function; the
    traceback torch 2.13 prints also holds the frames that called it). None when the break is in the
    compiled frame's own file."""
    if frame is None or not frames:
        return None
    starts = [i for i, f in enumerate(frames) if (f.file, f.function) == compiled]
    if not starts:
        # the compiled frame is not known: a library break, reached from the user's own code
        own = [f for f in frames if not is_library(f.file)]
        return own[-1] if is_library(frame.file) and own else None
    inside = frames[starts[-1]:]
    # torch's own frames (Dynamo's wrappers and polyfills between a DDP forward and its hooks) are no model line
    return next((f for f in reversed(inside) if f.file != frame.file and not _in_torch(f.file)), None)


def _in_torch(path: str) -> bool:
    return any(f"{sep}torch{slash}" in path for sep in ("site-packages/", "dist-packages/") for slash in ("/", "\\"))


@memoized
def parse_break(text: str, compile_id: str, compiled: tuple[str, str] = ("", "")) -> GraphBreak:
    """One graph break from PyTorch's text (``compiled``: the file and function of the frame being compiled)."""
    head = text.split("\nTraceback (most recent call last):", 1)[0]
    user_part = head.split("User code traceback:", 1)[1] if "User code traceback:" in head else head
    frames = _traceback_frames(user_part)
    frame: Optional[SourceLocation] = None
    at = _AT.search(head)
    if at:
        file, line = at["file"].strip(), int(at["line"])
        match = [f for f in frames if f.file == file and f.line == line]
        frame = match[-1] if match else SourceLocation(file, line)
    elif frames:
        frame = frames[-1]

    break_type, reason = "", ""
    m = _REASON.search(head)
    if m:
        first = m["rest"].strip()
        if first.startswith("Encountered graph break when") or first.endswith(":"):
            reason = first.rstrip(":")
            after = head[m.end():].lstrip("\n").splitlines()
            break_type = next((ln.strip() for ln in after if ln.strip()), "")
        else:
            break_type = first
    elif _SKIP in head:
        break_type = "Cannot resume from graph break (frame skipped)"
        reason = head.splitlines()[0].strip()
    else:
        break_type = next((ln.strip() for ln in head.splitlines() if ln.strip()), "")
    if break_type.startswith("Explanation:"):
        break_type = ""

    explanation = _section(head, "Explanation:")
    hints = tuple(h.strip() for h in re.findall(r"^\s*Hint:\s*(.+)$", head, re.M))
    gb = _GB_ID.search(head)
    brk_model_frame = _model_frame(frame, frames, compiled)
    brk = GraphBreak(
        compile_id=compile_id,
        user_frame=frame,
        model_frame=brk_model_frame,
        break_type=break_type,
        gb_id=f"GB{int(gb['id']):04d}" if gb else "",
        reason=reason,
        explanation=explanation,
        hints=hints,
        raw=text.rstrip(),
    )
    return replace(brk, fix=suggest_fix(brk))


# (pattern over type + explanation + reason, fix): the causes the torch.compile tutorials list.
_FIXES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"`print`|builtin operator `print`|logging|\bprint\b", re.I),
     "Remove the print/logging call from the compiled region, or add the function to "
     "torch._dynamo.config.reorderable_logging_functions so Dynamo runs it after the graph."),
    (re.compile(r"data-dependent branching|generic_jump|jump with TensorVariable|data-dependent control flow", re.I),
     "Make the branch tensor-valued: torch.where(cond, a, b) for both sides, or torch.cond(pred, true_fn, false_fn, "
     "operands) for real control flow."),
    (re.compile(r"sort with non-constant key|builtin operator `sorted`|`sorted`", re.I),
     "Rewrite the sort with torch ops: stack the tensors and use torch.sort / torch.argsort on the key values, "
     "then index."),
    (re.compile(r"Tensor\.item\(\)|Tensor\.tolist|capture_scalar_outputs|\.item\(\)", re.I),
     "Keep the value as a tensor, or set torch._dynamo.config.capture_scalar_outputs = True so Dynamo traces "
     ".item() as a symbolic scalar."),
    (re.compile(r"torch\._dynamo\.graph_break\(\)", re.I),
     "Remove the explicit torch._dynamo.graph_break() call if it is no longer needed."),
    (re.compile(r"autograd\.Function|autograd function", re.I),
     "Register the operation with torch.library (torch.library.custom_op with register_autograd, or "
     "torch.library.triton_op for a Triton kernel) so the compiler sees one op."),
    (re.compile(r"marked as skipped|skip_files|third.party|in skipfiles|Attempted to call function marked|"
                r"Attempted to inline function marked", re.I),
     "Let the compiler treat the call as one op: torch._dynamo.allow_in_graph(fn), or "
     "torch._dynamo.nonstrict_trace(fn) to trace it without Dynamo's restrictions."),
]


# torch's own explanation when its skip list names the function (torch/_dynamo/variables/functions.py,
# SkipFunctionVariable): "Dynamo developers have intentionally marked that the function `F` in file `P`
# should not be traced."
_DELIBERATE_SKIP = re.compile(r"intentionally marked that the function `(?P<fn>[^`]+)` in file `(?P<file>[^`]+)`")


def _deliberate_skip_fix(fn: str, file: str) -> str:
    """PyTorch skips this function on purpose; wrapping it for the graph (allow_in_graph) would be wrong."""
    where = file.replace("\\", "/")
    if "/torch/optim/lr_scheduler.py" in where or (fn.endswith(".step") and "/torch/optim/" in where):
        return (f"PyTorch does not trace `{fn}` here on purpose: an LR scheduler wraps the optimizer's step in a "
                "function Dynamo skips (torch/optim/lr_scheduler.py), so the call runs between graphs and the "
                "optimizer's own step is compiled as a frame of its own (see its compile id). Nothing to fix: "
                "`torch._dynamo.allow_in_graph` does not apply to an optimizer step (it mutates Python state).")
    return (f"PyTorch does not trace `{fn}` on purpose (it is on Dynamo's skip list): it runs eagerly between "
            "graphs, and the functions it calls are compiled as frames of their own. Move the call out of the "
            "compiled region if the break costs you; `@torch._dynamo.dont_skip_tracing` forces tracing into it "
            "(PyTorch's hint; more breaks may follow).")


def suggest_fix(brk: GraphBreak) -> str:
    """A suggested fix for the break's cause; PyTorch's own first hint when the cause is unknown."""
    text = " ".join((brk.break_type, brk.explanation, brk.reason))
    deliberate = _DELIBERATE_SKIP.search(brk.explanation)
    if deliberate:
        return _deliberate_skip_fix(deliberate["fn"], deliberate["file"])
    for pattern, fix in _FIXES:
        if pattern.search(text):
            return fix
    useful = [h for h in brk.hints if "report an issue" not in h.lower()]
    return useful[0] if useful else ""


def with_context(brk: GraphBreak, around: int = 2) -> GraphBreak:
    """The break with the user's source lines around it, read now (the file may change later)."""
    frame = brk.user_frame
    if frame is None or not frame.file:
        return brk
    linecache.checkcache(frame.file)
    lines = linecache.getlines(frame.file)
    if not lines or frame.line > len(lines):
        return brk
    lo, hi = max(1, frame.line - around), min(len(lines), frame.line + around)
    return replace(brk, context=tuple((n, lines[n - 1].rstrip("\n")) for n in range(lo, hi + 1)))


def _section(text: str, label: str) -> str:
    """A labelled, possibly multi-line field, up to the next label or blank line."""
    m = re.search(rf"^\s*{re.escape(label)}\s*(?P<body>.*)$", text, re.M)
    if not m:
        return ""
    out = [m["body"].strip()]
    for line in text[m.end():].splitlines()[1:]:
        s = line.strip()
        if not s or re.match(r"^(Hint|Developer debug context|Explanation):", s):
            break
        out.append(s)
    return " ".join(p for p in out if p)


#: How torch logs a graph the backend failed on (torch/_dynamo/exc.py format_error_msg_verbose, written by
#: unimplemented_with_warning when the backend raised one of exceptions_allowed_to_be_fallback; 2.11-2.15)
WONT_CONVERT = "WON'T CONVERT "
_WONT_CONVERT = re.compile(r"^WON'T CONVERT (?P<fn>\S+) (?P<file>.+) line (?P<line>\d+)\s*$")
_EXCEPTION = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Exception|Error|Failed|Unsupported)): ?(?P<msg>.*)$")


def is_backend_failure(text: str) -> bool:
    """Whether a ``dynamo_graph_break_reason`` payload is a backend failure, not a graph break."""
    return text.startswith(WONT_CONVERT)


def parse_backend_failure(text: str, compile_id: str) -> BackendFailure:
    """A graph the backend failed on, from torch's "WON'T CONVERT" text: the frame, the exception and the
    user line torch was lowering ("Original traceback")."""
    lines = text.splitlines()
    head = _WONT_CONVERT.match(lines[0]) if lines else None
    body = text.split("========== The above exception", 1)[0]
    error = ""
    for line in body.splitlines():
        m = _EXCEPTION.match(line)
        if m:  # the last one: a chained traceback ends with the exception the backend raised
            error = f"{m['type'].rsplit('.', 1)[-1]}: {m['msg'].strip()}".rstrip(": ")
    original = body.split("Original traceback:", 1)[1] if "Original traceback:" in body else ""
    frames = _traceback_frames(original)
    return BackendFailure(
        compile_id=compile_id,
        function=head["fn"] if head else "",
        file=head["file"].strip() if head else "",
        line=int(head["line"]) if head else 0,
        error=error,
        user_frame=frames[-1] if frames else None,
        raw=text.rstrip(),
    )
