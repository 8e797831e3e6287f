"""YAML text in the emitter's own style -> plain data, without PyYAML: the first read of a report written
elsewhere (a CI artifact, a copy) is a YAML parse, and PyYAML's C loader spends over a second on a 12 MB
report, most of it constructing one Python object per node.

``yaml_emit`` writes a small subset of YAML: block mappings and sequences indented two spaces a level,
one key or item per line, literal blocks (``|``, ``|-``, ``|+``), flow sequences of scalars on one line,
``{}``/``[]``, and scalars that are either plain (a word, a number, ``null``/``true``/``false``,
``.nan``/``.inf``) or double-quoted with JSON's escapes. ``parse`` reads exactly that subset the way a
YAML 1.1 loader does; on anything else (a comment, a tab, other indentation, a YAML feature the emitter
never writes) it raises NotOurs and the caller reads the text with PyYAML, so a hand-edited report is
read by the full parser. Tests compare the two on every recorded report and on generated data.

Two readers of that subset: ``_scan``, one loop over the lines that looks each line up by its text (most
lines of a large report repeat one met before: its kind, indentation, key and scalar come at once), for the
lines the emitter commonly writes; and the recursive reader (``_mapping``), line by line, which reads the
whole subset and takes over wherever ``_scan`` meets a line it does not read.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tcinspect.errors import NotOurs
from tcinspect.serialize.yaml_emit import PLAIN_WORD, RESERVED

#: characters that a YAML reader takes as line breaks or refuses, and the byte-order mark: never raw in
#: the emitter's output, so text holding one is left to PyYAML
_FOREIGN = re.compile("[^\x09\x0a\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]|[\u2028\u2029\ufeff]")
#: the bytes of printable ASCII, the tab and the line break
_ASCII_OK = bytes([9, 10, *range(32, 127)])
#: UTF-8 of the characters above ASCII that _FOREIGN matches: C1 controls, U+2028/9, the BOM, U+FFFE/F
_FOREIGN_UTF8 = re.compile(b"\xc2[\x80-\x9f]|\xe2\x80[\xa8\xa9]|\xef\xbb\xbf|\xef\xbf[\xbe\xbf]")
_INT = re.compile(r"-?(?:0|[1-9][0-9]*)\Z")
_FLOAT = re.compile(r"-?[0-9]+\.[0-9]+(?:e[-+][0-9]+)?\Z")
#: a double-quoted scalar (JSON's escapes), at the start of the text it is matched against
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
#: a \u escape of a surrogate: YAML decodes a pair as two characters, JSON as one
_SURROGATE = re.compile(r"(?<!\\)(?:\\\\)*\\u[dD][89a-fA-F]")  # an odd number of backslashes: an escape
_FLOW_ITEM = re.compile(r'"(?:[^"\\]|\\.)*"|[^",\[\]{} ][^,\[\]{}]*')
_CONSTANTS: dict[str, Any] = {"null": None, "true": True, "false": False, ".nan": float("nan"),
                              ".inf": float("inf"), "-.inf": float("-inf"), "{}": None, "[]": None}
_MISSING = object()
#: scalar text -> value, for the names, dtypes and numbers that repeat thousands of times (never a
#: list or dict: those are made anew each time)
_SEEN: dict[str, Any] = {}
#: plain keys already checked
_KEYS: dict[str, str] = {}
#: flow sequences already read, as tuples
_FLOWS: dict[str, tuple[Any, ...]] = {}


def parse(text: str) -> Any:
    """The plain data of a YAML document in the emitter's style; raises NotOurs for any other YAML."""
    if not text.endswith("\n") or _foreign(text):
        raise NotOurs
    lines = text.split("\n")
    lines.pop()  # after the last line break
    if not lines or lines[0][:1] in ("", " ", "-"):
        raise NotOurs
    if len(_SEEN) + len(_FLOWS) + len(_LINES) + len(_HEADS) > 400_000:
        _SEEN.clear()
        _FLOWS.clear()
        _LINES.clear()
        _HEADS.clear()
    try:
        return _scan(lines)
    except (_Unusual, NotOurs, IndexError, ValueError):
        pass  # a line the scan does not know: the recursive reader decides, line by line
    try:
        value, i = _mapping(lines, 0, 0)
    except (IndexError, ValueError) as exc:  # a line cut short, a bad quoted scalar (json's ValueError)
        raise NotOurs from exc
    if i != len(lines):
        raise NotOurs
    return value


