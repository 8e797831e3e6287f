"""tcinspect: inspect every stage of torch.compile (Dynamo, AOTAutograd, Inductor) from one compile.

Importing this package does not import torch; ``capture`` and ``capture_file`` do, when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from tcinspect.report import Report

__all__ = ["Report", "__version__", "assert_compiles", "capture", "capture_file", "load_report"]


def capture(model: Any, *inputs: Any, **kwargs: Any) -> Report:
    """Compile ``model`` once on ``inputs`` and return the report (see tcinspect.capturing.engine.capture)."""
    from tcinspect.capturing.engine import capture as _capture

    return _capture(model, *inputs, **kwargs)


def capture_file(path: Any, **kwargs: Any) -> Report:
    """Capture a model file or script (see tcinspect.capturing.engine.capture_file)."""
    from tcinspect.capturing.engine import capture_file as _capture_file

    return _capture_file(path, **kwargs)


def load_report(path: Any) -> Report:
    """Read a saved report (.yaml/.json) without importing torch."""
    from tcinspect.serialize import load

    return load(path)


def assert_compiles(model: Any, *inputs: Any, **kwargs: Any) -> Report:
    """Fail (AssertionError) unless ``model`` compiles within the budgets; see tcinspect.assertions."""
    from tcinspect.assertions import assert_compiles as _assert_compiles

    return _assert_compiles(model, *inputs, **kwargs)


def __getattr__(name: str) -> Any:
    if name == "Report":
        from tcinspect.report import Report

        return Report
    raise AttributeError(name)
