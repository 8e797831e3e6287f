"""Report -> the `codegen` views: the kernel catalog, one kernel's code, the wrapper."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from tcinspect.render.table import code_panel, kernel_table
from tcinspect.report import Kernel, OutputCode, Report
from tcinspect.views import fusion_summary


def catalog(rep: Report) -> RenderableType:
    st = rep.stages.inductor
    parts: list[RenderableType] = [Text(f"{rep.summary.kernels} kernels in {len(st.outputs)} Inductor outputs "
                                        f"· torch {rep.torch_version} · {rep.device}", style="bold")]
    for o in st.outputs:
        f = fusion_summary(o)
        cache = f" · FX graph cache {o.cache}" if o.cache else ""
        parts.append(Text(""))
        parts.append(kernel_table(o.kernels, f"{o.compile_id} {o.part} ({o.aot_id}){cache}", buffers=True))
        line = Text("  fusion: ", style="bold")
        line.append(f"{f.post_grad_ops} ATen ops in the post-grad graph → {f.kernels} kernels "
                    f"({f.generated_kernels} generated, {f.extern_kernels} extern)")
        if f.extern_ops:
            line.append(f"; extern: {', '.join(f.extern_ops)}", style="dim")
        parts.append(line)
    return Group(*parts)


def kernel_detail(out: OutputCode, k: Kernel) -> RenderableType:
    meta = Table(show_header=False, box=None, padding=(0, 2))
    meta.add_column(style="bold")
    meta.add_column()
    meta.add_row("kernel", k.name)
    meta.add_row("kind", k.kind)
    meta.add_row("output", f"{out.compile_id} {out.part} ({out.aot_id})")
    meta.add_row("fused ATen ops", ", ".join(k.aten_ops) or "-")
    meta.add_row("source nodes", ", ".join(k.source_nodes) or "-")
    meta.add_row("user lines", ", ".join(k.user_lines) or "-")
    meta.add_row("launch", k.launch)
    if k.numel:
        meta.add_row("size", k.numel)
    if k.buffers:
        meta.add_row("buffers", ", ".join(k.buffers))
    parts: list[RenderableType] = [meta]
    if k.source:
        parts.append(code_panel(k.source, k.name, "cpp" if k.language == "cpp" else "python"))
    else:
        parts.append(Text("(an extern kernel: a library call, no generated source)", style="dim"))
    return Group(*parts)


def wrapper(out: OutputCode) -> RenderableType:
    return code_panel(out.wrapper, f"inductor_output_code {out.compile_id} {out.part} ({out.aot_id})")