class _Unusual(Exception):
    """A line ``_scan`` leaves to the recursive reader: in the emitter's style or not, that reader decides."""


#: what ``_scan`` knows of a line (kind, indentation, key, value or _MISSING), by the line's text up to its
#: first ``": "`` (_HEADS: no value) or by its whole text (_LINES: a line whose scalar is known with it)
_HEADS: dict[str, tuple[int, int, Any, Any]] = {}
_LINES: dict[str, tuple[int, int, Any, Any]] = {}
#: line kinds: ``key: value``, ``- key: value`` (an item mapping's first key), ``key:`` (a nested collection
#: follows), ``- key:``, and ``- scalar`` (its value cached with it)
_KEY, _OPEN, _ITEM_KEY, _ITEM_OPEN, _ITEM = range(5)


def _scan(lines: list[str]) -> dict[str, Any]:
    """The document read in one loop over its lines (the fast path of ``parse``): every line looked up by its
    text (its indentation and key, known after the first time), every repeated scalar by its text. Reads the
    emitter's common lines only (plain or simply quoted keys, sequences two spaces below their key, no
    sequence directly in a sequence); raises _Unusual for any other line, and the recursive reader, which
    accepts exactly the emitter's style, reads the document instead."""
    heads, whole = _HEADS, _LINES
    seen = _SEEN
    missing = _MISSING
    root: dict[str, Any] = {}
    cur: Any = root  # the innermost open collection
    ind = 0  # the indentation of its keys (a mapping) or dashes (a sequence); -1 right after ``key:``
    stack: list[tuple[Any, int]] = []  # the collections around it, outermost first
    opening: Any = None  # after ``key:``: the key whose collection the next line starts
    outer = 0  # after ``key:``: the indentation of that key
    n = len(lines)
    i = 0
    tok = ""
    while i < n:
        line = lines[i]
        found = whole.get(line)  # a line met before, its scalar with it (most lines of a large report)
        if found is None:
            head, sep, tok = line.partition(": ")
            if sep:
                found = heads.get(head)
                if found is None:
                    found = _learn(line, head)
                    if found[0] == _ITEM:  # ": " inside an item's scalar: read from the dash on, below
                        tok = ""
                value = seen.get(tok, missing)
                if value is missing and tok[:1] not in ("|", "[", "{", ""):
                    value = _scalar(tok)
                if value is not missing:
                    found = (found[0], found[1], found[2], value)
                    if len(whole) < 300_000:
                        whole[line] = found
            else:
                found = _learn(line, None)
        kind, at, key, value = found
        if kind == _KEY and at == ind:  # the common line: a key and a scalar in the open mapping
            if value is missing:
                value, i = _value(lines, i, tok, ind)
            else:
                i += 1
            cur[key] = value
            continue
        if ind < 0:  # the first line of a key's collection: two spaces deeper, a key or a dash
            if at != outer + 2:
                raise _Unusual
            stack.append((cur, outer))
            new: Any = [] if kind >= _ITEM_KEY else {}  # a dash starts a sequence
            cur[opening] = new
            cur, ind = new, at
        elif at != ind:
            while at < ind and stack:
                cur, ind = stack.pop()
            if at != ind:
                raise _Unusual
        if kind == _ITEM:
            if cur.__class__ is not list:
                raise _Unusual
            if value is missing:  # a scalar not cached with its line: a flow, {}, [], a block
                value, i = _value(lines, i, line[at + 2:], at)
            else:
                i += 1
            cur.append(value)
            continue
        if kind in (_ITEM_KEY, _ITEM_OPEN):
            if cur.__class__ is not list:
                raise _Unusual
            item: dict[str, Any] = {}
            cur.append(item)
            stack.append((cur, ind))
            cur, ind = item, at + 2
        elif cur.__class__ is not dict:
            raise _Unusual
        if kind in (_OPEN, _ITEM_OPEN):
            opening, outer, ind = key, ind, -1
            i += 1
            continue
        if value is missing:
            value, i = _value(lines, i, tok, ind)
        else:
            i += 1
        cur[key] = value
    if ind < 0:
        raise _Unusual
    return root


def _value(lines: list[str], i: int, tok: str, ind: int) -> tuple[Any, int]:
    """The value that line ``i`` starts (``tok``: its text after the key or dash; ``ind``: the indentation of its
    key or dash), not cached with its line: a literal block or a scalar; and the index of the line after it."""
    if tok[0] == "|":
        return _block(lines, i, tok, ind)
    return _scalar(tok), i + 1


