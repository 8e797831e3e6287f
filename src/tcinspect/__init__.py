"""tcinspect: inspect every stage of torch.compile (Dynamo, AOTAutograd, Inductor) from one compile.

Importing this package does not import torch; ``capture``, ``capture_file`` and ``obtain`` (when it
compiles) do, when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tcinspect import display as _display
from tcinspect import notebook as _notebook
from tcinspect._version import __version__

if TYPE_CHECKING:
    from tcinspect.report import (
        BenchRequest,
        CompileOptions,
        ExportRequest,
        Failure,
        Options,
        Report,
        VerifyRequest,
    )
    from tcinspect.request import Request

__all__ = [
    "BenchRequest",
    "CompileOptions",
    "ExportRequest",
    "Failure",
    "Options",
    "Report",
    "Request",
    "VerifyRequest",
    "__version__",
    "assert_compiles",
    "capture",
    "capture_file",
    "load_report",
    "obtain",
]

#: The data classes of the public API, imported from their module on first use (no torch import).
_LAZY = {"BenchRequest": "report", "CompileOptions": "report", "ExportRequest": "report", "Failure": "report",
         "Options": "report", "Report": "report", "VerifyRequest": "report", "Request": "request"}


_display.install(_notebook)  # how a Report shows itself in a notebook: the data model renders nothing itself


def capture(model: Any, *inputs: Any, **kwargs: Any) -> Report:
    """Compile ``model`` once on ``inputs`` and return the report; the options are the Request's parts
    (``compile=CompileOptions(...)``, ``verify=``, ``export=``, ``bench=``, ...): see
    tcinspect.capturing.engine.capture."""
    from tcinspect.capturing.engine import capture as _capture

    return _capture(model, *inputs, **kwargs)


def capture_file(path: Any, **kwargs: Any) -> Report:
    """Capture a model file or script: ``path`` a Request, or a path with the Request's fields as keyword
    arguments (see tcinspect.capturing.engine.capture_file)."""
    from tcinspect.capturing.engine import capture_file as _capture_file

    return _capture_file(path, **kwargs)


def obtain(request: Request) -> Report:
    """The report a command would show for ``request``: a saved report, a TORCH_TRACE log, the cached report
    of an unchanged model file, or a new capture (see tcinspect.request.obtain)."""
    from tcinspect.request import obtain as _obtain

    return _obtain(request)


def load_report(path: Any) -> Report:
    """Read a saved report (.yaml/.json) without importing torch."""
    from tcinspect.serialize import load

    return load(path)


def assert_compiles(model: Any, *inputs: Any, **kwargs: Any) -> Report:
    """Fail (AssertionError) unless ``model`` compiles within the budgets (``compile=CompileOptions(...)``, default
    the eager backend); see tcinspect.assertions."""
    from tcinspect.assertions import assert_compiles as _assert_compiles

    return _assert_compiles(model, *inputs, **kwargs)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"tcinspect.{_LAZY[name]}"), name)
    raise AttributeError(name)
