"""Whether a shape guard torch logged while compiling is one its compile's final guards enforce. Pure: no torch.

torch logs every guard it evaluates on a symbol (``guard_added_fast``: the expression, e.g. ``Eq(s50, 16)``),
also those it evaluates with guards suppressed (AOTAutograd's backward compile, torch/_functorch/_aot_autograd/
graph_compile.py, 2.13) and those it later folds into a symbol's range. What the compiled graph checks on a later
call is the final guards Dynamo installs (``dynamo_cpp_guards_str``), where a symbol is its source and its
relations a range: ``2 <= L['args'][0].size()[1] <= 2048`` (torch's ShapeGuardPythonPrinter, 2.11-2.15).

A guard on one symbol is enforced when every value the final guards let through satisfies it: ``s50 <= 4096``
under ``2 <= X <= 2048`` is (the range checks it); ``Eq(s50, 16)`` under the same range is not (a call with 17
passes the guards). Values are tried one by one over the range (its first 10,000 and, past that, its end or
10**6, 10**12 and 10**18 where it has none): the guards torch logs are polynomials of low degree in one symbol
with small constants, monotonic past those. A guard on several symbols is enforced only where the final guards
state it as written; anything this module cannot read is not known ("").
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from typing import Any, Optional

YES = "yes"
NO = "no"

#: how many values from the bottom of a range are tried one by one
_WINDOW = 10_000
_HUGE = (10**6, 10**12, 10**18)
_INT = r"-?\d+"


def enforced(expression: str, sources: Sequence[str], final: Sequence[str],
             fixed: Optional[dict[str, int]] = None) -> str:
    """"yes", "no" or "" (not known): whether ``final`` (the compile's final guard expressions) enforce the shape
    guard ``expression`` on the symbols ``sources`` names ("s50: L['x'].size()[1]"). ``fixed``: the symbols the
    compile specialized, with their values (its TENSOR_MATCH guards then check the size itself)."""
    named = dict(pair.split(": ", 1) for pair in sources if ": " in pair)
    compact = [x.replace(" ", "") for x in final]
    written = _as_written(expression, named)
    if any(written in x for x in compact):
        return YES
    symbols = set(re.findall(r"\b[su]\d+\b", expression))
    if len(symbols) != 1 or next(iter(symbols)) not in named:
        return ""
    (symbol,) = symbols
    test = _predicate(expression, symbol)
    allowed = [fixed[symbol]] if fixed and symbol in fixed else _allowed(named[symbol].replace(" ", ""), compact)
    if test is None or allowed is None:
        return ""
    try:
        return YES if all(map(test, allowed)) else NO
    except (ArithmeticError, ValueError, OverflowError):
        return ""


_EQ = re.compile(r"^Eq\((?P<a>.+), (?P<b>[^,]+)\)$")


def _as_written(expression: str, named: dict[str, str]) -> str:
    """The guard as the final guards would print it: symbols as their sources, ``Eq(a, b)`` as ``a == b``."""
    text = expression
    m = _EQ.match(text)
    if m:
        text = f"{m['a']} == {m['b']}"
    for symbol in sorted(named, key=len, reverse=True):
        source = named[symbol]
        text = re.sub(rf"\b{re.escape(symbol)}\b", lambda _m: source, text)  # noqa: B023 - used at once
    return text.replace(" ", "")


def _allowed(source: str, final: Sequence[str]) -> Optional[list[int]]:
    """The values of ``source`` the final guards let through (a sample of a long range), or None where they state
    no range or value for it."""
    s = re.escape(source)
    equal = re.compile(rf"(?P<v>{_INT})==(?:{s})|(?:{s})==(?P<w>{_INT})")
    above = re.compile(rf"(?P<lo>{_INT})<=(?:{s})(?:<=(?P<hi>{_INT}))?")
    below = re.compile(rf"(?:{s})<=(?P<hi>{_INT})")
    lo: Optional[int] = None
    hi: Optional[int] = None
    for g in final:
        if source not in g:
            continue
        m = equal.fullmatch(g)
        if m:
            return [int(m["v"] or m["w"])]
        m = above.fullmatch(g) or below.fullmatch(g)
        if m:
            if m.groupdict().get("lo") is not None:
                lo = max(lo, int(m["lo"])) if lo is not None else int(m["lo"])
            if m["hi"] is not None:
                hi = min(hi, int(m["hi"])) if hi is not None else int(m["hi"])
    if lo is None:
        return None
    top = lo + _WINDOW
    values = list(range(lo, (min(hi, top) if hi is not None else top) + 1))
    if hi is None:
        values += [v for v in _HUGE if v > top]
    elif hi > top:
        values.append(hi)
    return values


def _power(a: int, b: int) -> int:
    if abs(b) > 64:
        raise ValueError("an exponent this module does not try")
    return int(a ** b)


_CALLS: dict[str, Callable[..., Any]] = {
    "Eq": lambda a, b: a == b, "Ne": lambda a, b: a != b, "Mod": lambda a, b: a % b,
    "FloorDiv": lambda a, b: a // b, "Max": max, "Min": min, "Abs": abs,
}
#: the operators a guard may use (``**`` through _power)
_BINARY = frozenset({ast.Add, ast.Sub, ast.Mult, ast.Pow, ast.FloorDiv, ast.Mod})
_COMPARE = frozenset({ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq})


def _predicate(expression: str, symbol: str) -> Optional[Callable[[int], bool]]:
    """``expression`` (sympy's text of a relation on integers) as a function of ``symbol``; None when it holds
    anything but integers, ``symbol``, arithmetic, comparisons and sympy's Eq/Ne/Mod/FloorDiv/Max/Min/Abs."""
    try:
        tree = ast.parse(expression, mode="eval").body
    except SyntaxError:
        return None

    def ok(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return isinstance(node.value, int) and not isinstance(node.value, bool)
        if isinstance(node, ast.Name):
            return node.id == symbol
        if isinstance(node, ast.BinOp):
            return type(node.op) in _BINARY and ok(node.left) and ok(node.right)
        if isinstance(node, ast.UnaryOp):
            return isinstance(node.op, (ast.USub, ast.Not)) and ok(node.operand)
        if isinstance(node, ast.Compare):
            return all(type(o) in _COMPARE for o in node.ops) and ok(node.left) and all(ok(c) for c in node.comparators)
        if isinstance(node, ast.BoolOp):
            return all(ok(v) for v in node.values)
        if isinstance(node, ast.Call):
            return (isinstance(node.func, ast.Name) and node.func.id in _CALLS and not node.keywords
                    and all(ok(a) for a in node.args))
        return False

    if not ok(tree):
        return None
    # only integers, ``symbol``, arithmetic, comparisons and the calls above passed ``ok``: compiled, the guard
    # runs as Python evaluates it, with ``**`` bounded by _power and and/or evaluating every operand to a bool
    body = _Bounded().visit(tree)
    fn = ast.Expression(ast.Lambda(args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=symbol)], kwonlyargs=[],
                                                      kw_defaults=[], defaults=[]),
                                   body=ast.Call(func=ast.Name(id="bool", ctx=ast.Load()), args=[body], keywords=[])))
    test: Callable[[int], bool] = eval(compile(ast.fix_missing_locations(fn), "<shape guard>", "eval"), dict(_NAMESPACE))
    return test


def _all(*values: Any) -> bool:
    return all(values)


def _any(*values: Any) -> bool:
    return any(values)


#: what a compiled guard can name besides its symbol (no builtins but bool)
_NAMESPACE: dict[str, Any] = {**_CALLS, "_power": _power, "_all": _all, "_any": _any,
                              "__builtins__": {"bool": bool}}


class _Bounded(ast.NodeTransformer):
    """``a ** b`` as ``_power(a, b)``; ``a and b`` / ``a or b`` as ``_all(a, b)`` / ``_any(a, b)``."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Pow):
            return ast.Call(func=ast.Name(id="_power", ctx=ast.Load()), args=[node.left, node.right], keywords=[])
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        name = "_all" if isinstance(node.op, ast.And) else "_any"
        return ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=list(node.values), keywords=[])