def _learn(line: str, head: str | None) -> tuple[int, int, Any, Any]:
    """What ``_scan`` needs of a line it has not met (``head``: the line up to its first ``": "``), kept for
    its next occurrence; raises _Unusual for a line ``_scan`` does not read."""
    text = line if head is None else head
    at = len(text) - len(text.lstrip(" "))
    rest = text[at:]
    dash = rest[:2] == "- "
    if dash:
        rest = rest[2:]
    elif rest[:1] == "-":
        raise _Unusual  # a lone dash (a sequence in a sequence), or a scalar or key starting with one
    first = rest[:1]
    found: tuple[int, int, Any, Any]
    if head is not None:  # ``key: value`` or ``- key: value``
        if dash and (first in ("[", "{") or (first == '"' and not _whole_quoted(rest))):
            return (_ITEM, at, None, _MISSING)  # an item whose flow or quoted scalar holds ": "
        if first == '"':
            if not _whole_quoted(rest):
                raise _Unusual  # a quoted key holding ": "
            key = _quoted(rest)
        else:
            key = _plain_key(rest)
        found = (_ITEM_KEY if dash else _KEY, at, key, _MISSING)
    elif rest.endswith(":") and first not in ("[", "{", '"') and ":" not in rest[:-1]:  # ``key:``, ``- key:``
        found = (_ITEM_OPEN if dash else _OPEN, at, _plain_key(rest[:-1]), _MISSING)
    elif rest.endswith(":") and first == '"' and _whole_quoted(rest[:-1]):  # ``"key":``, ``- "key":``
        found = (_ITEM_OPEN if dash else _OPEN, at, _quoted(rest[:-1]), _MISSING)
    elif not dash:
        raise _Unusual
    elif first in ("[", "{", "|"):  # ``- [a, b]``, ``- {}``, ``- |``: read each time (a list is made anew)
        return (_ITEM, at, None, _MISSING)
    elif (first == '"' and _whole_quoted(rest)) or (first != "" and ":" not in rest):  # ``- scalar``
        found = (_ITEM, at, None, _scalar(rest))
    else:
        raise _Unusual
    known = _LINES if head is None else _HEADS
    if len(known) < 200_000:
        known[text] = found
    return found


def _plain_key(tok: str) -> str:
    key = _KEYS.get(tok)
    return _word(tok) if key is None else key


def _whole_quoted(tok: str) -> bool:
    m = _QUOTED.match(tok)
    return m is not None and m.end() == len(tok)


