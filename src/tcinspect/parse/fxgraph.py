"""Parse ``GraphModule.print_readable`` text (what the structured trace logs) into a node table.

Working from the logged text, not live graph objects, means a recorded trace (from a GPU run, or
another torch version) can be analysed on any machine without torch.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Container
from typing import Optional

from tcinspect.parse.memo import memoized
from tcinspect.report import Graph, Node, SourceLocation

# torch 2.14+ writes "# Backward of forward node: File: ..." above the nodes of a backward graph
_FILE_COMMENT = re.compile(
    r"#\s*(?:Backward of forward node:\s*)?File:\s*(?P<file>.+?):(?P<line>\d+) in (?P<fn>[^,]+), code: (?P<code>.*)$")
_NODE = re.compile(r'^(?P<name>[A-Za-z_]\w*)\s*(?::\s*"(?P<type>[^"]*)")?\s*=\s*(?P<expr>.+)$')
_ANNOTATION = re.compile(r'^(?P<name>[A-Za-z_]\w*)\s*:\s*"(?P<type>[^"]*)"\s*,?\s*(?:#.*)?$')
_TENSOR_TYPE = re.compile(r"^(?P<dtype>[a-z]+\d*(?:_\w+)?)\[(?P<shape>[^\]]*)\]\[(?P<stride>[^\]]*)\](?P<device>\S*)$")
_CLEANUP = re.compile(r";\s+(?:[A-Za-z_]\w*\s*=\s*)+None\s*$")
_BINARY = re.compile(r"^(?P<a>\S+) (?P<op>\*\*|//|<<|>>|<=|>=|==|!=|[-+*/@%<>&|^]) (?P<b>\S+)$")
_BINARY_NAMES = {
    "+": "add", "-": "sub", "*": "mul", "/": "truediv", "//": "floordiv", "**": "pow", "@": "matmul",
    "%": "mod", "<": "lt", ">": "gt", "<=": "le", ">=": "ge", "==": "eq", "!=": "ne", "&": "and_",
    "|": "or_", "^": "xor", "<<": "lshift", ">>": "rshift",
}
_SAVED = "SavedForBackwardsAOTOutput"
# FX prints an in-place operator node (operator.iadd, operator.setitem, ...) as the statement itself, then
# binds the node's name to the mutated value: `y_1 += l_x_;  y_2: "f32[8]" = y_1`, `x[0] = 1.0;  setitem = x`
# (torch/fx/graph.py, ``inplace_methods``; the same in torch 2.11-2.15)
_INPLACE = re.compile(r'^(?P<stmt>.+?);  (?P<name>[A-Za-z_]\w*)\s*(?::\s*"(?P<type>[^"]*)")?\s*=\s*'
                      r'(?P<alias>[A-Za-z_]\w*)\s*(?:;  .*)?$')
_AUGMENTED = re.compile(r"^(?P<a>\S+) (?P<op>\*\*|//|<<|>>|[-+*/@%&|^])= (?P<b>.+)$")
_SETITEM = re.compile(r"^(?P<base>[A-Za-z_]\w*)\[(?P<idx>.*)\] = (?P<value>.+)$")
_INPLACE_NAMES = {
    "+": "iadd", "-": "isub", "*": "imul", "/": "itruediv", "//": "ifloordiv", "**": "ipow", "@": "imatmul",
    "%": "imod", "&": "iand", "|": "ior", "^": "ixor", "<<": "ilshift", ">>": "irshift",
}


@functools.lru_cache(maxsize=8192)
def parse_type(annotation: str) -> tuple[str, tuple[str, ...], tuple[str, ...], str]:
    """Split ``f32[8, 32][32, 1]cuda:0`` into dtype, shape, stride and device (a graph repeats a few types many
    times: each is split once)."""
    m = _TENSOR_TYPE.match(annotation.strip())
    if not m:
        if annotation.startswith("Sym("):
            return "sym", (), (), ""
        return annotation.strip(), (), (), ""

    def dims(text: str) -> tuple[str, ...]:
        return tuple(d.strip() for d in text.split(",") if d.strip())

    return m["dtype"], dims(m["shape"]), dims(m["stride"]), m["device"]


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside brackets or quotes."""
    parts, depth, cur, quote = [], 0, [], ""
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = ""
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


_CALL = re.compile(r"^(?P<callee>[A-Za-z_][\w.]*)\((?P<args>.*)\)$", re.S)
_SUBSCRIPT = re.compile(r"^(?P<base>[A-Za-z_]\w*)\[(?P<idx>.*)\]$")


def _classify(expr: str, known: Container[str]) -> tuple[str, str, str]:
    """The (op, target, args) of a node's right-hand side."""
    expr = expr.strip()
    call = _CALL.match(expr)
    if call:
        callee, args = call["callee"], call["args"]
        head, _, attr = callee.partition(".")
        if head == "self" and attr:
            return "call_module", attr, args
        if head in known and attr and "." not in attr:
            return "call_method", attr, f"{head}, {args}" if args else head
        if callee.startswith("torch.ops."):
            callee = callee[len("torch.ops."):]
        return "call_function", callee, args
    if expr.startswith("self."):
        return "get_attr", expr[len("self."):], ""
    sub = _SUBSCRIPT.match(expr)
    if sub and sub["base"] in known:
        return "call_function", "operator.getitem", f"{sub['base']}, {sub['idx']}"
    binary = _BINARY.match(expr)
    if binary:
        return "call_function", f"operator.{_BINARY_NAMES[binary['op']]}", f"{binary['a']}, {binary['b']}"
    if expr.startswith("-") and expr[1:].isidentifier():
        return "call_function", "operator.neg", expr[1:]
    return "call_function", "", expr


