"""``tcinspect export``: torch.export in each mode, and AOTInductor."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from tcinspect.report.stages import Graph, SourceLocation


@dataclass(frozen=True)
class ExportSignature:
    """An exported program's graph signature."""

    user_inputs: tuple[str, ...] = ()
    parameters: tuple[str, ...] = ()  # "placeholder <- parameter name"
    buffers: tuple[str, ...] = ()
    constants: tuple[str, ...] = ()
    user_outputs: tuple[str, ...] = ()


@dataclass(frozen=True)
class AotiRun:
    """AOTInductor compile-and-package of an exported program, checked against eager."""

    ok: bool
    package: str = ""  # the .pt2 file name
    max_abs_error: float = 0.0
    error: str = ""


@dataclass(frozen=True)
class ExportRun:
    """One ``torch.export.export`` of the model, strict or non-strict."""

    mode: str  # strict | non-strict
    ok: bool
    error: str = ""  # one line: the exception and its message
    user_frame: Optional[SourceLocation] = None  # the user's line the failure points at
    graph: Optional[Graph] = None  # the exported graph (ATen)
    signature: Optional[ExportSignature] = None
    dynamic_shapes: str = ""  # the dynamic_shapes spec passed, as text
    aoti: Optional[AotiRun] = None
