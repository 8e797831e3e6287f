"""The worst float a report holds for orjson (``json_text``: ORDINARY, UNUSUAL or SPECIAL): a walk over the
report's float fields only, generated once per class from the report's types, so the graphs, kernels and
code that make up most of a large report are never visited."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from typing import Any, Optional, Union

from tcinspect.serialize.build import hints
from tcinspect.serialize.json_text import ORDINARY, SPECIAL, float_kind

Check = Callable[[Any], int]
_CHECKS: dict[Any, Optional[Check]] = {}


def kind(obj: Any) -> int:
    """The worst of the floats ``obj`` (a report object) holds: ORDINARY, UNUSUAL or SPECIAL."""
    check = checker(type(obj))
    return ORDINARY if check is None else check(obj)


def _worst(values: Any) -> int:
    worst = ORDINARY
    for k in values:
        if k > worst:
            if k == SPECIAL:
                return k
            worst = k
    return worst


def checker(tp: Any) -> Optional[Check]:
    """A function ``value -> kind`` for values of type ``tp``; None when ``tp`` holds no float at all."""
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
        return lambda v: float_kind(v) if v.__class__ is float else ORDINARY
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is Union:  # Optional[X]
        inner = checker(next(a for a in args if a is not type(None)))
        return None if inner is None else (lambda v: ORDINARY if v is None else inner(v))
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item = checker(args[0])
            return None if item is None else (lambda v: _worst(item(x) for x in v))
        parts = [(i, c) for i, c in enumerate(checker(a) for a in args) if c is not None]
        return None if not parts else (lambda v: _worst(c(v[i]) for i, c in parts))
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
    return lambda v: _worst(c(getattr(v, name)) for name, c in fields)
