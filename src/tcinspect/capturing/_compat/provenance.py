"""Inductor's provenance tracking, and the module each graph node came from.

Inductor's provenance tracking (torch._inductor.config.trace.provenance_tracking_level, 2.11-2.15)
logs two artifacts after each graph's output code: ``inductor_provenance_tracking_node_mappings``
(kernel "name:handle" -> post-grad nodes as ``cppCodeToPost``, post-grad -> pre-grad nodes) and
``inductor_provenance_tracking_kernel_stack_traces`` (kernel -> the stack traces of its nodes).
The wrapper writes "# [Provenance debug handles] name:handle" above each launch.

Two gaps in 2.11-2.15, read from torch/_inductor/debug.py and compile_fx.py:
- the node mapping is built only while ``debug._pre_grad_graph_id`` is set, i.e. inside
  compile_fx's ``reset_provenance_globals()``; a backward graph compiled lazily (at the first
  ``.backward()``) gets ``{"version": 2.0}`` alone, though Inductor recorded the kernel -> node
  lists in ``debug._inductor_triton_kernel_to_post_grad_node_info`` all the same;
- outside that context the two module-level dicts are never reset, so each later backward's
  stack-trace artifact also carries the kernels of every earlier backward (keys can collide:
  "extern_kernels.mm:2" in two graphs).
provenance_snapshot() reads the live lists when the stack-trace artifact is logged and then
empties both dicts, so every graph's artifacts hold that graph's kernels only.

A node's module is the innermost entry of its ``nn_module_stack`` (keyed by each module's ``id()``), named in the
user's root model: for the kernels' nodes (provenance_snapshot, from compile_fx's frame) and for the forward graph's
nodes (saved_modules, from AOTAutograd's frame). Tracking is turned on without changing the user's cache entries
(provenance_tracking: torch._inductor.codecache, AOTAutogradCache).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import Any, Optional

import torch

from tcinspect.capturing._compat import caches

_MODULE_PATH = re.compile(r"_modules\[['\"]([^'\"]+)['\"]\]|\[['\"]?([^'\"\]]+)['\"]?\]")


@contextlib.contextmanager
def provenance_tracking(written: Optional[list[str]] = None) -> Iterator[None]:
    """Turn Inductor's provenance tracking on (level 1) for the duration; restore level and state after.

    The level is part of the FX graph cache key (codecache.FxGraphHashDetails sets
    ``provenance_tracking_level`` from the config, 2.11-2.15; AOTAutogradCacheDetails inherits it),
    because a tracked entry holds the node mappings and its output code the "[Provenance debug
    handles]" comments. A compile that turned tracking on would look up, and fill, entries of its own
    that the user's runs never read. So, unless the user already tracks at level 1:

    - the key keeps the user's own level (set back on each FxGraphHashDetails after its __init__):
      every look-up is the one the user's run makes, so hit, miss and bypass, and the time a hit
      takes, are the user's;
    - nothing compiled here is saved in the FX graph or AOTAutograd cache (FxGraphCache._save_graph
      and AOTAutogradCache.save do nothing, local and remote): its content is not what the user's run
      would store under that key;
    - the output code modules a miss wrote (tracked code, under the hash of its text) are listed in
      ``written`` by the recorder and removed afterwards (``remove_tracked_code``).

    Kernel sources compiled on a miss do not depend on the level and are left, as the user's run leaves them.
    """
    from torch._inductor import config as inductor_config
    from torch._inductor import debug as inductor_debug

    old_level = inductor_config.trace.provenance_tracking_level
    saved = {name: getattr(inductor_debug, name, None) for name in _PROVENANCE_STATE}
    for name, value in saved.items():
        if isinstance(value, dict):
            setattr(inductor_debug, name, {})
    inductor_config.trace.provenance_tracking_level = 1
    with contextlib.ExitStack() as stack:
        if old_level != 1:
            stack.enter_context(_user_cache_key(old_level))
        try:
            yield
        finally:
            inductor_config.trace.provenance_tracking_level = old_level
            if old_level != 1 and written:
                remove_tracked_code(written)
            for name, value in saved.items():
                if value is not None:
                    setattr(inductor_debug, name, value)


@contextlib.contextmanager
def _user_cache_key(level: int) -> Iterator[None]:
    """Look up the user's cache entries (their provenance level in the key) and save none (2.11-2.15)."""
    from torch._functorch._aot_autograd import autograd_cache
    from torch._inductor import codecache

    details = codecache.FxGraphHashDetails
    init = details.__init__
    save_graph = codecache.FxGraphCache.__dict__["_save_graph"]
    save_aot = autograd_cache.AOTAutogradCache.__dict__["save"]

    def keyed_as_user(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        if hasattr(self, "provenance_tracking_level"):
            self.provenance_tracking_level = level

    def no_save(*args: Any, **kwargs: Any) -> None:
        return None

    details.__init__ = keyed_as_user  # type: ignore[method-assign]
    codecache.FxGraphCache._save_graph = staticmethod(no_save)  # type: ignore[method-assign,assignment]
    autograd_cache.AOTAutogradCache.save = staticmethod(no_save)  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        details.__init__ = init  # type: ignore[method-assign]
        codecache.FxGraphCache._save_graph = save_graph  # type: ignore[method-assign]
        autograd_cache.AOTAutogradCache.save = save_aot  # type: ignore[method-assign]


#: the comment Inductor writes above each launch in tracked output code (codegen/wrapper.py, 2.11-2.15)
TRACKED_CODE_MARK = "[Provenance debug handles]"


def remove_tracked_code(paths: Sequence[str]) -> None:
    """Remove the output code modules a tracked miss wrote into Inductor's cache directory.

    Only files under the cache directory whose text carries the tracking comments go: untracked code
    loaded from the user's own entries never does.
    """
    root = os.path.realpath(caches.inductor_cache_dir()) + os.sep
    for path in dict.fromkeys(paths):
        real = os.path.realpath(path)
        if not real.startswith(root) or not real.endswith(".py"):
            continue
        try:
            with open(real, encoding="utf-8", errors="replace") as f:
                tracked = TRACKED_CODE_MARK in f.read()
            if tracked:
                os.unlink(real)
                for suffix in ("c", "o"):  # no bytecode is written for them (PyCodeCache), but be sure
                    with contextlib.suppress(OSError):
                        os.unlink(real + suffix)
        except OSError:
            pass


#: torch/_inductor/debug.py's module-level provenance dicts (2.11-2.15)
_PROVENANCE_STATE = ("_inductor_triton_kernel_to_post_grad_node_info", "_inductor_kernel_stack_trace")


def module_path(nn_module_stack: Any, names: Optional[dict[str, str]] = None) -> str:
    """The innermost module of a node's ``nn_module_stack`` as a dotted path.

    The stack's keys are ``str(id(module))`` (torch/_dynamo/variables/nn_module.py, 2.11-2.15): when
    ``names`` maps those ids to names in the user's root model (``named_modules()``), that name is
    used, so a module compiled after a graph break still reads ``m.transformer.h.0``. Otherwise
    Dynamo's path relative to the compiled frame, e.g. ``L['self'].transformer.h.0.attn`` or
    ``L['self']._modules['0']``, with the root (``L['self']``, ``L['fn']``) dropped.
    """
    if not nn_module_stack:
        return ""
    try:
        key, entry = list(nn_module_stack.items())[-1]
        path = entry[0]
    except (AttributeError, IndexError, TypeError, KeyError):
        return ""
    if names and str(key) in names:
        return names[str(key)]
    path = str(path)
    m = re.match(r"^(?:L|G)\[['\"][^'\"]+['\"]\]", path)
    rest = path[m.end():] if m else path
    rest = _MODULE_PATH.sub(lambda x: "." + (x.group(1) or x.group(2)), rest)
    return rest.strip(".")


def provenance_snapshot(names: Optional[dict[str, str]] = None) -> tuple[str, dict[str, Any]]:
    """What Inductor knows of the graph whose provenance artifacts are being logged right now.

    Called from the trace handler while ``inductor_provenance_tracking_kernel_stack_traces`` is
    logged. Returns ("compile", {"kernels": {"name:handle": [post-grad nodes]}, "modules":
    {post-grad node: module path}}) when Inductor has just generated the code (the caller is
    ``codegen_and_compile`` in compile_fx.py, whose local ``gm`` is the post-grad graph, 2.11-2.15),
    ("cache_hit", {}) when the code came from the FX graph cache (``cache_hit_post_compile``), and
    ("", {}) otherwise. Empties Inductor's two module-level provenance dicts afterwards.
    """
    from torch._inductor import debug as inductor_debug

    where, data = "", {}
    frame: Optional[FrameType] = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_name
        if name == "cache_hit_post_compile":
            where = "cache_hit"
            break
        if name == "codegen_and_compile" and "gm" in frame.f_locals:
            gm = frame.f_locals["gm"]
            modules: dict[str, str] = {}
            for node in getattr(getattr(gm, "graph", None), "nodes", ()):
                stack = node.meta.get("nn_module_stack") or node.meta.get("fwd_nn_module_stack")
                path = module_path(stack, names)
                if path or stack:
                    modules[node.name] = path
            live = getattr(inductor_debug, "_inductor_triton_kernel_to_post_grad_node_info", None) or {}
            where, data = "compile", {"kernels": {k: list(v) for k, v in live.items()}, "modules": modules}
            break
        frame = frame.f_back
    del frame
    for state in _PROVENANCE_STATE:
        value = getattr(inductor_debug, state, None)
        if isinstance(value, dict):
            value.clear()
    return where, data


def module_names(model: Any) -> dict[str, str]:
    """``str(id(module))`` -> qualified name for every submodule of an ``nn.Module`` (else empty)."""
    if not isinstance(model, torch.nn.Module):
        return {}
    return {str(id(m)): name for name, m in model.named_modules()}


def saved_modules(names: Optional[dict[str, str]] = None) -> tuple[dict[str, str], str]:
    """Each node of the forward graph whose ``aot_forward_graph`` artifact is being logged right now, with
    its module path (from ``nn_module_stack``), and a note when there is no graph to read.

    Called from the trace handler while the artifact is logged. On a fresh compile the caller is
    ``_log_fw_bw_graphs(fw_module, ...)`` in torch/_functorch/_aot_autograd/graph_compile.py (2.11-2.15);
    any frame holding a GraphModule named ``fw_module`` is taken. An AOTAutograd cache hit logs the stored
    text from aot_autograd_result.py, with no graph module: the modules are not known then.
    """
    frame: Optional[FrameType] = sys._getframe(1)
    try:
        while frame is not None:
            gm = frame.f_locals.get("fw_module") if frame.f_code.co_name != "<module>" else None
            if isinstance(gm, torch.fx.GraphModule):
                modules: dict[str, str] = {}
                for node in gm.graph.nodes:
                    stack = node.meta.get("nn_module_stack") or node.meta.get("fwd_nn_module_stack")
                    path = module_path(stack, names)
                    if path:
                        modules[node.name] = path
                return modules, ""
            frame = frame.f_back
    finally:
        del frame
    return {}, "module paths unknown: the graph came from the AOTAutograd cache (run with --fresh to see them)"
