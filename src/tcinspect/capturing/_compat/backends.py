"""The compilers tcinspect builds around torch's: a custom pipeline's backends, Inductor's decompositions, AOTInductor.

Touches compile_fx's ``inner_compile`` (torch/_inductor/compile_fx.py: each ATen graph after AOTAutograd, before
Inductor lowers it) and AOTAutograd's cache config; aot_eager's compilers (torch._dynamo.backends.common.aot_autograd);
Inductor's decomposition and lowering tables (the ops of a ``--pass``'s output Inductor cannot lower, and their
decompositions traced as Inductor traces its pattern replacements); AOTInductor's package compile and load
(``export --aoti``). Supported: torch 2.11 to 2.15.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import torch


def inductor_with_inner(inner: Callable[..., Any]) -> Callable[..., Any]:
    """An Inductor backend whose per-graph compile goes through ``inner(gm, example_inputs, next, **kw)``.

    compile_fx takes an ``inner_compile`` (torch/_inductor/compile_fx.py, 2.11-2.15): it receives each
    ATen graph after AOTAutograd (forward, backward or inference) before Inductor lowers it.
    """
    from torch._inductor.compile_fx import compile_fx, compile_fx_inner

    def part_of(kwargs: dict[str, Any]) -> str:
        if kwargs.get("is_backward"):
            return "backward"
        return "inference" if kwargs.get("is_inference") else "forward"

    def inner_compile(gm: Any, example_inputs: Any, *args: Any, **kwargs: Any) -> Any:
        gm = inner(gm, part_of(kwargs))
        return compile_fx_inner(gm, example_inputs, *args, **kwargs)

    def backend(gm: Any, example_inputs: Any) -> Any:
        # AOTAutograd's cache keys the Dynamo graph and the configs, not ``inner``: an entry from a run without it
        # (the user's own torch.compile) or with another pass would be loaded and ``inner`` never called
        # (torch/_functorch/aot_autograd.py: ``AOTAutogradCache.try_load`` for compile_fx's compilers, 2.11-2.15).
        # Off for this compile, no entry is read or written; the FX graph cache keys the graph ``inner`` returned.
        with torch._functorch.config.patch(enable_autograd_cache=False):
            return compile_fx(gm, example_inputs, inner_compile=inner_compile)

    return backend


def unlowerable_ops(gm: Any) -> list[str]:
    """The ATen ops in ``gm`` that Inductor cannot lower: it has no lowering for them, only a decomposition.

    AOTAutograd decomposes them with Inductor's table (torch/_inductor/decomposition.py, ``select_decomp_table``)
    before Inductor sees a graph, so only a pass that runs after it puts one back; Inductor's GraphLowering then
    fails ("both a fallback and a decomp for same op", or MissingOperatorWithDecomp without implicit fallbacks:
    torch/_inductor/graph.py ``call_function``, 2.11-2.15). Ops on Inductor's FALLBACK_ALLOW_LIST lower anyway.
    """
    from torch._inductor.decomposition import select_decomp_table
    from torch._inductor.lowering import FALLBACK_ALLOW_LIST, lowerings

    table = select_decomp_table()
    found: list[str] = []
    for node in gm.graph.nodes:
        op = node.target
        if (node.op == "call_function" and isinstance(op, torch._ops.OpOverload) and op not in lowerings
                and op in table and op.name().split(".")[0] not in FALLBACK_ALLOW_LIST and str(op) not in found):
            found.append(str(op))
    return found


def decompose_for_inductor(gm: Any, ops: Sequence[str]) -> Any:
    """``gm`` with each node calling one of ``ops`` replaced by its decomposition from Inductor's own table, traced
    on the node's fake values as Inductor traces its pattern replacements (torch/_inductor/pattern_matcher.py
    ``fwd_only``: make_fx with the decomposition table, ``tracing_mode="real"``, under the python dispatcher,
    2.11-2.15). The new nodes keep the replaced node's stack trace and provenance metadata; the rest of the graph
    (its placeholders, names and other nodes) is unchanged."""
    from torch._dispatch.python import enable_python_dispatcher
    from torch._guards import detect_fake_mode
    from torch._inductor.decomposition import select_decomp_table
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.utils import _pytree as pytree

    table = select_decomp_table()
    kept_meta = ("stack_trace", "nn_module_stack", "source_fn_stack", "original_aten", "from_node", "seq_nr",
                 "fwd_source_fn_stack", "partitioner_tag", "autograd_backward", "custom")
    graph = gm.graph
    for node in list(graph.nodes):
        if node.op != "call_function" or str(node.target) not in ops:
            continue
        flat, spec = pytree.tree_flatten((node.args, node.kwargs))
        is_node = [isinstance(a, torch.fx.Node) for a in flat]
        values = [a.meta["val"] for a, n in zip(flat, is_node) if n]
        target = node.target

        def call(*vals: Any, _flat: list[Any] = flat, _is_node: list[bool] = is_node, _spec: Any = spec,
                 _target: Any = target) -> Any:
            it = iter(vals)
            args, kwargs = pytree.tree_unflatten([next(it) if n else a for a, n in zip(_flat, _is_node)], _spec)
            return _target(*args, **kwargs)

        fake_mode = detect_fake_mode(values)
        with fake_mode if fake_mode is not None else contextlib.nullcontext(), enable_python_dispatcher():
            sub = make_fx(call, table, tracing_mode="real")(*values)
        inputs = [a for a, n in zip(flat, is_node) if n]
        env = dict(zip([n for n in sub.graph.nodes if n.op == "placeholder"], inputs))
        with graph.inserting_before(node):
            out = graph.graph_copy(sub.graph, env)
        for new in env.values():
            if isinstance(new, torch.fx.Node) and all(new is not a for a in inputs):
                new.meta.update({k: node.meta[k] for k in kept_meta if k in node.meta and not new.meta.get(k)})
        if isinstance(out, torch.fx.Node):
            node.replace_all_uses_with(out)
        else:  # an op of several outputs: its users are getitem nodes
            for user in list(node.users):
                user.replace_all_uses_with(out[user.args[1]])
                graph.erase_node(user)
        graph.erase_node(node)
    graph.lint()
    gm.recompile()
    return gm


def aot_eager_with_inner(inner: Callable[..., Any]) -> Callable[..., Any]:
    """aot_eager whose forward and backward ATen graphs go through ``inner(gm, part)`` first."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    def compiler(part: str) -> Callable[..., Any]:
        def run(gm: Any, example_inputs: Any) -> Any:
            return make_boxed_func(inner(gm, part))
        return run

    return aot_autograd(fw_compiler=compiler("forward"), bw_compiler=compiler("backward"),
                        inference_compiler=compiler("inference"))


def is_graph_module(value: Any) -> bool:
    return isinstance(value, torch.fx.GraphModule)


def aoti_compile_and_package(exported_program: Any, package_path: str) -> str:
    """AOTInductor: compile an ExportedProgram into a .pt2 package (torch._inductor, 2.11-2.15)."""
    return torch._inductor.aoti_compile_and_package(exported_program, package_path=package_path)


def aoti_load_package(package_path: str) -> Callable[..., Any]:
    return torch._inductor.aoti_load_package(package_path)
