"""User-supplied compiler pieces: ``--backend module:callable`` and ``--pass module:fn``.

A custom backend is wrapped so that what Dynamo hands it (the graph's example inputs) is logged on
the structured trace beside PyTorch's own records; passes run on each ATen graph between
AOTAutograd and Inductor (or aot_eager), and what each changed is logged the same way. Everything
therefore reaches the report through the one recorder, in-process or in an isolated child.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from tcinspect.capturing import _compat
from tcinspect.errors import UsageError, UserTargetError
from tcinspect.parse.events import BACKEND_INPUTS_ARTIFACT, PASS_ARTIFACT
from tcinspect.parse.inductor import short_dtype
from tcinspect.report import is_user_target

#: Backends a pass can run under, and how.
PASS_BACKENDS = ("inductor", "aot_eager")


def is_target(spec: str) -> bool:
    """Whether a --backend value names a callable (``module:callable``, ``file.py:callable``)."""
    return is_user_target(spec)


def load_callable(spec: str, option: str) -> Callable[..., Any]:
    """Import ``module:callable`` or ``path/to/file.py:callable``; a bad target is one UsageError."""
    where, _, attr = spec.rpartition(":")
    if not where or not attr:
        raise UsageError(f"{option} '{spec}' is not module:callable or file.py:callable",
                         f"write it as {option} my_module:my_function")
    if where.endswith(".py"):
        path = Path(where)
        if not path.is_file():
            raise UsageError(f"{option} '{spec}': no file {where}", "give an existing file.py:callable")
        name = f"_tcinspect_target_{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]}"
        stamp = path.stat().st_mtime_ns
        module = sys.modules.get(name)
        if module is None or getattr(module, "__tcinspect_mtime__", None) != stamp:
            # imported once per version of the file (a backend may keep state, e.g. a counter)
            module_spec = importlib.util.spec_from_file_location(name, path)
            assert module_spec is not None and module_spec.loader is not None
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[name] = module
            try:
                module_spec.loader.exec_module(module)
            except Exception as exc:  # the user's file: one line, not a traceback
                sys.modules.pop(name, None)
                raise UsageError(f"{option} '{spec}': importing {where} raised {type(exc).__name__}: {exc}",
                                 f"fix {where} (run `python {where}` to see the error)") from exc
            module.__tcinspect_mtime__ = stamp  # type: ignore[attr-defined]  # tcinspect's own mark on the module
    else:
        sys.path.insert(0, ".")  # `module:fn` from the directory tcinspect runs in, as `python -m` would
        try:
            module = importlib.import_module(where)
        except Exception as exc:
            raise UsageError(f"cannot import {option} '{spec}': {type(exc).__name__}: {exc}",
                             "check the module name (module:callable), or give file.py:callable") from exc
        finally:
            sys.path.remove(".")
    try:
        fn = getattr(module, attr)
    except AttributeError:
        raise UsageError(f"{option} '{spec}': {where} has no attribute '{attr}'",
                         f"define {attr} in {where}, or name another callable") from None
    if not callable(fn):
        raise UsageError(f"{option} '{spec}': {attr} is a {type(fn).__name__}, not callable",
                         "name a function (for --backend: fn(gm, example_inputs); for --pass: fn(gm) -> gm)")
    return fn


def check_backend_name(name: str) -> None:
    """A plain --backend must be a name torch.compile knows (after the model file registered its own)."""
    if name == "inductor":
        # torch.compile takes its default by name without the registry (torch/__init__.py, 2.11-2.15); listing the
        # registry imports every backend module, which the user's own torch.compile never does
        return
    if name not in _compat.dynamo.registered_backends():
        known = ", ".join(_compat.dynamo.registered_backends(False))
        raise UsageError(f"unknown backend '{name}' (registered: {known})",
                         "use a registered name, or give --backend module:callable / file.py:callable")


def describe_input(value: Any) -> str:
    """An example input as "f32[8, 16]" (a tensor), "s0" (a SymInt) or its type name."""
    import torch

    if isinstance(value, torch.Tensor):
        return f"{short_dtype(value.dtype)}[{', '.join(str(s) for s in value.shape)}]"
    if isinstance(value, (int, float, bool, torch.SymInt, torch.SymFloat)):
        return f"{type(value).__name__} {value}"
    return type(value).__name__


def recording_backend(spec: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """The user's backend, logging the example inputs Dynamo hands it first."""

    def backend(gm: Any, example_inputs: Sequence[Any]) -> Any:
        _compat.trace.log_artifact(BACKEND_INPUTS_ARTIFACT, json.dumps([describe_input(v) for v in example_inputs]))
        return fn(gm, example_inputs)

    backend.__name__ = f"tcinspect[{spec}]"
    return backend


@dataclass(frozen=True)
class NodeText:
    """A graph node as the pass report shows it."""

    name: str
    text: str
    inputs: tuple[str, ...]


def snapshot(gm: Any) -> list[NodeText]:
    """The graph's nodes as text: ``name = target(args)``."""
    out = []
    for n in gm.graph.nodes:
        target = n.target if isinstance(n.target, str) else getattr(n.target, "__name__", None) or str(n.target)
        if n.op == "call_function":
            target = str(n.target) if "OpOverload" in type(n.target).__name__ else target
        args = ", ".join(str(a) for a in n.args)
        kwargs = ", ".join(f"{k}={v}" for k, v in n.kwargs.items())
        text = n.name if n.op == "placeholder" else f"{n.name} = {target}({', '.join(x for x in (args, kwargs) if x)})"
        out.append(NodeText(n.name, text, tuple(i.name for i in n.all_input_nodes)))
    return out


