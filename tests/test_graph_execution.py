"""TORCH_TRACE records tcinspect once counted as unknown: the order a process ran its compiled graphs
(``graph_execution``, and the August 2025 nightly's ``inductor_graph_execution``), kept per rank and compared across
ranks (the ``execution_order`` divergence), and older torch's names of the post-grad graph (``after_post_grad_graph``)
and of its node provenance (``inductor_post_to_pre_grad_nodes``). Logs are written here in torch's own format (a glog
line of JSON, then the payload's lines each after a tab); tests/data/torch_trace/torch-2.13.0/graph_execution/ is a
real 2-rank job (tests/data/torch_trace/record_graph_execution.py). Nothing here imports torch.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Optional

from helpers import cli, render_text
from tcinspect import serialize
from tcinspect.analysis.check.ranks import divergence_findings
from tcinspect.parse import graph_execution, post_to_pre, rankpool
from tcinspect.render import html
from tcinspect.render import ranks as render_ranks

RECORDED = Path(__file__).parent / "data" / "torch_trace" / "torch-2.13.0" / "graph_execution"

#: the pre-grad and post-grad graph ids of NodeSource records (Python object ids in a real log)
_PRE, _POST = 140438402218416, 140438402219999


def _record(meta: dict[str, Any], payload: Optional[str] = None,
            where: str = "torch/_inductor/compile_fx.py:1305") -> str:
    """One record as torch's TorchLogsFormatter writes it: the glog line, then each payload line after a tab."""
    if payload is not None:
        meta = {**meta, "has_payload": hashlib.md5(payload.encode()).hexdigest()}
    head = f"V1127 12:00:00.000000 1234 {where}] {json.dumps(meta)}"
    return head if payload is None else "\n".join([head, *("\t" + line for line in payload.split("\n"))])


def _artifact(name: str, cid: Optional[tuple[int, int]], payload: str, encoding: str = "json", rank: int = 0) -> str:
    meta: dict[str, Any] = {"artifact": {"name": name, "encoding": encoding}, "rank": rank}
    if cid is not None:
        meta.update(frame_id=cid[0], frame_compile_id=cid[1], attempt=0)
    return _record(meta, payload)


def _execution(order: list[Optional[str]], rank: int = 0) -> str:
    """torch._inductor.debug.log_graph_execution's record (torch 2.13): logged when the block ends, no compile id."""
    payload = json.dumps({"graph_execution_order": [{"compile_id": c} for c in order]}, indent=0)
    return _artifact("graph_execution", None, payload, rank=rank)


_POST_GRAD = '''class <lambda>(torch.nn.Module):
    def forward(self, arg0_1: "f32[8][1]cpu"):
         # File: /home/user/m.py:3 in f, code: y = x.relu()
        relu: "f32[8][1]cpu" = torch.ops.aten.relu.default(arg0_1);  arg0_1 = None

         # File: /home/user/m.py:4 in f, code: z = y * 2
        mul: "f32[8][1]cpu" = torch.ops.aten.mul.Tensor(relu, 2);  relu = None
        return (mul,)
        '''

_WRAPPER = """# AOT ID: ['0_inference']
import torch
from torch._inductor.async_compile import AsyncCompile
empty_strided_cpu = torch._C._dynamo.guards._empty_strided_cpu
async_compile = AsyncCompile()


cpp_fused_mul_relu_0 = async_compile.cpp_pybinding(['const float*', 'float*'], r'''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(const float* in_ptr0, float* out_ptr0)
{
}
''')


async_compile.wait(globals())
del async_compile

def call(args):
    arg0_1, = args
    args.clear()
    buf0 = empty_strided_cpu((8, ), (1, ), torch.float32)
    # Topologically Sorted Source Nodes: [y, z], Original ATen: [aten.relu, aten.mul]
    # [Provenance debug handles] cpp_fused_mul_relu_0:1
    cpp_fused_mul_relu_0(arg0_1, buf0)
    del arg0_1
    return (buf0, )
"""


def _source(name: str, graph_id: int, *came_from: dict[str, Any]) -> dict[str, Any]:
    """A node's source as torch.fx.traceback.NodeSource prints it."""
    return {"name": name, "target": "", "graph_id": graph_id, "pass_name": "Interpreter_PropagateUnbackedSymInts",
            "action": "create", "from_node": list(came_from)}


