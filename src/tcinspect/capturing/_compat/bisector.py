"""torch's CompilerBisector, run in the capture's own process: where a verify mismatch's compile first departs.

Touches torch._inductor.compiler_bisector (CompilerBisector.do_bisect, its backends and subsystems, ConfigChange) and
the Inductor test config that keeps a custom backend for the bisector's inductor runs. Supported: torch 2.11 to 2.15.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
from collections.abc import Callable
from typing import Any, Optional


@dataclasses.dataclass(frozen=True)
class Bisection:
    """torch's CompilerBisector's answer (its BisectionResult), with what the subsystem it names is."""

    backend: str
    subsystem: str = ""
    bisect_number: Optional[int] = None
    debug_info: str = ""
    #: for a subsystem that is one config change: "torch._inductor.config.emulate_precision_casts=True"
    config_change: str = ""


def compiler_bisect(fn: Callable[[], bool], keep_custom_backend: bool = False) -> Optional[Bisection]:
    """torch._inductor.compiler_bisector.CompilerBisector.do_bisect(fn) in this process (2.11-2.15): fn compiles
    with torch.compile and says whether the result matches. The bisector
    runs eager, aot_eager, aot_eager_decomp_partition and inductor in turn (replacing torch.compile's backend),
    then, in the first that fails, disables its subsystems one by one and bisects the applications of the one that
    fixes it. ``keep_custom_backend``: a callable backend stays for its inductor runs (where torch has the option),
    so a user's passes still run. What the bisector prints is kept off stdout. None: no backend failed."""
    from torch._inductor import config as inductor_config
    from torch._inductor.compiler_bisector import BACKENDS, CompilerBisector, ConfigChange

    patch: dict[str, Any] = {}
    if keep_custom_backend and hasattr(inductor_config.test_configs, "bisect_keep_custom_backend_for_inductor"):
        patch["test_configs.bisect_keep_custom_backend_for_inductor"] = True
    printed = io.StringIO()
    with inductor_config.patch(patch), contextlib.redirect_stdout(printed):
        try:
            result = CompilerBisector.do_bisect(fn)
        finally:
            import gc

            gc.collect()  # do_bisect's cleanup runs (and prints) when its local object is collected
    if result is None:
        return None
    change = ""
    for s in BACKENDS.get(result.backend, []):
        if s.name == result.subsystem and isinstance(s, ConfigChange):
            # the config each backend applies it to (torch/__init__.py's inductor wrapper, debugging.py's
            # aot_eager_decomp_partition: functorch's config)
            module = {"inductor": "torch._inductor.config",
                      "aot_eager_decomp_partition": "torch._functorch.config"}.get(s.config_name, s.config_name)
            change = f"{module}.{s.config_field}={s.config_value!r}"
    return Bisection(result.backend, result.subsystem or "", result.bisect_number,
                     str(result.debug_info or ""), change)
