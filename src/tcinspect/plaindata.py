"""Report objects as plain data (dicts, lists, str, int, float, bool, None): the one conversion that saving a
report (serialize) and a command's own document (analysis) both use."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from typing import Any


def plain(value: Any) -> Any:
    """A report object (or any of its parts) as plain data: dataclasses as dicts, tuples as lists."""
    fn = _FNS.get(value.__class__)
    if fn is None:  # a class not met yet
        return _plain_new(value)
    return fn(value)


#: class -> its function ``value -> plain data``: a report class's is generated from its fields' types (a
#: scalar field copied inline, a tuple of scalars by ``list``), so the hundreds of thousands of scalars in a
#: large report are not each a call (``plain`` looked each value's class up: 2.5x slower)
_FNS: dict[type, Callable[[Any], Any]] = {}
_SCALARS = (str, int, float, bool, type(None))


def _same(value: Any) -> Any:
    return value


def _items(value: Any) -> list[Any]:
    return [plain(v) for v in value]


def _plain_new(value: Any) -> Any:
    cls = value.__class__
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        _FNS[cls] = _generated(cls)
    elif isinstance(value, tuple):
        _FNS[cls] = _items
    elif cls in _SCALARS:
        _FNS[cls] = _same
    elif dataclasses.is_dataclass(value):  # a dataclass itself, not an instance: as it always was
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    else:
        return value  # anything else is kept as it is (and not remembered)
    return plain(value)


def _generated(cls: type) -> Callable[[Any], Any]:
    """``value -> dict`` for a dataclass, its fields in order, each written out by the kind of its type."""
    try:
        types = typing.get_type_hints(cls)  # the class's own module resolves its hints
    except (NameError, TypeError):  # a class whose hints do not resolve here: every field through ``plain``
        types = {}
    env: dict[str, Any] = {"_plain": plain, "list": list}
    parts = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        get = f"o.{f.name}" if f.name.isidentifier() else f"getattr(o, {f.name!r})"
        hint = types.get(f.name)
        if hint in (str, int, float, bool):
            parts.append(f"{f.name!r}: {get}")
        elif typing.get_origin(hint) is tuple and typing.get_args(hint)[1:] == (Ellipsis,):
            item = typing.get_args(hint)[0]
            if item in (str, int, float, bool):
                parts.append(f"{f.name!r}: list({get})")
            else:
                parts.append(f"{f.name!r}: [_plain(x) for x in {get}]")
        else:
            parts.append(f"{f.name!r}: _plain({get})")
    exec("def fn(o):\n    return {" + ", ".join(parts) + "}\n", env)  # source built from the class's field names
    return env["fn"]  # type: ignore[no-any-return]
