"""JSON text -> Python values, exactly as ``json.loads`` reads them, about four times faster where msgspec is installed.

msgspec reads strict JSON (UTF-8, no NaN or Infinity, no lone surrogates, floats within range) to the values
``json.loads`` gives, integers of any size included (orjson reads an integer beyond 64 bits as a float, which is
why it is not used here); what it refuses is read again by ``json.loads``, so every input reads to the same value,
or fails with the same ``ValueError``, either way. No torch import.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Optional, Union

_decode: Optional[Callable[[Union[bytes, str]], Any]]
try:
    import msgspec
except ImportError:  # pragma: no cover - msgspec is a dependency; a bare environment still reads logs
    _decode = None
else:
    _decode = msgspec.json.Decoder().decode


def loads(data: Union[bytes, str]) -> Any:
    """``json.loads(data)`` (bytes are UTF-8)."""
    if _decode is not None:
        try:
            return _decode(data)
        except ValueError:  # msgspec.DecodeError / ValidationError, UnicodeDecodeError: json.loads decides
            pass
    return json.loads(data)


def loads_text(data: bytes) -> Any:
    """``json.loads(data.decode("utf-8", errors="replace"))``: bytes that are not UTF-8 read with U+FFFD."""
    if _decode is not None:
        try:
            return _decode(data)
        except ValueError:
            pass
    return json.loads(data.decode("utf-8", errors="replace"))
