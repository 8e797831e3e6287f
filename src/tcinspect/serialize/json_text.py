"""Plain data -> JSON text with orjson, byte for byte as ``json.dumps(data, ensure_ascii=False)`` writes it
(``indent=2``, or compact with ``(",", ":")``), which the saved reports and cache entries always were.

orjson writes the same text for every value a report holds but two kinds of float. A float below 1e-4 or
from 1e16 up it writes in its own notation (``0.00005``, ``1e-7``, ``1e16``) where ``json`` writes
``repr``'s (``5e-05``, ``1e-07``, ``1e+16``): in indented text, where every number ends its line, those
are rewritten to ``repr``'s; compact text holding one is written by ``json``. NaN and ±infinity orjson
writes as ``null``, where ``json`` writes ``NaN``/``Infinity``/``-Infinity`` (what a tcinspect JSON report
has always held, and what Python's ``json`` reads back; strict JSON readers refuse them): data holding
one is written by ``json``, as is data holding any value that is not a dict, list, tuple, str, int, float,
bool or None, or an integer beyond 64 bits. So the text never depends on which writer ran.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

#: Every float written alike by orjson and ``json``.
ORDINARY = 0
#: Some float below 1e-4 or from 1e16 up (written alike once rewritten), none NaN or infinite.
UNUSUAL = 1
#: A NaN or infinite float, or a value orjson writes otherwise or not at all: ``json`` writes it.
SPECIAL = 2

#: subclasses (an IntEnum, a str subclass), dataclasses and datetimes go to ``json``, which writes them
#: its own way or refuses them as it always did
_PASS = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
_SCALARS = (str, int, bool, type(None))
#: a float orjson wrote at the end of an indented line (after a key, or as an array item): strings hold no
#: raw line break, so a match is never inside one
_FLOAT_AT_EOL = re.compile(r'(": |\n +)(-?[0-9]+(?:\.[0-9]+(?:e[-+]?[0-9]+)?|e[-+]?[0-9]+))(?=,?\n)')


def float_kind(x: float) -> int:
    """ORDINARY, UNUSUAL or SPECIAL for one float."""
    if x == 0.0 or 1e-4 <= abs(x) < 1e16:
        return ORDINARY
    return UNUSUAL if x - x == 0.0 else SPECIAL  # inf - inf and nan - nan are NaN


def dumps(data: Any, *, compact: bool = False, kind: int | None = None) -> str:
    """``data`` as JSON text and a final line break. ``kind``: the caller knows that ``data`` holds only
    plain values and the worst of its floats (a report's, see ``floats``); else ``data`` is walked here."""
    if kind is None:
        kind = data_kind(data)
    if kind == ORDINARY or (kind == UNUSUAL and not compact):
        try:
            text = orjson.dumps(data, option=_PASS if compact else _PASS | orjson.OPT_INDENT_2).decode("utf-8")
        except TypeError:  # orjson.JSONEncodeError: an integer beyond 64 bits, a lone surrogate, a key not a str
            return stdlib_dumps(data, compact=compact)
        if kind == UNUSUAL:
            text = _FLOAT_AT_EOL.sub(_repr, text)
        return text + "\n"
    return stdlib_dumps(data, compact=compact)


def _repr(m: re.Match[str]) -> str:
    return m.group(1) + float.__repr__(float(m.group(2)))


def stdlib_dumps(data: Any, *, compact: bool = False) -> str:
    """The same text from Python's ``json`` (the reference, and the writer of what orjson writes otherwise)."""
    if compact:  # json's C encoder: indent= makes it fall back to pure Python, ~6x slower
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def data_kind(data: Any) -> int:
    """The worst of ``data``'s values for orjson: SPECIAL as soon as one is."""
    worst = ORDINARY
    stack = [data]
    pop, extend = stack.pop, stack.extend
    while stack:
        x = pop()
        cls = x.__class__
        if cls is dict:  # a key that is not a str: orjson refuses it, and json writes it
            extend(x.values())
        elif cls is list or cls is tuple:
            extend(x)
        elif cls is float:
            if not (x == 0.0 or 1e-4 <= abs(x) < 1e16):
                if x - x != 0.0:
                    return SPECIAL
                worst = UNUSUAL
        elif cls not in _SCALARS:
            return SPECIAL
    return worst
