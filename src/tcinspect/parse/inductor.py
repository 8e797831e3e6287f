"""Inductor: parse ``inductor_output_code`` (the generated wrapper module) into a kernel catalog.

Kernel definitions (``async_compile.triton(...)`` / ``async_compile.cpp_pybinding(...)``) give
each kernel's source; the wrapper's ``call`` body gives launch order, launch sizes and the
"Topologically Sorted Source Nodes ... Original ATen" comments Inductor writes beside launches.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Optional

from tcinspect.parse.memo import memoized
from tcinspect.report import Graph, Kernel

_AOT_ID = re.compile(r"#\s*AOT ID:\s*\[?'?(?P<id>[^'\]\s]+)")
_DEF = re.compile(
    r"^(?P<var>[A-Za-z_]\w*)\s*=\s*async_compile\.(?P<how>triton|cpp_pybinding|cpp|cuda|halide|rocm)\(",
    re.M,
)
_SOURCE_NODES = re.compile(r"#\s*Topologically Sorted Source Nodes:\s*\[(?P<nodes>[^\]]*)\],\s*Original ATen:\s*\[(?P<aten>[^\]]*)\]")
#: written above each launch when provenance tracking is on (torch/_inductor/codegen/wrapper.py, 2.11-2.15)
_HANDLE = re.compile(r"#\s*\[Provenance debug handles\]\s*(?P<key>\S+:\d+)")
_ORIGINAL_PATH = re.compile(r"#\s*Original path:\s*(?P<path>\S+)")
_TRITON_KIND = [
    ("@triton_heuristics.persistent_reduction", "triton_persistent_reduction"),
    ("@triton_heuristics.reduction", "triton_reduction"),
    ("@triton_heuristics.pointwise", "triton_pointwise"),
    ("@triton_heuristics.template", "triton_template"),
    ("@triton_heuristics.foreach", "triton_foreach"),
    ("@triton_heuristics.split_scan", "triton_scan"),
    ("@triton_heuristics.user_autotune", "user_triton"),
]
_EXTERN_CALL = re.compile(r"^\s*(?:[\w, ]+=\s*)?(?P<callee>extern_kernels\.\w+|torch\.ops\.[\w.]+|aten\.[\w.]+)\(")


def aot_id_of(wrapper: str) -> str:
    m = _AOT_ID.search(wrapper[:500])
    return m["id"] if m else ""


def part_of(aot_id: str) -> str:
    for part in ("forward", "backward", "inference"):
        if aot_id.endswith(part):
            return part
    return aot_id.split("_", 1)[-1] if "_" in aot_id else "inference"


def _string_literal_end(text: str, start: int) -> int:
    """Index just past the triple-quoted literal that opens at ``start``."""
    q = text[start:start + 3]
    end = text.find(q, start + 3)
    return len(text) if end < 0 else end + 3


def _definitions(wrapper: str) -> dict[str, dict[str, str]]:
    """Kernel variable -> {how, source, comment, name} for every async_compile definition."""
    defs = {}
    for m in _DEF.finditer(wrapper):
        body_start = m.end()
        q = min((i for i in (wrapper.find("'''", body_start), wrapper.find('"""', body_start)) if i >= 0), default=-1)
        if q < 0:
            continue
        end = _string_literal_end(wrapper, q)
        source = wrapper[q + 3:end - 3]
        # the comment block Inductor writes just above the definition
        before = wrapper[:m.start()].rstrip("\n").splitlines()
        comment: list[str] = []
        for line in reversed(before):
            if line.startswith("#"):
                comment.insert(0, line)
            else:
                break
        name_m = re.match(r"\s*'(?P<n>[^']+)'", wrapper[body_start:q + 3]) if m["how"] == "triton" else None
        defs[m["var"]] = {
            "how": m["how"],
            "source": source.strip("\n"),
            "comment": "\n".join(comment),
            "name": name_m["n"] if name_m else m["var"],
        }
    return defs


def _call_body(wrapper: str) -> list[str]:
    """Lines of the wrapper's ``call`` function (and any graph partitions it runs)."""
    lines = wrapper.splitlines()
    out: list[str] = []
    inside = False
    indent = 0
    for line in lines:
        stripped = line.strip()
        m = re.match(r"^(\s*)def (call|partition_\d+)\(", line)
        if m:
            inside, indent = True, len(m.group(1))
            continue
        if inside:
            if stripped and (len(line) - len(line.lstrip())) <= indent:
                inside = False
                continue
            out.append(line)
    return out


