"""The custom-backend tutorial's SiLU rewrite: a graph pass, and backends built around it.

    tcinspect trace sample_models/silu_pass.py --pass sample_models/silu_pass.py:rewrite_silu
    tcinspect trace sample_models/silu_pass.py --backend sample_models/silu_pass.py:inspect_backend
    tcinspect verify sample_models/silu_pass.py --pass sample_models/silu_pass.py:rewrite_silu
    tcinspect verify sample_models/silu_pass.py --pass sample_models/silu_pass.py:sigmoid_to_hardsigmoid
    tcinspect verify sample_models/silu_pass.py --backend sample_models/silu_pass.py:silu_then_inductor

`rewrite_silu` runs on ATen graphs (what --pass hands it, after AOTAutograd): it replaces
``mul(sigmoid(x), x)`` with ``aten.silu``, as the tutorial's section "Proper Graph Rewriting" does.
`sigmoid_to_hardsigmoid` is a pass that changes the numbers (``verify`` fails on it).
"""
import torch
from torch.fx import GraphModule, Node


def rewrite_silu(gm: GraphModule) -> GraphModule:
    """Rewrite the pattern sigmoid(x) * x into aten.silu(x), in place."""
    graph = gm.graph
    for node in list(graph.nodes):  # a copy: the loop edits the graph
        if node.op != "call_function" or node.target != torch.ops.aten.mul.Tensor:
            continue
        a, b = node.args
        sigmoid_node = input_node = None
        if isinstance(a, Node) and a.target == torch.ops.aten.sigmoid.default and a.args[0] is b:
            sigmoid_node, input_node = a, b
        elif isinstance(b, Node) and b.target == torch.ops.aten.sigmoid.default and b.args[0] is a:
            sigmoid_node, input_node = b, a
        if sigmoid_node is None:
            continue
        with graph.inserting_before(node):
            silu = graph.call_function(torch.ops.aten.silu.default, args=(input_node,))
        node.replace_all_uses_with(silu)
        graph.erase_node(node)
        if not sigmoid_node.users:
            graph.erase_node(sigmoid_node)
    graph.lint()
    gm.recompile()
    return gm


def sigmoid_to_hardsigmoid(gm: GraphModule) -> GraphModule:
    """A pass that changes the math: every aten.sigmoid becomes aten.hardsigmoid (a piecewise-linear stand-in)."""
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target == torch.ops.aten.sigmoid.default:
            node.target = torch.ops.aten.hardsigmoid.default
    gm.recompile()
    return gm


def inspect_backend(gm, example_inputs):
    """A backend that runs the Dynamo graph as it is: tcinspect shows what it was handed."""
    return gm.forward


def rewrite_silu_torch(gm: GraphModule) -> GraphModule:
    """The same rewrite on a Dynamo graph (torch-level: torch.sigmoid, operator.mul)."""
    import operator

    graph = gm.graph
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not operator.mul:
            continue
        a, b = node.args
        for sig, other in ((a, b), (b, a)):
            if isinstance(sig, Node) and sig.target is torch.sigmoid and sig.args[0] is other:
                with graph.inserting_before(node):
                    silu = graph.call_function(torch.nn.functional.silu, args=(other,))
                node.replace_all_uses_with(silu)
                graph.erase_node(node)
                if not sig.users:
                    graph.erase_node(sig)
                break
    graph.lint()
    gm.recompile()
    return gm


def silu_then_inductor(gm, example_inputs):
    """The tutorial's composition: own transforms on the Dynamo graph, then Inductor for the heavy lifting.

    The Dynamo graph holds torch-level calls, so the rewrite matches torch.sigmoid / operator.mul
    (the ATen pattern of `rewrite_silu` appears only after AOTAutograd).
    """
    from torch._inductor.compile_fx import compile_fx

    return compile_fx(rewrite_silu_torch(gm), example_inputs)


def model(x):
    return torch.sigmoid(x) * x + x.cos()  # the first term IS SiLU


example_inputs = (torch.randn(256, 256, requires_grad=True),)
