"""The HTML page's small parts, shared by the page (render/html.py) and each view's HTML section (render/*.py):
escaping, status badges, folded blocks. Pure strings."""

from __future__ import annotations

import html
import re

from tcinspect.report import FAILED, NOT_RUN, OK

#: Tables with more rows, and pictures with more nodes, start collapsed: a 10,000-node page must
#: open at once and stay readable.
OPEN_ROWS = 200
#: Bodies of closed blocks larger than this many bytes are inserted only when opened.
LAZY_BYTES = 4_000

_SCRIPT_END = re.compile(r"</(?=script)", re.I)


def esc(text: object) -> str:
    """``text`` escaped for HTML (attributes included)."""
    s = text if type(text) is str else str(text)
    if "&" in s or "<" in s or ">" in s or '"' in s or "'" in s:
        return html.escape(s, quote=True)
    return s  # most of a page's names and shapes have nothing to escape


def slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text)


def status(state: str, error: str = "") -> str:
    """A stage status as a badge, with its error."""
    css = {OK: "ok", FAILED: "failed", NOT_RUN: "notrun"}.get(state, "notrun")
    out = f'<span class="badge {css}">{esc(state)}</span>'
    return out + (f' <span class="err">{esc(error)}</span>' if error else "")


def open_attr(flag: bool) -> str:
    return " open" if flag else ""


def fold(summary: str, body: str, open_: bool, cls: str, anchor: str = "") -> str:
    """A <details> block. A large body of a closed block is kept as inert text until it is opened.

    Parsing a 10,000-node page's tables and code as HTML took most of its load time; kept as text,
    they cost almost nothing until someone opens them (the page's one script inserts them then).
    """
    ident = f' id="{anchor}"' if anchor else ""
    if not open_ and len(body) > LAZY_BYTES:
        # our markup never holds "</script" (every text is escaped), so this only guards the invariant
        body = f'<script type="text/html">{_SCRIPT_END.sub("&lt;/", body)}</script>'
    return f'<details class="{cls}"{ident}{open_attr(open_)}><summary>{summary}</summary>{body}</details>'
