"""Write an LLM-shaped saved report: N decoder layers of attention + MLP, forward and backward.

Built with tcinspect's own report classes, so it is a valid report of the current schema. Its shape
follows a real one: a Hugging Face Llama training step traced on an H100 (16 layers, hidden 2048,
bf16) gave one Dynamo graph of 1,224 nodes and 1,501 guards, AOT joint / forward / backward graphs,
4,592 post-grad nodes and 656 kernels (about 40 % generated Triton, the rest extern matmuls and
attention), 14 MB as JSON. Per layer this writes about as many nodes, kernels and bytes of each kind,
so 16 layers give about 650 kernels, 4,600 post-grad nodes and 15 MB; the content (names, code) is
made up. Graph edges follow the arguments, as in an FX graph: a chain through each layer with the
residual stream and the saved activations linking layers.

``bench/llm_report.py N FILE`` writes one (the tests build theirs in memory):

    python bench/llm_report.py 16 /tmp/llm16.yaml      # YAML (any path not ending in .json)
    python bench/llm_report.py 64 /tmp/llm64.json
"""

from __future__ import annotations

from tcinspect.report import (
    AotGraphs,
    AotStage,
    CompileMetrics,
    DynamoGraph,
    DynamoStage,
    Graph,
    Guard,
    InductorStage,
    Kernel,
    Node,
    Options,
    OutputCode,
    Report,
    SourceLocation,
    Stages,
    Target,
)

LLAMA = "/opt/venv/lib/python3.12/site-packages/transformers/models/llama/modeling_llama.py"
HIDDEN, FFN, SEQ, HEADS = 2048, 5632, 512, 16

# One layer's forward ops: (ATen target, line in the model file, source text, output shape, "extern" for a
# library call). Pointwise runs between externs fuse into one generated kernel, as Inductor does.
_FWD = (
    ("prims.convert_element_type.default", 62, "hidden_states = hidden_states.to(torch.float32)", "h"),
    ("aten.pow.Tensor_Scalar", 63, "variance = hidden_states.pow(2).mean(-1, keepdim=True)", "h"),
    ("aten.mean.dim", 63, "variance = hidden_states.pow(2).mean(-1, keepdim=True)", "r"),
    ("aten.add.Tensor", 64, "hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)", "r"),
    ("aten.rsqrt.default", 64, "hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)", "r"),
    ("aten.mul.Tensor", 64, "hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)", "h"),
    ("prims.convert_element_type.default", 65, "return self.weight * hidden_states.to(input_dtype)", "h"),
    ("aten.mul.Tensor", 65, "return self.weight * hidden_states.to(input_dtype)", "h"),
    ("aten.mm.default", 252, "query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)", "extern"),
    ("aten.mm.default", 253, "key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)", "extern"),
    ("aten.mm.default", 254, "value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)", "extern"),
    ("aten.view.default", 252, "query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)", "q"),
    ("aten.permute.default", 252, "query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)", "q"),
    ("aten.cos.default", 122, "cos = emb.cos() * self.attention_scaling", "q"),
    ("aten.sin.default", 123, "sin = emb.sin() * self.attention_scaling", "q"),
    ("aten.mul.Tensor", 156, "q_embed = (q * cos) + (rotate_half(q) * sin)", "q"),
    ("aten.slice.Tensor", 132, "x1 = x[..., : x.shape[-1] // 2]", "q"),
    ("aten.slice.Tensor", 133, "x2 = x[..., x.shape[-1] // 2 :]", "q"),
    ("aten.neg.default", 134, "return torch.cat((-x2, x1), dim=-1)", "q"),
    ("aten.cat.default", 134, "return torch.cat((-x2, x1), dim=-1)", "q"),
    ("aten.mul.Tensor", 156, "q_embed = (q * cos) + (rotate_half(q) * sin)", "q"),
    ("aten.add.Tensor", 156, "q_embed = (q * cos) + (rotate_half(q) * sin)", "q"),
    ("aten.mul.Tensor", 157, "k_embed = (k * cos) + (rotate_half(k) * sin)", "k"),
    ("aten.neg.default", 134, "return torch.cat((-x2, x1), dim=-1)", "k"),
    ("aten.cat.default", 134, "return torch.cat((-x2, x1), dim=-1)", "k"),
    ("aten.add.Tensor", 157, "k_embed = (k * cos) + (rotate_half(k) * sin)", "k"),
    ("aten.expand.default", 171, "hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)", "k"),
    ("aten.clone.default", 172, "return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)", "k"),
    ("aten._scaled_dot_product_efficient_attention.default", 196, "attn_output = torch.nn.functional.scaled_dot_product_attention(query, key, value)", "extern"),
    ("operator.getitem", 196, "attn_output = torch.nn.functional.scaled_dot_product_attention(query, key, value)", "q"),
    ("operator.getitem", 196, "attn_output = torch.nn.functional.scaled_dot_product_attention(query, key, value)", "r"),
    ("aten.permute.default", 275, "attn_output = attn_output.reshape(*input_shape, -1).contiguous()", "q"),
    ("aten.clone.default", 275, "attn_output = attn_output.reshape(*input_shape, -1).contiguous()", "h"),
    ("aten.mm.default", 276, "attn_output = self.o_proj(attn_output)", "extern"),
    ("aten.add.Tensor", 318, "hidden_states = residual + hidden_states", "h"),
    ("prims.convert_element_type.default", 62, "hidden_states = hidden_states.to(torch.float32)", "h"),
    ("aten.pow.Tensor_Scalar", 63, "variance = hidden_states.pow(2).mean(-1, keepdim=True)", "h"),
    ("aten.mean.dim", 63, "variance = hidden_states.pow(2).mean(-1, keepdim=True)", "r"),
    ("aten.add.Tensor", 64, "hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)", "r"),
    ("aten.rsqrt.default", 64, "hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)", "r"),
    ("aten.mul.Tensor", 64, "hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)", "h"),
    ("aten.mul.Tensor", 65, "return self.weight * hidden_states.to(input_dtype)", "h"),
    ("aten.mm.default", 94, "down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))", "extern"),
    ("aten.mm.default", 94, "down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))", "extern"),
    ("aten.view.default", 94, "down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))", "f"),
    ("aten.sigmoid.default", 94, "down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))", "f"),
    ("aten.mul.Tensor", 94, "down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))", "f"),
    ("aten.mul.Tensor", 94, "down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))", "f"),
    ("aten.mm.default", 94, "down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))", "extern"),
    ("aten.add.Tensor", 325, "hidden_states = residual + hidden_states", "h"),
)
_SHAPES = {"h": ("1", str(SEQ), str(HIDDEN)), "r": ("1", str(SEQ), "1"), "q": ("1", str(HEADS), str(SEQ), "128"),
           "k": ("1", str(HEADS), str(SEQ), "128"), "f": (str(SEQ), str(FFN)), "extern": (str(SEQ), str(HIDDEN))}
