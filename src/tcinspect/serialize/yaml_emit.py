"""Plain data -> YAML text in the report's style, written directly (PyYAML's emitter is not used).

PyYAML builds a node per scalar (about 580,000 for a 10,000-node report) and calls back into Python for
each one while emitting: over 2 s there. This writes the same style in one pass; every scalar is either
plain where YAML cannot misread it, or double-quoted with JSON's escapes (which YAML reads the same), and
tests read the text back with PyYAML's loader to prove it. ``yaml_read`` reads exactly this style back.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any


def emit(data: Any) -> str:
    """``data`` as block YAML; a top-level mapping starts at once, unindented."""
    out: list[str] = []
    _emit_yaml(data, 0, out, in_list=True)
    return "".join(out)


#: a word written plain (unless it is RESERVED): YAML reads it as the same string
PLAIN_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*\Z")
#: words YAML 1.1 loaders (PyYAML) read as booleans or null, never written plain
RESERVED = frozenset(["y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"])
#: characters a YAML reader refuses (non-printable) or reads as line breaks: always escaped
_YAML_BREAKS = re.compile("[^\x09\x0a\x0d\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]|[\u2028\u2029\ufeff]")


@lru_cache(maxsize=1 << 16)  # names, dtypes and devices repeat thousands of times in a large report
def _quote(text: str) -> str:
    if PLAIN_WORD.match(text) and text.lower() not in RESERVED:
        return text
    quoted = json.dumps(text, ensure_ascii=False)
    return _YAML_BREAKS.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return ".nan"
        if value in (float("inf"), float("-inf")):
            return ".inf" if value > 0 else "-.inf"
        text = repr(value)
        if "e" in text and "." not in text:  # YAML 1.1 reads 1e-05 as a string: it wants 1.0e-05
            mantissa, exp = text.split("e")
            text = f"{mantissa}.0e{exp}"
        return text
    return _quote(str(value))


#: control characters a literal block cannot hold as they are: all below 32 but the line break
_BLOCK_CONTROL = re.compile("[\x00-\x09\x0b-\x1f]")


def _block_ok(text: str) -> bool:
    """Whether a multi-line string reads back unchanged as a literal block (``|``)."""
    # one regex pass (C speed) for every control character but the line break: a per-character
    # generator here took half the YAML writer's time on a 16-layer model's kernel code
    if _BLOCK_CONTROL.search(text) or _YAML_BREAKS.search(text):
        return False
    lines = text.split("\n")
    # a leading blank or spaced line would need an indentation indicator; trailing spaces on a
    # line before a break are kept by YAML, but a line of spaces only would be read as empty
    return not lines[0].startswith(" ") and lines[0] != "" and all(ln.strip() or ln == "" for ln in lines)


def _emit_yaml(value: Any, indent: int, out: list[str], in_list: bool) -> None:
    """Append ``value`` as block YAML; the caller has written the key (or "- ") before it."""
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            out.append(" {}\n")
            return
        first = in_list
        if not in_list:
            out.append("\n")
        for key, item in value.items():
            out.append(("" if first else pad) + _quote(str(key)) + ":")
            first = False
            _emit_item(item, indent, out)
        return
    if isinstance(value, list):
        if not value:
            out.append(" []\n")
            return
        if len(value) <= 16 and all(isinstance(v, (str, int, float)) and "\n" not in str(v) for v in value):
            out.append(" [" + ", ".join(_scalar(v) for v in value) + "]\n")
            return
        out.append("\n")
        for item in value:
            out.append(pad + "-")
            if isinstance(item, dict) and item:
                out.append(" ")
                _emit_yaml(item, indent + 2, out, in_list=True)
            else:
                _emit_item(item, indent + 2, out)
        return
    out.append(" " + _scalar(value) + "\n")


def _emit_item(item: Any, indent: int, out: list[str]) -> None:
    if isinstance(item, str) and "\n" in item and _block_ok(item):
        body = item[:-1] if item.endswith("\n") else item
        chomp = "" if item.endswith("\n") and not item.endswith("\n\n") else "-" if not item.endswith("\n") else "+"
        pad = " " * (indent + 2)
        out.append(f" |{chomp}\n")
        out.append("".join((pad + ln if ln else "") + "\n" for ln in body.split("\n")))
        return
    if isinstance(item, (dict, list)):
        _emit_yaml(item, indent + 2, out, in_list=False)
        return
    out.append(" " + _scalar(item) + "\n")
