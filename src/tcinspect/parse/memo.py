"""Pure parsers' results kept by their arguments while the ranks of one directory are read. No torch import.

The ranks of a job compile the same graphs: their logs hold the same graph code, guards, kernels and cache keys,
byte for byte, beside timestamps and times of their own. While ``across_ranks`` is on (parse/rankpool.py turns
it on for the ranks one process reads), a function decorated with ``memoized`` gives the result it gave for
equal arguments earlier instead of parsing again; the result is the same value (every parser so decorated is a
pure function returning frozen dataclasses, tuples and strings), so a report is the same either way. Kept results
are bounded by the characters of their arguments (``BUDGET`` per function, oldest first out) and dropped when
the reading ends. Outside ``across_ranks`` (a live capture, one log) every call parses.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

#: characters of arguments each memoized function keeps results for (graph code and kernel wrappers dominate).
#: Ranks on different GPUs log the same graphs with their own device (``cuda:3``), so a job's logs hold one version
#: of each graph per GPU of a host, and a process meets them in turn: the budget holds eight versions of a
#: 12-layer GPT-2 rank's graphs (10.5 MB of text each). At 16 MB it held one, each rank evicted the version the
#: next one needed, and nothing was reused (16 ranks on 8 devices: 14.5 s at 16 MB, 11.2 s at 128 MB, peak RSS
#: 598 and 570 MB; one process, torch 2.13 box)
BUDGET = 128 << 20

_on = False
_caches: list[_Cache] = []


class _Cache:
    def __init__(self) -> None:
        self.results: OrderedDict[tuple[Any, ...], tuple[tuple[Any, ...], Any]] = OrderedDict()
        self.chars = 0

    def clear(self) -> None:
        self.results.clear()
        self.chars = 0


#: arguments compared by value; any other (a graph a memoized parser returned) by identity, which is what ranks
#: that compiled alike share (hashing a graph by value would cost about what parsing it does)
_BY_VALUE = (str, bytes, int, float, tuple, type(None))
_OBJECT = object()


def _chars(args: tuple[Any, ...]) -> int:
    """The characters of the strings (and bytes) among ``args``, in tuples too, and 64 for each argument."""
    return sum(len(a) if isinstance(a, (str, bytes)) else _chars(a) if isinstance(a, tuple) else 0 for a in args) \
        + 64 * len(args)


def memoized(fn: F) -> F:
    """``fn``'s results by its positional arguments (strings, numbers, tuples of them by value; other objects by
    identity) while ``across_ranks`` is on."""
    cache = _Cache()
    _caches.append(cache)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not _on or kwargs:
            return fn(*args, **kwargs)
        key = tuple(a if isinstance(a, _BY_VALUE) else (_OBJECT, id(a)) for a in args)
        try:
            _, result = cache.results[key]
        except KeyError:
            pass
        except TypeError:  # a tuple holding something unhashable: not kept
            return fn(*args)
        else:
            cache.results.move_to_end(key)
            return result
        result = fn(*args)
        cache.results[key] = (args, result)  # the arguments are kept: an object's id is not reused while it lives
        cache.chars += _chars(args)
        while cache.chars > BUDGET and len(cache.results) > 1:
            _, (old, _) = cache.results.popitem(last=False)
            cache.chars -= _chars(old)
        return result

    return wrapper  # type: ignore[return-value]


def enable() -> None:
    """Keep results from now on, for the life of this process (a pool worker that reads ranks)."""
    global _on
    _on = True


@contextmanager
def across_ranks() -> Iterator[None]:
    """Keep results while the block runs; drop them after it."""
    global _on
    was = _on
    _on = True
    try:
        yield
    finally:
        _on = was
        if not was:
            for cache in _caches:
                cache.clear()
