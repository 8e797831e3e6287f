"""``shapes --verify-spec``: compile a model file's calls again with a suggested spec and count the compiles."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

from tcinspect.capturing.shapespec import input_names
from tcinspect.errors import UsageError
from tcinspect.report import Report


@dataclass(frozen=True)
class SpecCheck:
    """The calls compiled again with a suggested spec: how many compiles it took."""

    compiles: int  # frames torch compiled (a counting backend's frame count)
    calls: int
    error: str = ""  # what torch raised, e.g. a constraint violation


def verify_spec(path: str, marks: Sequence[tuple[str, int, int, int]], *, backend: str = "eager",
                model_name: str = "model", inputs_name: str = "example_inputs") -> SpecCheck:
    """Run the model file's calls again, each input marked dynamic as ``marks`` (name, dim, min, max) say,
    under a counting backend; the compile count is what the spec achieves."""
    from tcinspect.capturing import _compat, modelfile

    src = modelfile.read(path, model_name, False)
    with modelfile.isolated(src.path, None):
        try:
            loaded = modelfile.load(src, model_name, inputs_name)
            calls = [loaded.example_inputs, *loaded.input_sets]
            names = input_names(loaded.model, len(loaded.example_inputs), follow_wrapped=False)
            counter = _compat.dynamo.compile_counter(backend)
            _compat.dynamo.reset_dynamo()
            try:
                compiled = _compat.dynamo.compile_fn(loaded.model, backend=counter)
                for args in calls:
                    for name, dim, low, high in marks:
                        if name in names:
                            _compat.dynamo.mark_dynamic(args[names.index(name)], dim, low, high)
                    compiled(*args)
            except Exception as exc:  # noqa: BLE001 - the spec's outcome, reported
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                return SpecCheck(_compat.dynamo.frame_count(counter), len(calls), f"{type(exc).__name__}: {first}")
            finally:
                _compat.dynamo.reset_dynamo()
            return SpecCheck(_compat.dynamo.frame_count(counter), len(calls))
        finally:
            modelfile.unload(src)


def verify_suggested(rep: Report, marks: Sequence[tuple[str, int, int, int]], backend: str, model_name: str,
                     inputs_name: str) -> SpecCheck:
    """``shapes --verify-spec``: the model file of ``rep`` run again with ``marks``, the dims of the spec tcinspect
    suggests for it (``analysis.shapes.spec_marks``) marked dynamic: how many times it compiles then."""
    if rep.target.kind != "model" or not rep.target.path:
        raise UsageError("--verify-spec needs a model file (it compiles the file's calls again)",
                         "give the model file, not a saved report or a log")
    print(f"tcinspect: compiling the {rep.target.input_sets + 1} calls again with {len(marks)} dims marked dynamic",
          file=sys.stderr)
    return verify_spec(rep.target.path, marks, backend=backend if ":" not in backend else "eager",
                       model_name=model_name, inputs_name=inputs_name)