def _compile(frame: int, mapping: dict[str, Any], rank: int = 0) -> list[str]:
    """One compile as a 2025 nightly logs it on an FX graph cache miss with provenance tracking on."""
    cid = (frame, 0)
    post_to_pre = {"relu": [_source("y", _PRE)],
                   # a node a post-grad pass made from another: its chain goes back to the pre-grad graph's node
                   "mul": [_source("mul_1", _POST, _source("z", _PRE))]}
    return [
        _record({"dynamo_start": {"stack": []}, "frame_id": frame, "frame_compile_id": 0, "attempt": 0},
                where="torch/_dynamo/convert_frame.py:246"),
        _artifact("after_post_grad_graph", cid, _POST_GRAD, encoding="string", rank=rank),
        _artifact("inductor_post_to_pre_grad_nodes", cid, json.dumps(post_to_pre), rank=rank),
        _record({"inductor_output_code": {"filename": "/tmp/c.py"}, "frame_id": frame, "frame_compile_id": 0,
                 "attempt": 0}, _WRAPPER, where="torch/_inductor/graph.py:2745"),
        _artifact("fx_graph_cache_miss", cid, json.dumps({"key": "f"}), rank=rank),
        _artifact("inductor_provenance_tracking_node_mappings", cid, json.dumps(mapping), rank=rank),
    ]


def _log(path: Path, records: list[str]) -> Path:
    path.write_text("\n".join(records) + "\n")
    return path


#: Inductor's node mapping as the 2025 nightlies log it, less what a test leaves out
_MAPPING = {"cppCodeToPost": {"cpp_fused_mul_relu_0:1": ["relu", "mul"]},
            "postToCppCode": {"relu": ["cpp_fused_mul_relu_0:1"], "mul": ["cpp_fused_mul_relu_0:1"]}, "version": 2.0}


def test_older_torch_s_post_grad_graph_and_node_provenance_and_the_execution_order_are_read(tmp_path):
    log = _log(tmp_path / "dedicated_log_torch_trace_a.log",
               [*_compile(0, _MAPPING), *_compile(1, {**_MAPPING, "postToPre": {"relu": ["x"], "mul": ["x"]}}),
                _execution(["0/0", "1/0", "0/0", None])])
    rep = rankpool.read(log)
    assert rep.parse is None  # every record known and read: nothing counted as unknown or unreadable
    assert rep.graph_execution_order == ("0/0", "1/0", "0/0", "?")
    first, second = rep.stages.inductor.outputs
    # after_post_grad_graph is the post-grad graph, named as torch named it
    assert first.post_grad_graph is not None and first.post_grad_graph.name == "after_post_grad_graph"
    assert [n.name for n in first.post_grad_graph.nodes] == ["arg0_1", "relu", "mul", "output"]
    # the node mapping states the kernel's post-grad nodes but no postToPre: the pre-grad nodes come from
    # inductor_post_to_pre_grad_nodes, following mul's chain back to the pre-grad graph's z
    kernel = first.kernels[0]
    assert (kernel.provenance, kernel.source_nodes, kernel.dynamo_nodes) == ("inductor", ("relu", "mul"), ("y", "z"))
    # where the node mapping has postToPre, it is Inductor's statement and wins
    assert second.kernels[0].dynamo_nodes == ("x",)
    # kept in a saved report, and read back
    assert serialize.from_dict(serialize.to_dict(rep)).graph_execution_order == rep.graph_execution_order


def test_the_august_2025_nightly_s_record_per_call_and_an_unreadable_record(tmp_path):
    per_call = [_artifact("inductor_graph_execution", None, json.dumps({"graph": g}, indent=0))
                for g in ("graph_0", "graph_1", "graph_1")]
    rep = rankpool.read(_log(tmp_path / "dedicated_log_torch_trace_a.log", per_call))
    assert rep.graph_execution_order == ("graph_0", "graph_1", "graph_1") and rep.parse is None
    bad = _artifact("graph_execution", None, json.dumps({"graph_execution_order": 3}))
    rep = rankpool.read(_log(tmp_path / "dedicated_log_torch_trace_b.log", [*per_call, bad]))
    assert rep.graph_execution_order == ("graph_0", "graph_1", "graph_1")
    assert rep.parse is not None and not rep.parse.unknown_events
    assert [(e.name, e.count) for e in rep.parse.artifacts_not_understood] == [("graph_execution", 1)]


def _ranks(d: Path, orders: list[list[Optional[str]]]) -> Path:
    for rank, order in enumerate(orders):
        records = [r.replace(" 1234 ", f" {1234 + rank} ", 1) for r in (*_compile(0, _MAPPING, rank),
                                                                         _execution(order, rank))]  # its own pid
        _log(d / f"dedicated_log_torch_trace_rank_{rank}_x{rank}.log", records)
    return d


