"""Syntax highlighting for the HTML page: Python (graph code, Inductor's wrappers and Triton kernels) and C++
(Inductor's CPU kernels) as ``<span class=...>`` runs, one regular expression pass per block. Pure.

A block of tens of thousands of characters is highlighted in milliseconds (Pygments' lexers took about 0.25 s
per 100,000 characters, most of a large page's time). Only what is coloured gets a span: keywords, builtins,
the names ``def`` and ``class`` introduce, decorators, strings, comments, numbers, operators and, in C++,
types and preprocessor lines; everything else is the text, escaped. The text of a highlighted block is exactly
its input: the spans only wrap it.
"""

from __future__ import annotations

import html
import keyword
import re
from collections.abc import Callable

#: the page's rules for the classes below (the colours of Pygments' default style)
CSS = """.hl { background: #f8f8f8 }
.hl .k { color: #008000; font-weight: bold }
.hl .kt { color: #B00040 }
.hl .nb { color: #008000 }
.hl .nf { color: #00F }
.hl .nc { color: #00F; font-weight: bold }
.hl .nd { color: #A2F }
.hl .ow { color: #A2F; font-weight: bold }
.hl .o { color: #666 }
.hl .m { color: #666 }
.hl .s { color: #BA2121 }
.hl .c { color: #3D7B7B; font-style: italic }
.hl .cp { color: #9C6500 }"""

_PY_KEYWORDS = frozenset(keyword.kwlist) - {"and", "or", "not", "in", "is"}
_PY_WORD_OPS = frozenset({"and", "or", "not", "in", "is"})
_PY_BUILTINS = frozenset(["abs", "all", "any", "bool", "bytes", "callable", "chr", "dict", "divmod", "enumerate", "filter", "float", "format", "frozenset", "getattr", "hasattr", "hash", "id", "int", "isinstance", "issubclass", "iter", "len", "list", "map", "max", "min", "next", "object", "open", "ord", "pow", "print", "range", "repr", "reversed", "round", "set", "setattr", "slice", "sorted", "str", "sum", "super", "tuple", "type", "zip", "self", "cls"])

_PY = re.compile(r"""
  (?P<c>\#[^\n]*)
| (?P<s>(?:\b[rRbBuUfF]{1,2})?(?:'''[\s\S]*?(?:'''|\Z)|\"\"\"[\s\S]*?(?:\"\"\"|\Z)
        |'(?:\\.|[^'\\\n])*(?:'|$)|"(?:\\.|[^"\\\n])*(?:"|$)))
| (?P<nd>(?<![\w)\]])@[A-Za-z_][\w.]*)
| (?P<def>\b(?:def|class)\b)(?P<gap>[ \t]+)(?P<name>[A-Za-z_]\w*)
| (?P<w>[A-Za-z_]\w*)
| (?P<m>\b(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|\d[\d_]*(?:\.[\d_]*)?(?:[eE][+-]?\d+)?[jJ]?)\b
      |(?<![\w.])\.\d[\d_]*(?:[eE][+-]?\d+)?)
| (?P<o>\*\*=?|//=?|<<=?|>>=?|->|:=|[-+*/%&|^~<>=!]=?)
""", re.VERBOSE | re.MULTILINE)

_CPP_KEYWORDS = frozenset(["alignas", "alignof", "asm", "break", "case", "catch", "class", "const", "constexpr", "const_cast", "continue", "decltype", "default", "delete", "do", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "for", "friend", "goto", "if", "inline", "mutable", "namespace", "new", "noexcept", "operator", "private", "protected", "public", "register", "reinterpret_cast", "return", "sizeof", "static", "static_assert", "static_cast", "struct", "switch", "template", "this", "throw", "try", "typedef", "typeid", "typename", "union", "using", "virtual", "volatile", "while", "true", "false", "nullptr"])
_CPP_TYPES = frozenset(["auto", "bool", "char", "double", "float", "int", "long", "short", "signed", "unsigned", "void", "size_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "half", "bfloat16"])

_CPP = re.compile(r"""
  (?P<cp>^[ \t]*\#[^\n]*)
| (?P<c>//[^\n]*|/\*[\s\S]*?(?:\*/|\Z))
| (?P<s>(?:\b(?:u8|[uUL]))?(?:"(?:\\.|[^"\\\n])*(?:"|$)|'(?:\\.|[^'\\\n])*(?:'|$)))
| (?P<w>[A-Za-z_]\w*)
| (?P<m>\b(?:0[xX][0-9a-fA-F']+|\d[\d']*(?:\.\d*)?(?:[eE][+-]?\d+)?)[uUlLfF]*\b|(?<![\w.])\.\d+(?:[eE][+-]?\d+)?[fFlL]?)
| (?P<o>->|::|<<=?|>>=?|\+\+|--|&&|\|\||[-+*/%&|^~<>=!?]=?)
""", re.VERBOSE | re.MULTILINE)


def _span(cls: str, text: str) -> str:
    return f'<span class="{cls}">{html.escape(text, quote=False)}</span>'


#: each language's coloured words and their classes
_PY_WORDS = {**dict.fromkeys(_PY_BUILTINS, "nb"), **dict.fromkeys(_PY_WORD_OPS, "ow"),
             **dict.fromkeys(_PY_KEYWORDS, "k")}
_CPP_WORDS = {**dict.fromkeys(_CPP_TYPES, "kt"), **dict.fromkeys(_CPP_KEYWORDS, "k")}


def _painter(words: dict[str, str]) -> Callable[[re.Match[str]], str]:
    """A match of the language's pattern as HTML: a word in its class (or plain), any other token in its group's."""

    def paint(m: re.Match[str]) -> str:
        kind = m.lastgroup
        text = m.group()
        if kind == "w":
            cls = words.get(text)
            return _span(cls, text) if cls else text
        if kind == "name":  # Python's def/class, its gap and the name it introduces
            return (_span("k", m["def"]) + m["gap"]
                    + _span("nc" if m["def"] == "class" else "nf", m["name"]))
        return _span(kind or "", text)

    return paint


_PYTHON, _CPP_PAINT = _painter(_PY_WORDS), _painter(_CPP_WORDS)


def highlight(text: str, language: str = "python") -> str:
    """``text`` as HTML: escaped, its tokens in spans of the classes of ``CSS``."""
    pattern, paint = (_CPP, _CPP_PAINT) if language == "cpp" else (_PY, _PYTHON)
    out: list[str] = []
    last = 0
    for m in pattern.finditer(text):
        start = m.start()
        if start > last:
            out.append(html.escape(text[last:start], quote=False))
        out.append(paint(m))
        last = m.end()
    out.append(html.escape(text[last:], quote=False))
    return "".join(out)