def graph_changes(before: Sequence[NodeText], after: Sequence[NodeText]) -> list[tuple[str, str, str]]:
    """(change, before, after) for every node removed, added, replaced or changed, in graph order.

    A removed node counts as *replaced* by an added one when a node present in both graphs read the
    removed node before and reads the added node after (``replace_all_uses_with``); a node kept under
    its name whose computation differs is *changed*.
    """
    old = {n.name: n for n in before}
    new = {n.name: n for n in after}
    removed = [n for n in before if n.name not in new]
    added = [n for n in after if n.name not in old]
    removed_names = {n.name for n in removed}
    added_names = {n.name for n in added}
    pairs: dict[str, str] = {}
    for n in after:
        if n.name not in old:
            continue
        was, now = set(old[n.name].inputs), set(n.inputs)
        for r in sorted(was - now):
            for a in sorted(now - was):
                if r in removed_names and a in added_names and r not in pairs and a not in pairs.values():
                    pairs[r] = a
    changes: list[tuple[str, str, str]] = []
    for n in removed:
        if n.name in pairs:
            changes.append(("replaced", n.text, new[pairs[n.name]].text))
        else:
            changes.append(("removed", n.text, ""))
    taken = set(pairs.values())
    changes.extend(("added", "", n.text) for n in added if n.name not in taken)
    # changed in place: same name, different computation
    changes.extend(("changed", old[n.name].text, n.text) for n in after
                   if n.name in old and old[n.name].text != n.text and n.name not in removed_names)
    return changes


def pass_pipeline(passes: Sequence[tuple[str, Callable[..., Any]]],
                  for_inductor: bool = False) -> Callable[[Any, str], Any]:
    """``(gm, part) -> gm`` applying each pass, checking it, and logging what it changed.

    ``for_inductor``: the graph then goes to Inductor, which has no lowering for the ops it decomposes before
    AOTAutograd (aten.silu, aten.gelu, aten.hardsigmoid, ...). An op of those that a pass puts back is named in that
    pass's record (``decomposed``), and after the last pass each is decomposed with Inductor's own table
    (``_compat.backends.decompose_for_inductor``), as Inductor's pattern replacements are; Inductor would fail on it
    otherwise.
    """

    def apply(gm: Any, part: str) -> Any:
        unlowerable = _compat.backends.unlowerable_ops(gm) if for_inductor else []
        for spec, fn in passes:
            before = snapshot(gm)
            record: dict[str, Any] = {"name": spec, "graph": part, "nodes_before": len(before)}
            try:
                out = fn(gm)
            except Exception as exc:  # reported as the pass's fault, with the report so far
                record.update(nodes_after=len(before), error=f"raised {type(exc).__name__}: {exc}")
                _compat.trace.log_artifact(PASS_ARTIFACT, json.dumps(record))
                raise UserTargetError(f"--pass '{spec}' raised {type(exc).__name__}: {exc}",
                                      "fix the pass (--debug shows the traceback)") from exc
            if not _compat.backends.is_graph_module(out):
                record.update(nodes_after=len(before), error=f"returned {type(out).__name__}, not a GraphModule")
                _compat.trace.log_artifact(PASS_ARTIFACT, json.dumps(record))
                raise UserTargetError(f"--pass '{spec}' returned {type(out).__name__}, not a GraphModule",
                                      "return the GraphModule (call gm.recompile() after editing gm.graph)")
            lint = "ok"
            try:
                out.graph.lint()
            except Exception as exc:  # noqa: BLE001
                lint = f"{type(exc).__name__}: {exc}".splitlines()[0]
            after = snapshot(out)
            record.update(nodes_after=len(after), lint=lint,
                          changes=[list(c) for c in graph_changes(before, after)])
            if for_inductor and lint == "ok":
                added = [op for op in _compat.backends.unlowerable_ops(out) if op not in unlowerable]
                if added:
                    record["decomposed"] = added
                    unlowerable.extend(added)
            _compat.trace.log_artifact(PASS_ARTIFACT, json.dumps(record))
            if lint != "ok":
                raise UserTargetError(f"--pass '{spec}' left a graph that fails graph.lint(): {lint}",
                                      "fix the pass (erase nodes only after replace_all_uses_with)")
            out.recompile()
            gm = out
        return _compat.backends.decompose_for_inductor(gm, unlowerable) if unlowerable else gm

    return apply


def build_backend(backend: str, passes: Sequence[str]) -> tuple[Any, Optional[str]]:
    """What to pass as torch.compile's ``backend=``, and the backend's display name if custom.

    Raises UsageError for an unimportable target or a --pass under a backend that has no ATen stage.
    """
    pipeline = pass_pipeline([(spec, load_callable(spec, "--pass")) for spec in passes],
                             for_inductor=backend == "inductor") if passes else None
    if is_target(backend):
        if pipeline is not None:
            raise UsageError(f"--pass runs before Inductor, but --backend '{backend}' is a custom backend",
                             "apply the pass inside your backend, or use --backend inductor or aot_eager")
        return recording_backend(backend, load_callable(backend, "--backend")), backend
    check_backend_name(backend)
    if pipeline is None:
        return backend, None
    if backend == "inductor":
        return _compat.backends.inductor_with_inner(pipeline), None
    if backend == "aot_eager":
        return _compat.backends.aot_eager_with_inner(pipeline), None
    raise UsageError(f"--pass needs an ATen graph, and backend '{backend}' makes none",
                     f"use --backend {' or '.join(PASS_BACKENDS)} with --pass")