#: Real post-grad graphs have about twice the nodes of these op lists: the views, copies and
#: getitems around each op, which fuse into the same kernels (no extern of their own).
_VIEWS = tuple(("aten.view.default", line, code, "h") if key == "extern" else (t, line, code, key)
               for t, line, code, key in _FWD)
#: Pointwise nodes fused into one generated kernel at most (Inductor's fusions of a Llama layer run to 20-30).
_FUSE = 40
_MODULES = {52: "input_layernorm", 62: "input_layernorm", 63: "input_layernorm", 64: "input_layernorm",
            65: "input_layernorm", 94: "mlp", 318: "self_attn", 325: "mlp"}


def _stride(shape: tuple[str, ...]) -> tuple[str, ...]:
    out, step = [], 1
    for s in reversed(shape):
        out.append(str(step))
        step *= int(s)
    return tuple(reversed(out))


def _source(line: int, code: str) -> SourceLocation:
    return SourceLocation(LLAMA, line, "forward", code)


def _module(layer: int, line: int) -> str:
    return f"m.model.layers.{layer}.{_MODULES.get(line, 'self_attn')}"


_TRITON = '''import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.{kind}(
    size_hints={{'x': {numel}}},
    filename=__file__,
    triton_meta={{'signature': {{'in_out_ptr0': '*bf16', 'in_ptr0': '*bf16', 'in_ptr1': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, warp_size=32), 'constants': {{}}}},
    inductor_meta={{'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': '{name}', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': False, 'no_x_dim': False, 'num_load': 3, 'num_reduction': 0, 'backend_hash': 'B0F1E2D3C4B5A69788796A5B4C3D2E1F00112233445566778899AABBCCDDEEFF', 'are_deterministic_algorithms_enabled': False, 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False}},
    min_elem_per_thread=0
)
@triton.jit
def {name}(in_out_ptr0, in_ptr0, in_ptr1, xnumel, XBLOCK : tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x2 = xindex
    x0 = (xindex % {hidden})
    x1 = xindex // {hidden}
    tmp0 = tl.load(in_out_ptr0 + (x2), xmask).to(tl.float32)
    tmp1 = tl.load(in_ptr0 + (x0), xmask, eviction_policy='evict_last').to(tl.float32)
    tmp3 = tl.load(in_ptr1 + (x1), xmask, eviction_policy='evict_last')
    tmp2 = tmp0 * tmp1
    tmp4 = tmp2 * tmp3
    tmp5 = libdevice.rsqrt(tmp4)
    tmp6 = tmp5.to(tl.float32)
{body}    tl.store(in_out_ptr0 + (x2), tmp6, xmask)
'''


