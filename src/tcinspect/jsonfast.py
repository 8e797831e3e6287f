"""JSON text -> Python values, exactly as ``json.loads`` reads them, about four times faster where msgspec is installed.

msgspec reads strict JSON (UTF-8, no NaN or Infinity, no lone surrogates, floats within range) to the values
``json.loads`` gives, integers of any size included (orjson reads an integer beyond 64 bits as a float, which is
why it is not used here); what it refuses is read again by ``json.loads``, so every input reads to the same value,
or fails with the same ``ValueError``, either way. No torch import.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Union


def _first(data: Union[bytes, str]) -> Any:
    """The first call: msgspec imported here (not at import: commands that read no JSON do not pay for it)."""
    global _decode
    try:
        import msgspec
    except ImportError:  # msgspec is a dependency; without it logs still read, with json.loads
        _decode = _unavailable
    else:
        _decode = msgspec.json.Decoder().decode
    return _decode(data)


def _unavailable(data: Union[bytes, str]) -> Any:
    raise ValueError("msgspec is not installed")  # every input is read by json.loads


_decode: Callable[[Union[bytes, str]], Any] = _first


def loads(data: Union[bytes, str]) -> Any:
    """``json.loads(data)`` (bytes are UTF-8)."""
    try:
        return _decode(data)
    except ValueError:  # msgspec.DecodeError / ValidationError, UnicodeDecodeError: json.loads decides
        return json.loads(data)


def loads_text(data: bytes) -> Any:
    """``json.loads(data.decode("utf-8", errors="replace"))``: bytes that are not UTF-8 read with U+FFFD."""
    try:
        return _decode(data)
    except ValueError:
        return json.loads(data.decode("utf-8", errors="replace"))