def _foreign(text: str) -> bool:
    """Whether ``text`` holds a character _FOREIGN matches (a byte scan: the regex takes 30 ns a character)."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return True
    if text.isascii():
        return bool(data.translate(None, _ASCII_OK))
    return bool(data.translate(None, _ASCII_OK + bytes(range(128, 256)))) or _FOREIGN_UTF8.search(data) is not None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _mapping(lines: list[str], i: int, indent: int) -> tuple[dict[str, Any], int]:
    out: dict[str, Any] = {}
    n = len(lines)
    pad = " " * indent
    seen = _SEEN
    while i < n:
        line = lines[i]
        if not line.startswith(pad) or line[indent] == " ":  # not this mapping's indent: ends it, or not ours
            if len(line) - len(line.lstrip(" ")) < indent and line:
                break
            raise NotOurs
        if line[indent] == '"':
            m = _QUOTED.match(line, indent)
            if m is None:
                raise NotOurs
            key = _quoted(m.group())
            colon = m.end()
            if line[colon:colon + 1] != ":":
                raise NotOurs
        else:
            colon = line.find(":", indent)
            if colon < 0:
                raise NotOurs
            tok = line[indent:colon]
            key = _KEYS.get(tok)  # type: ignore[assignment]
            if key is None:
                key = _word(tok)
        if len(line) == colon + 1:
            out[key], i = _nested(lines, i + 1, indent)
            continue
        if line[colon + 1] != " ":
            raise NotOurs
        tok = line[colon + 2:]
        value = seen.get(tok, _MISSING)
        if value is not _MISSING:
            out[key] = value
            i += 1
        elif tok[0] == "|":
            out[key], i = _block(lines, i, tok, indent)
        else:
            out[key] = _scalar(tok)
            i += 1
    return out, i


def _nested(lines: list[str], i: int, parent: int) -> tuple[Any, int]:
    """The block collection below a key or a lone ``-``: deeper than its parent."""
    line = lines[i]
    ind = _indent(line)
    if ind <= parent or not line[ind:]:
        raise NotOurs
    if line[ind] == "-":
        return _sequence(lines, i, ind)
    return _mapping(lines, i, ind)


def _sequence(lines: list[str], i: int, indent: int) -> tuple[list[Any], int]:
    out: list[Any] = []
    n = len(lines)
    while i < n:
        line = lines[i]
        ind = len(line) - len(line.lstrip(" "))
        if ind != indent:
            if ind < indent and line:
                break
            raise NotOurs
        if line[ind] != "-":
            raise NotOurs
        rest = line[ind + 1:]
        if not rest:
            value, i = _nested(lines, i + 1, indent)
            out.append(value)
            continue
        if rest[0] != " ":
            raise NotOurs
        tok = rest[1:]
        first = tok[0]
        if first == "|":
            value, i = _block(lines, i, tok, indent)
            out.append(value)
            continue
        if first == '"':
            m = _QUOTED.match(tok)
            item = m is not None and tok[m.end():m.end() + 1] == ":"
        else:
            item = first not in "[{" and ":" in tok
        if item:  # a mapping whose first key is on the item's line
            lines[i] = line[:ind] + "  " + tok
            value, i = _mapping(lines, i, indent + 2)
            out.append(value)
        else:
            out.append(_scalar(tok))
            i += 1
    return out, i


def _block(lines: list[str], i: int, header: str, parent: int) -> tuple[str, int]:
    """A literal block scalar: its lines, less their indentation, by its chomping indicator."""
    if header not in ("|", "|-", "|+"):
        raise NotOurs
    i += 1
    first = lines[i]
    ind = _indent(first)
    if ind <= parent or not first[ind:]:
        raise NotOurs
    pad = first[:ind]
    start, n = i, len(lines)
    while i < n:
        line = lines[i]
        if line and not line.startswith(pad):
            if not line.strip():
                raise NotOurs  # a line of spaces: YAML's rules for it are not worth repeating here
            break
        i += 1
    # every line starts with the pad or is empty (the loop above): the pad taken off all at once
    text = "\n".join(lines[start:i])[ind:].replace("\n" + pad, "\n")
    if header == "|+":
        return text + "\n", i
    text = text.rstrip("\n")
    return (text + "\n" if header == "|" else text), i


def _word(tok: str) -> str:
    """A plain key: a word the emitter writes unquoted."""
    if PLAIN_WORD.match(tok) is None or tok.lower() in RESERVED:
        raise NotOurs
    _KEYS[tok] = tok
    return tok


def _quoted(tok: str) -> str:
    found = _SEEN.get(tok, _MISSING)
    if found is not _MISSING:
        return found  # type: ignore[return-value]
    if "\\u" in tok and _SURROGATE.search(tok):
        raise NotOurs
    value = json.loads(tok)
    if value.__class__ is not str:
        raise NotOurs
    _SEEN[tok] = value
    return value  # type: ignore[no-any-return]


def _scalar(tok: str) -> Any:
    found = _SEEN.get(tok, _MISSING)
    if found is not _MISSING:
        return found
    first = tok[0]
    if first == '"':
        return _quoted(tok)
    if first == "[":
        found = _FLOWS.get(tok)
        if found is None:
            found = _FLOWS[tok] = tuple(_flow(tok))
        return list(found)
    value: Any
    if tok in _CONSTANTS:
        value = _CONSTANTS[tok]
        if tok == "{}":
            return {}
        if tok == "[]":
            return []
    elif _INT.match(tok):
        value = int(tok)
    elif _FLOAT.match(tok):
        value = float(tok)
    elif PLAIN_WORD.match(tok) is not None and tok.lower() not in RESERVED:
        value = tok
    else:
        raise NotOurs
    _SEEN[tok] = value
    return value


def _flow(tok: str) -> list[Any]:
    """A flow sequence of scalars on one line: ``[a, "b, c", 1.5]``."""
    if tok[-1] != "]" or tok == "[]":
        if tok == "[]":
            return []
        raise NotOurs
    inner = tok[1:-1]
    items = _FLOW_ITEM.findall(inner) if '"' in inner else inner.split(", ")
    if ", ".join(items) != inner:
        raise NotOurs
    out = []
    for item in items:
        if item[:1] in ("[", "{", "|", "") or item == "-":
            raise NotOurs
        out.append(_scalar(item))
    return out
