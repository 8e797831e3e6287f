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
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
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
    try:
        value, i = _mapping(lines, 0, 0)
    except (IndexError, ValueError) as exc:  # a line cut short, a bad quoted scalar (json's ValueError)
        raise NotOurs from exc
    if i != len(lines):
        raise NotOurs
    if len(_SEEN) + len(_FLOWS) > 200_000:
        _SEEN.clear()
        _FLOWS.clear()
    return value


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
    body = [ln[ind:] for ln in lines[start:i]]
    text = "\n".join(body)
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
