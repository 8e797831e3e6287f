"""Report -> the `codegen` views: the kernel catalog, one kernel's code, the wrapper."""

from __future__ import annotations

from typing import Optional

from rich.console import Group, RenderableType
from rich.text import Text

from tcinspect.analysis.codegen import fusion_summary
from tcinspect.render.grid import Table
from tcinspect.render.parts import code_panel
from tcinspect.render.table import ROW_LIMIT, compact_lines, kernel_table
from tcinspect.report import Kernel, OutputCode, Report


def catalog(rep: Report, limit: Optional[int] = ROW_LIMIT) -> RenderableType:
    st = rep.stages.inductor
    parts: list[RenderableType] = [Text(f"{rep.summary.kernels} kernels in {len(st.outputs)} Inductor outputs "
                                        f"· torch {rep.torch_version or 'unknown'} · {rep.device}", style="bold")]
    for o in st.outputs:
        f = fusion_summary(o)
        cache = f" · FX graph cache {o.cache}" if o.cache else ""
        parts.append(Text(""))
        parts.append(kernel_table(o.kernels, f"{o.compile_id} {o.part} ({o.aot_id}){cache}", buffers=True,
                                  limit=limit, unknown_why=o.unknown_provenance))
        line = Text("  fusion: ", style="bold")
        line.append(f"{f.post_grad_ops} ATen ops in the post-grad graph → {f.kernels} kernels "
                    f"({f.generated_kernels} generated, {f.extern_kernels} extern)")
        if f.extern_ops:
            line.append(f"; extern: {', '.join(f.extern_ops)}", style="dim")
        parts.append(line)
    return Group(*parts)


_PROVENANCE = {
    "inductor": "inductor (the nodes Inductor's provenance tracking states for this launch)",
    "inferred": "inferred (read from the wrapper's comments by an earlier tcinspect; Inductor stated no node mapping)",
    "unknown": "unknown (Inductor stated no node mapping for this launch)",
}


def kernel_detail(out: OutputCode, k: Kernel) -> RenderableType:
    meta = Table(show_header=False, box=None, padding=(0, 2))
    meta.add_column(style="bold")
    meta.add_column()
    meta.add_row("kernel", k.name)
    meta.add_row("kind", k.kind)
    meta.add_row("output", f"{out.compile_id} {out.part} ({out.aot_id})")
    meta.add_row("fused ATen ops", ", ".join(k.aten_ops) or "-")
    meta.add_row("source nodes", ", ".join(k.source_nodes) or "-")
    meta.add_row("provenance", _PROVENANCE.get(k.provenance, k.provenance or "-"))
    if k.provenance == "unknown" and out.unknown_provenance:
        meta.add_row("why", out.unknown_provenance)
    if k.dynamo_nodes:
        meta.add_row("Dynamo nodes", ", ".join(k.dynamo_nodes))
    if k.modules:
        meta.add_row("modules", ", ".join(k.modules))
    meta.add_row("user lines", ", ".join(k.user_lines) or "-")
    if k.frames:
        meta.add_row("frames", "\n".join(f"{f.file}:{f.line} in {f.function}" + (f"  {f.code}" if f.code else "")
                                          for f in k.frames))
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


def query(title: str, matches: list[tuple[OutputCode, int, Kernel]], shares: dict[tuple[str, str, int], float]
          ) -> RenderableType:
    """The kernels one line or one module became (``codegen --line`` / ``--module``)."""
    t = Table(title=f"{len(matches)} kernel{'s' if len(matches) != 1 else ''} from {title}", title_justify="left",
              header_style="bold")
    for col in ("output", "#", "lines", "kernel", "kind", "module", "source nodes"):
        t.add_column(col, overflow="fold")
    if shares:
        t.add_column("GPU time", justify="right")
    for o, i, k in matches:
        nodes = ", ".join(k.source_nodes)
        if k.provenance == "inferred":
            nodes = f"~ {nodes}"
        elif k.provenance == "unknown":
            nodes = "?"
        row = [f"{o.compile_id} {o.part}", str(i), compact_lines(k.user_lines), k.name, k.kind, ", ".join(k.modules), nodes]
        if shares:
            share = shares.get((o.compile_id, o.part, i))
            row.append(f"{share:.1%}" if share is not None else "-")
        t.add_row(*row)
    return t
