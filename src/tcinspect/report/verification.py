"""``tcinspect verify``: eager against compiled, and where compiled results first depart."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class TensorCheck:
    """One compiled tensor compared with its eager twin (an output or a gradient)."""

    name: str  # "output[0]", "grad input[0]", "grad linear.weight"
    dtype: str
    shape: tuple[int, ...]
    max_abs_error: float
    max_rel_error: float
    rtol: float
    atol: float
    ok: bool
    message: str = ""  # torch.testing.assert_close's first line on a mismatch
    #: Root-mean-square error from the float64 eager run, of compiled and of eager (0 when assert_close
    #: passed, or no float64 run): a tensor outside the tolerances passes when compiled's is within noise
    fp64_rmse: float = 0.0
    eager_fp64_rmse: float = 0.0


@dataclass(frozen=True)
class LocateStep:
    """One run of the search for where results depart: what ran, whether it matched eager, and how long it took."""

    what: str  # "aot_eager --pass m.py:p on each AOT graph, node by node", "inductor"
    ok: bool
    seconds: float = 0.0
    detail: str = ""


@dataclass(frozen=True)
class FirstDivergence:
    """Where compiled results first depart from eager (``verify`` on a mismatch; capturing/locate.py).

    ``node`` is set when one node of one graph departs by verify's rule; ``stage`` when no node does and the
    backend stages were bisected (the first of aot_eager, aot_eager_decomp_partition, inductor to fail). Where
    that stage has subsystems, torch's CompilerBisector names the one that introduces it (``subsystem``,
    ``bisect_number``, ``debug_info``: its BisectionResult); a lowering it names is placed at its node's user line."""

    graph: str = ""  # "aot_forward_graph 0", "aot_backward_graph 0", "dynamo_output_graph 0"
    node: str = ""
    op: str = ""  # "aten.hardsigmoid.default"
    line: str = ""  # FILE:LINE of the user code the node came from
    module: str = ""  # the innermost nn.Module (nn_module_stack)
    max_abs: float = 0.0
    rmse: float = 0.0  # from float64 eager where it ran, else from eager
    stage: str = ""
    #: torch's CompilerBisector, where it ran: the subsystem whose disabling fixes it ("lowerings",
    #: "post_grad_passes", "inductor_emulate_precision_casts"), the application of it that first fails (a count
    #: from 0) and torch's debug info for that application (the pass's name, the node a lowering lowered)
    subsystem: str = ""
    bisect_number: Optional[int] = None
    debug_info: str = ""
    note: str = ""
    steps: tuple[LocateStep, ...] = ()
    seconds: float = 0.0
    stopped: str = ""  # set when the time budget ended the search


@dataclass(frozen=True)
class Verification:
    """Eager against compiled on the same inputs: every output, and gradients of inputs and parameters."""

    ok: bool
    tensors: tuple[TensorCheck, ...] = ()
    error: str = ""  # set when the comparison could not run (e.g. the outputs differ in structure)
    reference: str = ""  # "float64": a float64 eager run judged the tensors the tolerances rejected
    #: where results first depart (``verify`` on a mismatch, unless --no-locate)
    first_divergence: Optional[FirstDivergence] = None
