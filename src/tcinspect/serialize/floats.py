"""Whether a report holds a float that orjson writes otherwise than ``json`` (``json_text.ordinary_float``):
a walk over the report's float fields only, generated once per class from the report's types, so the
graphs, kernels and code that make up most of a large report are never visited."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from typing import Any, Optional, Union

from tcinspect.serialize.build import hints
from tcinspect.serialize.json_text import ordinary_float

Check = Callable[[Any], bool]
_CHECKS: dict[Any, Optional[Check]] = {}


def ordinary(obj: Any) -> bool:
    """True when every float ``obj`` (a report object) holds is written alike by orjson and ``json``."""
    check = checker(type(obj))
    return check is None or check(obj)


def checker(tp: Any) -> Optional[Check]:
    """A function ``value -> bool`` for values of type ``tp``; None when ``tp`` holds no float at all."""
    if tp in _CHECKS:
        found = _CHECKS[tp]
        # a class that holds itself (a phase tree): looked up at call time, once it is made
        return found if found is not None or tp not in _MAKING else (lambda v: _CHECKS[tp](v))  # type: ignore[misc]
    _MAKING.add(tp)
    _CHECKS[tp] = None
    try:
        _CHECKS[tp] = made = _make(tp)
    finally:
        _MAKING.discard(tp)
    return made


_MAKING: set[Any] = set()


def _make(tp: Any) -> Optional[Check]:
    if tp is float:
        return lambda v: v.__class__ is not float or ordinary_float(v)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is Union:  # Optional[X]
        inner = checker(next(a for a in args if a is not type(None)))
        return None if inner is None else (lambda v: v is None or inner(v))
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item = checker(args[0])
            return None if item is None else (lambda v: all(item(x) for x in v))
        parts = [(i, c) for i, c in enumerate(checker(a) for a in args) if c is not None]
        return None if not parts else (lambda v: all(c(v[i]) for i, c in parts))
    if not (isinstance(tp, type) and dataclasses.is_dataclass(tp)):
        return None  # str, int, bool
    types = hints(tp)
    fields = []
    for f in dataclasses.fields(tp):
        c = checker(types[f.name])
        if c is not None:
            fields.append((f.name, c))
    if not fields:
        return None
    return lambda v: all(c(getattr(v, name)) for name, c in fields)