def _graph_code(nodes: list[Node], name: str) -> str:
    lines = [f"class {name}(torch.nn.Module):", "    def forward(self, " +
             ", ".join(f'{n.name}: "{n.dtype}[{", ".join(n.shape)}]"' for n in nodes if n.op == "placeholder") + "):"]
    for n in nodes:
        if n.op == "call_function":
            lines.append(f'        {n.name}: "{n.dtype}[{", ".join(n.shape)}][{", ".join(n.stride)}]{n.device}" = '
                         f"torch.ops.{n.target}({n.args});  {n.args.split(', ')[0]} = None")
    lines.append(f"        return ({nodes[-1].args},)")
    return "\n".join(lines) + "\n"


def _part(layers: int, part: str, prefix: str) -> tuple[list[Node], list[Kernel], str]:
    """One AOT part's post-grad nodes, its kernels and its wrapper."""
    # forward ~98 nodes a layer; backward ~187: each op's gradient (two matmuls per forward matmul)
    back = tuple(reversed(_FWD))
    ops = _FWD + _VIEWS if part == "forward" else back + _VIEWS + back + _VIEWS[:40]
    nodes: list[Node] = [Node("placeholder", f"{prefix}_{i}", f"{prefix}_{i}", "", "bf16", (str(HIDDEN), str(HIDDEN)),
                              (str(HIDDEN), "1"), "cuda:0") for i in range(9 * layers + 3)]
    kernels: list[Kernel] = []
    launches: list[str] = []
    residual = nodes[0].name
    pending: list[Node] = []

    def flush(layer: int) -> None:
        if not pending:
            return
        name = f"triton_poi_fused_{'_'.join(sorted({p.target.split('.')[1] for p in pending})[:6])}_{len(kernels)}"
        buf = f"buf{len(kernels)}"
        lines = tuple(sorted({f"{LLAMA}:{p.source.line}" for p in pending if p.source}))
        body = "".join(f"    tmp{7 + j} = tmp{6 + j} * tmp{6 + j}\n" for j in range(len(pending) * 2))
        kernels.append(Kernel(name, "triton_pointwise", "triton", tuple(p.name for p in pending),
                              tuple(sorted({p.target.rsplit(".", 1)[0] for p in pending})), lines,
                              f"{name}.run({buf}, {residual}, {pending[0].name}, {SEQ * HIDDEN}, stream=stream0)",
                              str(SEQ * HIDDEN), (f"{buf}: bf16[{SEQ}, {HIDDEN}]",),
                              _TRITON.format(kind="pointwise", numel=SEQ * HIDDEN, name=name, hidden=HIDDEN, body=body),
                              provenance="inductor", provenance_key=f"{name}:{len(kernels)}",
                              modules=(_module(layer, pending[0].source.line if pending[0].source else 0),)))
        launches.append(kernels[-1].launch)
        pending.clear()

    for layer in range(layers):
        for target, line, code, shape_key in ops:
            shape = _SHAPES[shape_key]
            prev = nodes[-1].name
            args = f"{prev}, {residual}" if target.endswith("add.Tensor") else \
                f"{prev}, {nodes[len(nodes) % (9 * layers + 3)].name}" if shape_key == "extern" else prev
            n = Node("call_function", f"{target.split('.')[1]}_{len(nodes)}", target, args, "bf16", shape,
                     _stride(shape), "cuda:0", _source(line, code))
            nodes.append(n)
            if shape_key == "extern":
                flush(layer)
                op = target.split(".")[1].lstrip("_")
                buf = f"buf{len(kernels)}"
                kernels.append(Kernel(op if op == "mm" else "aten._scaled_dot_product_efficient_attention", "extern",
                                      "", (n.name,), (target.rsplit(".", 1)[0],), (f"{LLAMA}:{line}",),
                                      f"extern_kernels.{op}({prev}, {args.split(', ')[-1]}, out={buf})", "",
                                      (f"{buf}: bf16[{SEQ}, {HIDDEN}]",), "", provenance="inductor",
                                      modules=(_module(layer, line),)))
                launches.append(kernels[-1].launch)
            else:
                pending.append(n)
                if len(pending) >= _FUSE:
                    flush(layer)
            if target.endswith("add.Tensor") and line in (318, 325):
                residual = n.name
        flush(layer)
    nodes.append(Node("output", "output", "output", nodes[-1].name))
    wrapper = (f"# AOT ID: ['0_{part}']\nfrom ctypes import c_void_p, c_long, c_int\nimport torch\n" +
               "".join(f"# kernel path: /tmp/torchinductor/{k.name[:2]}/{k.name}.py\n{k.name} = async_compile.triton("
                       f"'{k.name}', '''\n...\n''', device_str='cuda')\n" for k in kernels if k.source) +
               "\n\ndef call(args):\n" + "".join(f"        {x}\n        del buf{i}\n" for i, x in enumerate(launches)))
    return nodes, kernels, wrapper