def test_ranks_that_ran_their_graphs_in_another_order_diverge_at_the_first_run_that_differs(tmp_path, capsys):
    d = _ranks(tmp_path, [["0/0", "1/0", "0/0", "1/0"], ["0/0", "0/0", "1/0", "1/0"]])
    rep = rankpool.read(d, jobs=1)
    assert [r.graph_execution_order for r in rep.ranks] == [("0/0", "1/0", "0/0", "1/0"), ("0/0", "0/0", "1/0", "1/0")]
    assert [(x.compile_id, x.aspect) for x in rep.divergence] == [("", "execution_order")]
    assert [(g.ranks, g.value) for g in rep.divergence[0].groups] == [
        ((0,), "run 2 of 4: 1/0 · order 0/0 [1/0] 0/0 1/0"), ((1,), "run 2 of 4: 0/0 · order 0/0 [0/0] 1/0 1/0")]
    shown = render_text(render_ranks.divergence(rep), width=300)
    # the headline is the consequence: graphs that run collectives, run in another order, wait on each other
    assert "Divergence: ranks ran their compiled graphs in different orders (first at run 2 of 4)" in shown
    assert "ended differently" not in shown
    page = html.render(rep)
    assert "<td>run<td>execution_order<td>rank 0<td>run 2 of 4: 1/0" in page and "<td>0/0 1/0 0/0 1/0" in page
    # `check` fails on it: ranks that run their collectives' graphs in another order wait on each other
    assert [f.status for f in divergence_findings("m", rep)] == ["fail"]
    # each rank's order and the divergence stay in a saved report
    back = serialize.from_dict(serialize.to_dict(rep))
    assert [r.graph_execution_order for r in back.ranks] == [r.graph_execution_order for r in rep.ranks]
    assert back.divergence == rep.divergence
    code, out, _ = cli(capsys, "trace", str(d), "-f", "json", "--no-timings")
    assert code == 0 and json.loads(out)["ranks"][1]["graph_execution_order"] == ["0/0", "0/0", "1/0", "1/0"]


def test_a_rank_that_ran_fewer_graphs_and_ranks_that_agree(tmp_path):
    (tmp_path / "short").mkdir()
    rep = rankpool.read(_ranks(tmp_path / "short", [["0/0", "0/0"], ["0/0", "0/0", "0/0"]]), jobs=1)
    assert [(g.ranks, g.value) for g in rep.divergence[0].groups] == [
        ((0,), "no run 3: ran 2 graphs · order 0/0 0/0"), ((1,), "run 3 of 3: 0/0 · order 0/0 0/0 [0/0]")]
    (tmp_path / "same").mkdir()
    rep = rankpool.read(_ranks(tmp_path / "same", [["0/0", "0/0"], ["0/0", "0/0"]]), jobs=1)
    assert rep.divergence == ()
    assert "and ran their compiled graphs in one order" in render_text(render_ranks.divergence(rep), width=300)
    # a rank that recorded no order is not compared: torch records it only where the job asked for it
    (tmp_path / "one").mkdir()
    rep = rankpool.read(_ranks(tmp_path / "one", [["0/0", "0/0"], []]), jobs=1)
    assert rep.divergence == () and rep.ranks[1].graph_execution_order == ()
    assert "graph_execution_order" not in serialize.to_dict(rep)["ranks"][1]


def test_a_real_job_s_ranks_keep_torch_s_order_and_diverge_where_they_ran_another_graph():
    truth = json.loads((RECORDED / "truth.json").read_text())["graph_execution_order"]
    rep = rankpool.read(RECORDED, jobs=1)
    assert rep.parse is not None and not rep.parse.unknown_events and not rep.parse.artifacts_not_understood
    expected = {int(r): tuple(e["compile_id"] or graph_execution.UNKNOWN for e in order) for r, order in truth.items()}
    assert {r.rank: r.graph_execution_order for r in rep.ranks} == expected
    # rank 0 ran scale, shift, head, scale; rank 1 scale, head, shift, scale (head compiled before the recording)
    first = next(i for i, (a, b) in enumerate(zip(expected[0], expected[1])) if a != b)
    (d,) = [x for x in rep.divergence if x.aspect == "execution_order"]
    assert first == 1 and [g.value.split(" · ")[0] for g in d.groups] == [
        f"run 2 of 4: {expected[0][1]} shift", "run 2 of 4: ?"]


def test_node_sources_read_only_where_their_chains_name_one_pre_grad_graph():
    one = {"relu": [_source("y", _PRE)], "mul": [_source("mul_1", _POST, _source("z", _PRE))],
           # a node a pattern made from no node (graph id -1) names no pre-grad node
           "mm_default": [{**_source("", -1), "pass_name": "pattern_matcher"}]}
    assert post_to_pre.post_to_pre(json.dumps(one)) == {"relu": ["y"], "mul": ["z"]}
    # chains that start in two graphs: which is the pre-grad graph the log does not say, so none is guessed
    two = {"relu": [_source("y", _PRE)], "mul": [_source("z", _POST)]}
    assert post_to_pre.post_to_pre(json.dumps(two)) == {}
    assert post_to_pre.post_to_pre('{"relu": [3]}') == {} and post_to_pre.post_to_pre("not json") == {}
