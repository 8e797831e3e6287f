"""Backends and passes for the tests: an oracle, and targets that misbehave on purpose."""
import torch

SEEN = []
NOT_CALLABLE = 3


def counting_backend(gm, example_inputs):
    SEEN.append([tuple(t.shape) for t in example_inputs])
    return gm.forward


def logs_an_unknown_event(gm, example_inputs):
    """Logs a structured-trace event no torch logs, as a newer torch might, then runs the graph."""
    torch._logging.trace_structured("artifact", metadata_fn=lambda: {"name": "tcinspect_test_unknown_event",
                                                                     "encoding": "string"}, payload_fn=lambda: "new")
    return gm.forward


def raising_backend(gm, example_inputs):
    raise RuntimeError("no lowering for this")


def off_by_a_bit(gm, example_inputs):
    def run(*args):
        out = gm(*args)
        return tuple(o + 0.01 for o in out) if isinstance(out, (tuple, list)) else out + 0.01
    return run


def returns_none(gm):
    return None


def raising_pass(gm):
    raise ValueError("pattern table missing")


def breaks_lint(gm):
    for node in gm.graph.nodes:
        if node.op == "call_function":
            node.args = (node,) + tuple(node.args[1:])  # uses itself before it is defined
            break
    return gm


_ = torch


GRAPHS = []  # (node count, call_function/call_method count) per graph handed over


def recording_backend(gm, example_inputs):
    nodes = list(gm.graph.nodes)
    GRAPHS.append((len(nodes), sum(1 for n in nodes if n.op in ("call_function", "call_method", "call_module"))))
    return gm.forward