def build(layers: int) -> Report:
    """The report of an N-layer Llama-like training step (one graph, forward and backward)."""
    fwd_nodes, fwd_kernels, fwd_wrapper = _part(layers, "forward", "primals")
    bwd_nodes, bwd_kernels, bwd_wrapper = _part(layers, "backward", "tangents")
    # Dynamo's graph: the user-level ops of each layer (about 75), with the parameters as inputs
    dyn_nodes = [Node("placeholder", f"l_self_modules_m_modules_model_modules_layers_modules_{i // 9}_parameters_{i}_",
                      f"L_self_modules_m_modules_model_modules_layers_modules_{i // 9}_parameters_{i}_", "", "bf16",
                      (str(HIDDEN), str(HIDDEN)), (str(HIDDEN), "1"), "cuda:0") for i in range(9 * layers + 3)]
    dyn_nodes += [Node("call_function", n.name.replace("_", "_d", 1), "torch." + n.target.split(".")[1], n.args, n.dtype,
                       n.shape, n.stride, n.device, n.source)
                  for n in fwd_nodes if n.op == "call_function"][: 72 * layers]
    dyn_nodes.append(Node("output", "output", "output", dyn_nodes[-1].name))
    guards = tuple(Guard(kind, gtype, f"L['self']._modules['m']._modules['model']._modules['layers']._modules['{i // 94}']"
                                      f"._modules['self_attn']._parameters['w{i}']",
                         f"check_tensor(L['self']._modules['m']._modules['model']._modules['layers']._modules"
                         f"['{i // 94}']._parameters['w{i}'], Parameter, DispatchKeySet(CUDA, BackendSelect, "
                         f"ADInplaceOrView, AutogradCUDA), torch.bfloat16, device=0, requires_grad=True, "
                         f"size=[{HIDDEN}, {HIDDEN}], stride=[{HIDDEN}, 1])",
                         "self.weight * hidden_states.to(input_dtype)  # transformers/models/llama/modeling_llama.py:65 in forward")
                   for i, (kind, gtype) in zip(range(94 * layers), __import__("itertools").cycle(
                       (("tensor", "TENSOR_MATCH"), ("type", "TYPE_MATCH"), ("attribute", "DICT_CONTAINS"),
                        ("value", "EQUALS_MATCH"), ("identity", "ID_MATCH"), ("type", "TYPE_MATCH")))))
    dyn_graph = Graph("dynamo_output_graph", _graph_code(dyn_nodes, "GraphModule"), tuple(dyn_nodes))
    fwd_graph = Graph("aot_forward_graph", _graph_code(fwd_nodes, "GraphModule"), tuple(fwd_nodes),
                      tuple(n.name for n in fwd_nodes[9 * layers + 3::6]))
    bwd_graph = Graph("aot_backward_graph", _graph_code(bwd_nodes, "GraphModule"), tuple(bwd_nodes))
    joint_nodes = fwd_nodes[:-1] + bwd_nodes[9 * layers + 3:]
    joint = Graph("aot_joint_graph", _graph_code(joint_nodes, "joint_helper"), tuple(joint_nodes))
    outputs = (
        OutputCode("0/0", "0_forward", "forward", fwd_wrapper, tuple(fwd_kernels),
                   Graph("inductor_post_grad_graph", fwd_graph.code, fwd_graph.nodes), "miss"),
        OutputCode("0/0", "0_backward", "backward", bwd_wrapper, tuple(bwd_kernels),
                   Graph("inductor_post_grad_graph", bwd_graph.code, bwd_graph.nodes), "miss"),
    )
    stages = Stages(DynamoStage("ok", "", (DynamoGraph("0/0", "forward", "/work/llama_train.py", 6, dyn_graph, guards),)),
                    AotStage("ok", "", (AotGraphs("0/0", joint, fwd_graph, bwd_graph),)),
                    InductorStage("ok", "", outputs))
    compiles = (CompileMetrics("0/0", "forward", "/work/llama_train.py", 6, 51.3, 31.4, 27.3, 20.1, len(guards),
                               len(dyn_nodes), "miss"),)
    return Report(torch_version="2.11.0+cu130", device="cuda", options=Options(device="cuda"),
                  target=Target(kind="model", path="llama_train.py", model_name="model", inputs_name="example_inputs"),
                  stages=stages, compiles=compiles, calls=1, tcinspect_version="bench")

