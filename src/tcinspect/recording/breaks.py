"""Graph breaks: parse ``dynamo_graph_break_reason`` artifacts into structured breaks.

Parsed defensively: the wording differs between torch versions, so every field may be empty and
the raw text is always kept.
"""

from __future__ import annotations

import re
from typing import Optional

from tcinspect.report import GraphBreak, SourceLocation

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


def parse_break(text: str, compile_id: str) -> GraphBreak:
    """One graph break from PyTorch's text."""
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
    return GraphBreak(
        compile_id=compile_id,
        user_frame=frame,
        break_type=break_type,
        gb_id=f"GB{int(gb['id']):04d}" if gb else "",
        reason=reason,
        explanation=explanation,
        hints=hints,
        raw=text.rstrip(),
    )


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
