"""Plain data -> report objects, one value at a time through ``typing``: the checked path, whose errors
name the bad key (``builders`` is the fast path with the same rules)."""

from __future__ import annotations

import dataclasses
import typing
from functools import cache
from typing import Any, Literal, Union

from tcinspect.errors import ReportFormatError
from tcinspect.serialize.rules import may_be_absent


@cache
def hints(cls: type) -> dict[str, Any]:
    """The resolved type of each field of a report class (its own module of tcinspect.report resolves them)."""
    return typing.get_type_hints(cls)


def build(tp: Any, value: Any, where: str) -> Any:
    """``value`` as an object of type ``tp``; raises ReportFormatError naming ``where`` and the bad key."""
    origin = typing.get_origin(tp)
    if origin is Union:  # Optional[X]
        present = [a for a in typing.get_args(tp) if a is not type(None)]
        return None if value is None else build(present[0], value, where)
    if origin is tuple:
        if not isinstance(value, list):
            raise bad(where, "a list", value)
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(build(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
        return tuple(build(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, value)))
    if origin is Literal:  # one of a few words (``Options.dynamic``)
        words = typing.get_args(tp)
        if not any(value.__class__ is w.__class__ and value == w for w in words):
            shown = repr(value) if isinstance(value, (str, int, float, bool)) else type(value).__name__
            raise ReportFormatError(f"'{where}' should be one of {', '.join(repr(w) for w in words)}, "
                                    f"not {shown[:60]}")
        return value
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise bad(where, "a mapping", value)
        types = hints(tp)
        kwargs = {}
        names = set()
        for f in dataclasses.fields(tp):
            names.add(f.name)
            if f.name in value:
                kwargs[f.name] = build(types[f.name], value[f.name], f"{where}.{f.name}")
            elif not may_be_absent(tp, f):  # every other key is always written: its absence is damage
                raise ReportFormatError(f"missing key '{where}.{f.name}'")
        unknown = [k for k in value if k not in names]
        if unknown:
            raise ReportFormatError(f"unknown key '{where}.{unknown[0]}'")
        return tp(**kwargs)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad(where, "a number", value)
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad(where, "an integer", value)
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise bad(where, "true or false", value)
        return value
    if tp is str:
        if not isinstance(value, str):
            raise bad(where, "a string", value)
        return value
    raise bad(where, str(tp), value)


def bad(where: str, expected: str, value: Any) -> ReportFormatError:
    return ReportFormatError(f"'{where}' should be {expected}, not {type(value).__name__}")
