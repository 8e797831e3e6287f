"""Dynamic shapes: symbols, specializations, shape guards, observed inputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from tcinspect.report.stages import SourceLocation


@dataclass(frozen=True)
class ShapeSymbol:
    """A symbol the compiler made for a size or a value (torch's create_symbol / create_unbacked_symbol)."""

    compile_id: str
    symbol: str  # torch's name: s27 (a size, backed by a hint), u0 (unbacked: .item(), nonzero, ...)
    source: str = ""  # what it stands for, e.g. "L['x'].size()[1]"; "" for an unbacked symbol
    hint: str = ""  # the value it was created with ("" for an unbacked symbol)
    value_range: str = ""  # as torch states it, e.g. "[2, int_oo]"
    unbacked: bool = False
    user_frame: Optional[SourceLocation] = None  # the user line torch was tracing when it made it


@dataclass(frozen=True)
class Specialization:
    """A symbol that became a constant (torch's symbolic_shape_specialization): the dim is static."""

    compile_id: str
    symbol: str
    sources: tuple[str, ...]
    value: str
    reason: str  # torch's words, e.g. "range_refined_to_singleton"
    user_frame: Optional[SourceLocation] = None  # the user line that forced it
    library_frame: Optional[SourceLocation] = None  # the innermost torch frame that made it a constant


@dataclass(frozen=True)
class ShapeGuard:
    """A guard on symbols the compiler added while tracing (torch's guard_added_fast), with its user line."""

    compile_id: str
    expression: str  # e.g. "Eq(s27, 24)", "u0 >= 0"
    user_frame: Optional[SourceLocation] = None
    sources: tuple[str, ...] = ()  # "s27: L['x'].size()[1]" for each symbol of this compile it names
    #: the stage whose code added it, read from torch's stack: dynamo | aot_autograd | inductor | "" (not known)
    stage: str = ""
    #: whether the compile's final guards (those Dynamo installed) state it: "yes", "no", or "" where the compile
    #: logged none. A "no" is a guard torch evaluated (or suppressed, or simplified into another) that no later
    #: call checks: not a specialization
    in_final_guards: str = ""


@dataclass(frozen=True)
class DataDependentError:
    """A guard on an unbacked symbol the compiler could not decide (torch's guard_on_data_dependent_error)."""

    compile_id: str
    expression: str
    unhinted: str = ""
    user_frame: Optional[SourceLocation] = None


@dataclass(frozen=True)
class InputShape:
    """The shape of one tensor input of one model call, as tcinspect observed it."""

    call: int  # 0: example_inputs, k: input_sets[k - 1]
    name: str  # the argument as Dynamo's source names it: "x" for L['x'], "args[0]" for L['args'][0]
    shape: tuple[int, ...] = ()
    label: str = ""  # the parameter's own name where a decorator's *args hides it (e.g. input_ids)


@dataclass(frozen=True)
class Shapes:
    """Dynamic shapes of a run: what torch made symbolic, what it specialized, and the inputs observed."""

    symbols: tuple[ShapeSymbol, ...] = ()
    specializations: tuple[Specialization, ...] = ()
    guards: tuple[ShapeGuard, ...] = ()
    data_dependent: tuple[DataDependentError, ...] = ()
    inputs: tuple[InputShape, ...] = ()