def _signature_params(lines: list[str], start: int) -> tuple[list[tuple[str, str]], int]:
    """Parameters of ``def forward(...)`` starting at ``lines[start]``; returns (params, body line)."""
    text, i = "", start
    while i < len(lines):
        text += "\n" + lines[i]
        i += 1
        if re.search(r"\)\s*(->\s*[^:]+)?:\s*$", lines[i - 1].split("#")[0]):
            break
    inner = text[text.index("(") + 1: text.rindex(")")]
    params = []
    for raw in inner.split("\n"):
        raw = raw.split("  #")[0].split(" # ")[0].strip().rstrip(",")
        for piece in _split_top(raw):
            name, _, ann = piece.partition(":")
            name = name.strip()
            if not name or name == "self" or name.startswith("*"):
                continue
            params.append((name, ann.strip().strip('"')))
    return params, i


def _inplace_node(line: str, source: Optional[SourceLocation]) -> Optional[Node]:
    """The node of an in-place operator line (``x += y;  name = x``, ``x[i] = v;  setitem = x``), else None."""
    m = _INPLACE.match(line)
    if not m:
        return None
    stmt = m["stmt"].strip()
    augmented = _AUGMENTED.match(stmt)
    if augmented and augmented["a"] == m["alias"]:
        target, args = f"operator.{_INPLACE_NAMES[augmented['op']]}", f"{augmented['a']}, {augmented['b']}"
    else:
        setitem = _SETITEM.match(stmt)
        if not setitem or setitem["base"] != m["alias"]:
            return None
        target, args = "operator.setitem", f"{setitem['base']}, {setitem['idx']}, {setitem['value']}"
    dtype, shape, stride, device = parse_type(m["type"]) if m["type"] else ("", (), (), "")
    return Node(op="call_function", name=m["name"], target=target, args=args, dtype=dtype, shape=shape,
                stride=stride, device=device, source=source)


@memoized
def parse_graph(name: str, code: str) -> Graph:
    """Parse one graph's readable code into a ``Graph`` with its node table."""
    lines = code.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("def forward(")), None)
    if start is None:
        return Graph(name=name, code=code)
    def_indent = len(lines[start]) - len(lines[start].lstrip())
    params, i = _signature_params(lines, start)
    nodes: list[Node] = []
    by_name: dict[str, int] = {}

    def add(node: Node) -> None:
        by_name[node.name] = len(nodes)
        nodes.append(node)

    for pname, ptype in params:
        dtype, shape, stride, device = parse_type(ptype) if ptype else ("", (), (), "")
        add(Node(op="placeholder", name=pname, target=pname, dtype=dtype, shape=shape, stride=stride, device=device))

    source: Optional[SourceLocation] = None
    saved: list[str] = []
    while i < len(lines):
        raw = lines[i]
        i += 1
        stripped = raw.strip()
        if not stripped:
            continue
        indent = len(raw) - len(raw.lstrip())
        if indent <= def_indent:
            break  # the end of forward: nested subgraph classes follow
        if stripped.startswith("#"):
            m = _FILE_COMMENT.search(stripped)
            if m:
                source = SourceLocation(m["file"], int(m["line"]), m["fn"].strip(), m["code"].strip())
            elif "No stacktrace found" in stripped:
                source = None
            continue
        if stripped.startswith("return"):
            body = stripped[len("return"):].strip()
            while body.endswith("(") or (body.count("(") > body.count(")")):
                if i >= len(lines):
                    break
                nxt = lines[i]
                i += 1
                piece, _, comment = nxt.partition("#")
                if _SAVED in comment:
                    saved.append(piece.strip().rstrip(","))
                body += " " + piece.strip()
            add(Node(op="output", name="output", target="output", args=body.strip("() ").rstrip(",")))
            break
        ann = _ANNOTATION.match(stripped)
        if ann and ann["name"] in by_name:
            # joint graphs annotate their flattened inputs inside the body
            dtype, shape, stride, device = parse_type(ann["type"])
            nodes[by_name[ann["name"]]] = Node(op="placeholder", name=ann["name"], target=ann["name"],
                                               dtype=dtype, shape=shape, stride=stride, device=device)
            continue
        if ann and "=" not in stripped:
            dtype, shape, stride, device = parse_type(ann["type"])
            add(Node(op="placeholder", name=ann["name"], target=ann["name"], dtype=dtype, shape=shape,
                     stride=stride, device=device))
            continue
        m = _NODE.match(stripped)
        if not m:
            inplace = _inplace_node(stripped, source)
            if inplace is not None:
                add(inplace)
            continue
        expr = _CLEANUP.sub("", m["expr"]).strip()
        node_name = m["name"]
        if expr in by_name and nodes[by_name[expr]].op == "placeholder" and not m["type"]:
            # Dynamo renames its inputs: `l_x_ = L_x_`
            at = by_name.pop(expr)  # its place, not nodes.index (which compares every node before it, field by field)
            old = nodes[at]
            nodes[at] = Node(op="placeholder", name=node_name, target=expr, dtype=old.dtype, shape=old.shape,
                             stride=old.stride, device=old.device)
            by_name[node_name] = at
            continue
        if "fx_pytree.tree_flatten_spec" in expr:
            continue
        # by_name itself, not a set copied from it per node (that was quadratic in the graph's size)
        op, target, args = _classify(expr, by_name)
        dtype, shape, stride, device = parse_type(m["type"]) if m["type"] else ("", (), (), "")
        add(Node(op=op, name=node_name, target=target, args=args, dtype=dtype, shape=shape, stride=stride,
                 device=device, source=source))
    return Graph(name=name, code=code, nodes=tuple(nodes), saved_for_backward=tuple(saved))
