"""Report objects as plain data (dicts, lists, str, int, float, bool, None): the one conversion that saving a
report (serialize) and a command's own document (analysis) both use."""

from __future__ import annotations

import dataclasses
from typing import Any


def plain(value: Any) -> Any:
    """A report object (or any of its parts) as plain data: dataclasses as dicts, tuples as lists."""
    names = _FIELDS.get(value.__class__)
    if names is None:  # a class not met yet
        return _plain_new(value)
    if names is _SCALAR:
        return value
    if names is _TUPLE:
        return [plain(v) for v in value]
    return {n: plain(getattr(value, n)) for n in names}


#: class -> its field names (a dataclass), or _SCALAR / _TUPLE: ``plain`` looks a class up once, not every
#: value through ``dataclasses.fields`` (a third of the time of writing a large report)
_FIELDS: dict[type, tuple[str, ...]] = {}
_SCALAR: tuple[str, ...] = ("<scalar>",)
_TUPLE: tuple[str, ...] = ("<tuple>",)


def _plain_new(value: Any) -> Any:
    cls = value.__class__
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(value))
    elif isinstance(value, tuple):
        _FIELDS[cls] = _TUPLE
    elif cls in (str, int, float, bool, type(None)):
        _FIELDS[cls] = _SCALAR
    elif dataclasses.is_dataclass(value):  # a dataclass itself, not an instance: as it always was
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    else:
        return value  # anything else is kept as it is (and not remembered)
    return plain(value)