def _triton_kind(source: str) -> str:
    for marker, kind in _TRITON_KIND:
        if marker in source:
            return kind
    return "triton"


def _split(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in text.split(",") if p.strip())


def _segment(joined: str, names: set[str]) -> list[tuple[str, bool]]:
    """Split ``relu_threshold_backward`` into op names, longest known name first.

    Returns (piece, known) pairs; pieces not in ``names`` (ops decomposed away before the
    post-grad graph, such as threshold_backward) are kept whole.
    """
    tokens = joined.split("_")
    out: list[tuple[str, bool]] = []
    unknown: list[str] = []
    i = 0
    while i < len(tokens):
        for j in range(len(tokens), i, -1):
            piece = "_".join(tokens[i:j])
            if piece in names:
                if unknown:
                    out.append(("_".join(unknown), False))
                    unknown = []
                out.append((piece, True))
                i = j
                break
        else:
            unknown.append(tokens[i])
            i += 1
    if unknown:
        out.append(("_".join(unknown), False))
    return out


def _cpp_fusion(var: str, post_grad: Optional[Graph], taken: set[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(source nodes, ATen ops) of a C++ kernel, read from its name, e.g. cpp_fused_relu_threshold_backward_0.

    Inductor on CPU writes no source-node comment beside C++ kernel launches (torch 2.13), but
    names each kernel after the ATen ops it fused; those names are matched against the post-grad
    graph's nodes (each node counted for the first kernel that claims it).
    """
    m = re.match(r"^cpp_fused_(?P<ops>.+?)_\d+$", var)
    if not m:
        return (), ()
    ops_by_name: dict[str, list[tuple[str, str]]] = {}
    for n in post_grad.nodes if post_grad is not None else ():
        parts = n.target.split(".")
        if n.op == "call_function" and len(parts) >= 2 and parts[0] in ("aten", "prims"):
            ops_by_name.setdefault(parts[1], []).append((n.name, f"{parts[0]}.{parts[1]}"))
    pieces = _segment(m["ops"], set(ops_by_name))
    nodes = [node for name, known in pieces if known for node, _ in ops_by_name[name] if node not in taken]
    taken.update(nodes)
    aten = tuple(dict.fromkeys(ops_by_name[name][0][1] if known else name for name, known in pieces))
    return tuple(nodes), aten


def _launch_args(line: str, var: str) -> list[str]:
    start = line.find("(", line.find(var) + len(var))
    end = line.rfind(")")
    if start < 0 or end <= start:
        return []
    args, depth, cur = [], 0, ""
    for ch in line[start + 1:end]:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        args.append(cur.strip())
    return args


@memoized
def parse_output_code(wrapper: str, post_grad: Optional[Graph] = None,
                      user_graph: Optional[Graph] = None) -> tuple[Kernel, ...]:
    """Every kernel the wrapper launches, in launch order.

    ``user_graph`` is Dynamo's graph of the same frame: Inductor's "Source Nodes" comments name
    the nodes of that original graph, so user lines are looked up there first.
    """
    defs = _definitions(wrapper)
    user_lines_of = {**_user_lines(post_grad), **_user_lines(user_graph)}
    kernels: list[Kernel] = []
    taken: set[str] = set()
    allocs: dict[str, str] = {}
    pending: Optional[re.Match[str]] = None
    pending_key = ""
    for line in _call_body(wrapper):
        stripped = line.strip()
        _track_allocation(stripped, allocs)
        c = _SOURCE_NODES.search(stripped)
        if c:
            pending = c
            continue
        h = _HANDLE.search(stripped)
        if h:
            pending_key = h["key"]
            continue
        if stripped.startswith("#") or not stripped:
            continue
        kernel = None
        launch = re.match(r"^(?P<var>[A-Za-z_]\w*)(?:\.run)?\(", stripped)
        if launch and launch["var"] in defs:
            var = launch["var"]
            d = defs[var]
            args = [a for a in _launch_args(stripped, var) if not a.startswith("stream=")]
            if d["how"] == "triton":
                kind = _triton_kind(d["source"])
                language = "triton"
            else:
                kind, language = "cpp", "cpp"
            nodes: tuple[str, ...] = ()
            aten: tuple[str, ...] = ()
            if pending is not None:
                nodes, aten = _split(pending["nodes"]), _split(pending["aten"])
            else:
                meta = _SOURCE_NODES.search(d["comment"])
                if meta:
                    nodes, aten = _split(meta["nodes"]), _split(meta["aten"])
                elif language == "cpp":
                    nodes, aten = _cpp_fusion(var, post_grad, taken)
            if kind == "user_triton":
                orig = _ORIGINAL_PATH.search(d["comment"])
                lines: tuple[str, ...] = (orig["path"],) if orig else ()
            else:
                lines = tuple(dict.fromkeys(loc for n in nodes for loc in user_lines_of.get(n, ())))
            numel = _numel(args, kind)
            kernel = Kernel(name=var, kind=kind, language=language, source_nodes=nodes, aten_ops=aten,
                            user_lines=lines, launch=stripped, numel=numel, buffers=_buffers(args, allocs),
                            source=d["source"])
        else:
            ext = _EXTERN_CALL.match(line)
            if ext:
                callee = ext["callee"]
                name = callee.replace("extern_kernels.", "").replace("torch.ops.", "")
                nodes = aten = ()
                if pending is not None:
                    nodes, aten = _split(pending["nodes"]), _split(pending["aten"])
                lines = tuple(dict.fromkeys(loc for n in nodes for loc in user_lines_of.get(n, ())))
                args = _launch_args(stripped, callee)
                out = re.search(r"\bout=(\w+)", stripped)
                kernel = Kernel(name=name, kind="extern", language="", source_nodes=nodes, aten_ops=aten,
                                user_lines=lines, launch=stripped,
                                buffers=_buffers(args + ([out.group(1)] if out else []), allocs))
        if kernel is not None:
            kernels.append(replace(kernel, provenance_key=pending_key) if pending_key else kernel)
            pending = None
            pending_key = ""
    return tuple(kernels)


_ALLOC = re.compile(r"^(?P<buf>buf\d+)\s*=\s*empty_strided_\w+\(\((?P<shape>[^)]*)\),\s*\((?P<stride>[^)]*)\),\s*torch\.(?P<dtype>\w+)")
_REUSE = re.compile(r"^(?P<new>buf\d+)\s*=\s*(?P<old>buf\d+);\s*del\s+buf\d+\s*#\s*reuse")
_DTYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64", "int64": "i64", "int32": "i32",
           "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "b8", "complex64": "c64", "complex128": "c128"}


def short_dtype(dtype: object) -> str:
    """torch.float32 (or "float32") -> "f32", as PyTorch's graph printouts write it."""
    name = str(dtype).replace("torch.", "")
    return _DTYPES.get(name, name)


def _track_allocation(line: str, allocs: dict[str, str]) -> None:
    """Remember each buffer's dtype and shape as the wrapper allocates or reuses it."""
    m = _ALLOC.match(line)
    if m:
        dims = ", ".join(d.strip() for d in m["shape"].split(",") if d.strip())
        allocs[m["buf"]] = f"{short_dtype(m['dtype'])}[{dims}]"
        return
    r = _REUSE.match(line)
    if r and r["old"] in allocs:
        allocs[r["new"]] = allocs[r["old"]]


def _buffers(args: list[str], allocs: dict[str, str]) -> tuple[str, ...]:
    names = [a for a in dict.fromkeys(re.findall(r"\bbuf\d+\b", " ".join(args)))]
    return tuple(f"{b}: {allocs[b]}" for b in names if b in allocs)


_SIZE = re.compile(r"(?:\d+|[su]\d+)(?:\s*[-+*/]\s*(?:\d+|[su]\d+))*")


def _numel(args: list[str], kind: str) -> str:
    """Launch size as the wrapper states it: Triton's numel arguments, or a user kernel's grid."""
    sizes = [a for a in args if _SIZE.fullmatch(a.strip("() "))]
    if kind == "user_triton":
        # FixedGrid user kernels take the three grid sizes last (inductor_meta's extra_launcher_args)
        return f"grid ({', '.join(sizes[-3:])})" if len(sizes) >= 3 else ""
    if kind.startswith("triton") and kind != "triton_template":
        return ", ".join(sizes)
    return ""


def _user_lines(post_grad: Optional[Graph]) -> dict[str, tuple[str, ...]]:
    if post_grad is None:
        return {}
    return {n.name: (f"{n.source.file}:{n.source.line}",) for n in post_grad.nodes if n.source is not None}
