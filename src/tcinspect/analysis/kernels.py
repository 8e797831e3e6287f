"""The kernels a `codegen` selection names: by kernel name, by the user's FILE:LINE, or by module (pure)."""

from __future__ import annotations

import difflib
import fnmatch

from tcinspect.report import Kernel, OutputCode, Report


def all_kernels(rep: Report) -> list[tuple[OutputCode, Kernel]]:
    """Every kernel of every output, in compile and launch order."""
    return [(o, k) for o in rep.stages.inductor.outputs for k in o.kernels]


def find_kernels(rep: Report, pattern: str) -> list[tuple[OutputCode, Kernel]]:
    """Kernels named ``pattern``: an exact name first, else a glob, else a substring."""
    kernels = all_kernels(rep)
    exact = [(o, k) for o, k in kernels if k.name == pattern]
    if exact:
        return exact
    if any(ch in pattern for ch in "*?["):
        return [(o, k) for o, k in kernels if fnmatch.fnmatchcase(k.name, pattern)]
    return [(o, k) for o, k in kernels if pattern in k.name]


def nearest_kernel_names(rep: Report, pattern: str, n: int = 5) -> list[str]:
    names = list(dict.fromkeys(k.name for _, k in all_kernels(rep)))
    close = difflib.get_close_matches(pattern, names, n=n, cutoff=0.3)
    return close or names[:n]


def _line_spec(spec: str) -> tuple[str, int]:
    path, sep, line = spec.rpartition(":")
    if not sep or not path or not line.isdigit():
        raise ValueError(spec)
    return path, int(line)


def _same_file(reported: str, asked: str) -> bool:
    r, a = reported.replace("\\", "/"), asked.replace("\\", "/").lstrip("./")
    return r == a or r.endswith("/" + a)


def kernels_of_line(rep: Report, spec: str) -> list[tuple[OutputCode, int, Kernel]]:
    """Every kernel whose provenance names FILE:LINE in any frame (the user's line or a library line).

    FILE may be a basename or any trailing part of the path. Raises ValueError for a malformed spec.
    """
    path, line = _line_spec(spec)
    out = []
    for o in rep.stages.inductor.outputs:
        for i, k in enumerate(o.kernels):
            frames = [(f.file, f.line) for f in k.frames] + [_line_spec(x) for x in k.user_lines if ":" in x]
            if any(ln == line and _same_file(f, path) for f, ln in frames):
                out.append((o, i, k))
    return out


def kernels_of_module(rep: Report, path: str) -> list[tuple[OutputCode, int, Kernel]]:
    """Every kernel made from nodes of module PATH or a submodule of it (``model.`` in front is optional)."""
    names = {path.strip(".")}
    first, _, rest = path.partition(".")
    if first in ("model", rep.target.model_name) and rest:
        names.add(rest)
    out = []
    for o in rep.stages.inductor.outputs:
        for i, k in enumerate(o.kernels):
            if any(m == n or m.startswith(n + ".") for m in k.modules for n in names):
                out.append((o, i, k))
    return out
