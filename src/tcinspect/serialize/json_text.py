"""Plain data -> JSON text with orjson, byte for byte as ``json.dumps(data, ensure_ascii=False)`` writes it
(``indent=2``, or compact with ``(",", ":")``), which the saved reports and cache entries always were.

orjson writes the same text for every value a report holds but two kinds of float: it writes NaN and
±infinity as ``null`` where ``json`` writes ``NaN``/``Infinity``/``-Infinity`` (what a tcinspect JSON
report has always held, and what Python's ``json`` reads back), and a float below 1e-4 or from 1e16 up in
its own notation (``1e-5``, ``0.00005``) where ``json`` writes ``repr``'s (``1e-05``). Data holding such a
float, or any value that is not a dict, list, str, int, float, bool or None, or an integer beyond 64 bits,
is written by ``json`` as before, so the text never depends on which writer ran.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

#: subclasses (an IntEnum, a str subclass), dataclasses and datetimes go to ``json``, which writes them
#: its own way or refuses them as it always did
_PASS = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
_OPTIONS = {False: _PASS | orjson.OPT_INDENT_2, True: _PASS}
_SCALARS = (str, int, bool, type(None))


def ordinary_float(x: float) -> bool:
    """Whether orjson and ``json`` write this float alike."""
    return x == 0.0 or 1e-4 <= abs(x) < 1e16  # False for NaN too


def dumps(data: Any, *, compact: bool = False, checked: bool = False) -> str:
    """``data`` as JSON text and a final line break; ``checked``: the caller knows that ``data`` holds only
    plain values and ordinary floats (a report, see ``floats``), so it is not walked here."""
    if checked or _plain_and_ordinary(data):
        try:
            return orjson.dumps(data, option=_OPTIONS[compact]).decode("utf-8") + "\n"
        except TypeError:  # orjson.JSONEncodeError: an integer beyond 64 bits, a lone surrogate
            pass
    return stdlib_dumps(data, compact=compact)


def stdlib_dumps(data: Any, *, compact: bool = False) -> str:
    """The same text from Python's ``json`` (the reference, and the writer of what orjson writes otherwise)."""
    if compact:  # json's C encoder: indent= makes it fall back to pure Python, ~6x slower
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _plain_and_ordinary(data: Any) -> bool:
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
                return False
        elif cls not in _SCALARS:
            return False
    return True
