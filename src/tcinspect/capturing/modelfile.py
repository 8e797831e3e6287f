"""The model-file contract: load ``model`` / ``example_inputs`` / ``example_kwargs`` / ``input_sets`` from a file.

A file that defines no ``model`` at module level (found statically, without running it, the way
Python binds names on import: not inside functions, classes or ``if __name__ == "__main__":``)
is a script: it runs as ``__main__`` and everything it compiles is recorded.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import os
import sys
import traceback
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from tcinspect.errors import DeviceError, ModelExited, ModelFileError, ModelRaisedError


@dataclass
class ModelSource:
    """A model file read and checked, not yet run."""

    path: Path
    text: str
    sha256: str
    code: types.CodeType
    is_script: bool
    #: `device = "..."` as a top-level constant, read without running the file ("" if none).
    device: str = ""


@dataclass(frozen=True)
class Call:
    """One call of the model: its positional and keyword arguments."""

    args: tuple = ()
    kwargs: dict[str, Any] = field(default_factory=dict)

    def __call__(self, fn: Callable[..., Any]) -> Any:
        return fn(*self.args, **self.kwargs)

    def values(self) -> list[Any]:
        """Every argument, positional first, then the keywords in order."""
        return [*self.args, *self.kwargs.values()]

    def named(self) -> list[tuple[str, Any]]:
        """Every argument with its name: ``input[0]`` for a positional one, ``input[labels]`` for a keyword."""
        return [(f"input[{i}]", v) for i, v in enumerate(self.args)] + \
            [(f"input[{k}]", v) for k, v in self.kwargs.items()]


def as_call(value: Any) -> Call:
    """A tuple of positional arguments (a dict: keyword arguments), or a Call already, as a Call."""
    if isinstance(value, Call):
        return value
    return Call((), dict(value)) if isinstance(value, dict) else Call(tuple(value))


@dataclass
class LoadedModel:
    model: Callable[..., Any]
    example_inputs: tuple
    input_sets: list[Any] = field(default_factory=list)  # Calls, or tuples of positional arguments
    #: The device the file asks for (its optional `device` name): the default for --device.
    device: str = ""
    #: The keyword arguments of the first call (the file's optional `example_kwargs`).
    example_kwargs: dict[str, Any] = field(default_factory=dict)

    def calls(self) -> list[Call]:
        """The calls made, in order: the example first, then each input set."""
        return [Call(self.example_inputs, self.example_kwargs), *(as_call(s) for s in self.input_sets)]


def read(path: str | os.PathLike, model_name: str = "model", as_script: Optional[bool] = None) -> ModelSource:
    """Read and compile a model file; decide statically whether it is a model file or a script.

    ``as_script`` True or False forces the choice (``--script``, ``--model NAME``); None decides
    by whether importing the file binds ``model_name``.
    """
    p = Path(path)
    if not p.exists():
        raise ModelFileError(f"model file '{p}' does not exist", "check the path")
    if p.is_dir():
        raise ModelFileError(f"'{p}' is a directory, not a model file",
                             "give the path of a .py file that defines `model` and `example_inputs`")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ModelFileError(f"cannot read '{p}': {exc.strerror}", "check the file's permissions") from None
    return of_bytes(p, data, model_name, as_script)


def of_bytes(p: Path, data: bytes, model_name: str = "model", as_script: Optional[bool] = None) -> ModelSource:
    """``read``'s checks on a file's bytes already read (a capture's child gets them from its parent, so that
    the file is read once per run and every process compiles the same text)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ModelFileError(f"'{p}' is not UTF-8 text (bad byte at offset {exc.start})",
                             "give a Python source file saved as UTF-8") from None
    try:
        code = compile(text, str(p), "exec", dont_inherit=True)
        tree = ast.parse(text, str(p))
    except SyntaxError as exc:
        raise ModelFileError(f"{p}:{exc.lineno}: syntax error: {exc.msg}",
                             f"fix the model file (`python -m py_compile {p}` shows the same)") from None
    except ValueError as exc:  # e.g. null bytes
        raise ModelFileError(f"'{p}' is not Python source ({exc})", "give a .py model file") from None
    return ModelSource(path=p, text=text, sha256=hashlib.sha256(data).hexdigest(), code=code,
                       is_script=as_script if as_script is not None else model_name not in import_time_names(tree.body),
                       device=_constant(tree, "device"))


def _constant(tree: ast.Module, name: str) -> str:
    """The value of a top-level `name = "literal"` assignment, or ""."""
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)):
            return node.value.value
    return ""


def _is_main_guard(test: ast.expr) -> Optional[bool]:
    """True for ``__name__ == "__main__"``, False for ``!=``, None for any other test."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq))):
        return None
    sides = [test.left, test.comparators[0]]
    names = [x for x in sides if isinstance(x, ast.Name) and x.id == "__name__"]
    mains = [x for x in sides if isinstance(x, ast.Constant) and x.value == "__main__"]
    if not (names and mains):
        return None
    return isinstance(test.ops[0], ast.Eq)


#: Blocks whose bodies run when the module is imported (ast.TryStar: Python 3.11+).
_BLOCKS = (ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith) + \
    ((ast.TryStar,) if hasattr(ast, "TryStar") else ())


def import_time_names(body: list[ast.stmt]) -> set[str]:
    """Names a module binds when it is imported (not run as ``__main__``).

    Top-level statements and the blocks that run with them (if, for, while, try, with) count;
    function and class bodies do not, nor the body of ``if __name__ == "__main__":``.
    """
    names: set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for sub in ast.walk(t):
                    if isinstance(sub, ast.Name):
                        names.add(sub.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.If):
            main = _is_main_guard(node.test)
            if main is not True:  # `if __name__ == "__main__":` does not run on import; its else does
                names |= import_time_names(node.body)
            if main is not False:
                names |= import_time_names(node.orelse)
        elif isinstance(node, _BLOCKS):
            if isinstance(node, (ast.For, ast.AsyncFor)):
                names |= {sub.id for sub in ast.walk(node.target) if isinstance(sub, ast.Name)}
            for block in ("body", "orelse", "finalbody"):
                names |= import_time_names(getattr(node, block, []) or [])
            for handler in getattr(node, "handlers", []) or []:
                names |= import_time_names(handler.body)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, *_BLOCKS)):
            # `model := ...` in a top-level expression binds a module name too
            names |= {sub.target.id for sub in ast.walk(node) if isinstance(sub, ast.NamedExpr)}
    return names


def user_frame(exc: BaseException, path: Path) -> str:
    """'file:line' of the deepest traceback frame inside the model file, or ''."""
    target = os.path.realpath(path)
    where = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if os.path.realpath(frame.filename) == target:
            where = f"{path.name}:{frame.lineno}"
    return where


def raised_at_def_line(exc: BaseException, path: Path) -> bool:
    """Whether the deepest frame in the model file points at its function's first line, not a statement."""
    target = os.path.realpath(path)
    last = None
    tb = exc.__traceback__
    while tb is not None:
        if os.path.realpath(tb.tb_frame.f_code.co_filename) == target:
            last = tb
        tb = tb.tb_next
    return last is not None and last.tb_lineno == last.tb_frame.f_code.co_firstlineno


def describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def execute(src: ModelSource, run_name: str) -> dict[str, Any]:
    """Run the file's code as module ``run_name``; returns its namespace."""
    module = types.ModuleType(run_name)
    module.__file__ = str(src.path)
    namespace = module.__dict__
    namespace["__builtins__"] = __builtins__
    if run_name != "__main__":
        sys.modules[run_name] = module
    exec(src.code, namespace)
    return namespace


def module_name(src: ModelSource) -> str:
    """The name a model file is imported under (not ``__main__``: its guard blocks stay unrun)."""
    return "tcinspect_model_" + src.sha256[:12]


def unload(src: ModelSource) -> None:
    sys.modules.pop(module_name(src), None)


@contextlib.contextmanager
def isolated(path: Optional[Path], argv: Optional[list[str]]) -> Iterator[None]:
    """Restore cwd, sys.argv and sys.path after user code ran (it may change any of them), and forget
    the modules it imported from beside the model file: a later capture in this process (a library
    user's, a test's) imports them again, as edited since, and never compiles yesterday's code."""
    cwd = os.getcwd()
    old_argv = list(sys.argv)
    old_path = list(sys.path)
    home = str(path.resolve().parent) + os.sep if path is not None else ""
    # a module of the same name imported earlier from elsewhere (another project captured in this
    # process) would shadow the one beside this file: set it aside for the capture, put it back after
    shadowed = {}
    if home:
        for name, mod in list(sys.modules.items()):
            top = name.split(".")[0]
            if os.path.isdir(home + top) or os.path.isfile(home + top + ".py"):
                file = getattr(mod, "__file__", None) or ""
                if not os.path.realpath(file).startswith(home):
                    shadowed[name] = sys.modules.pop(name)
    old_modules = set(sys.modules)
    if path is not None:
        sys.path.insert(0, home.rstrip(os.sep))
    if argv is not None:
        sys.argv = argv
    try:
        yield
    finally:
        os.chdir(cwd)
        sys.argv = old_argv
        sys.path[:] = old_path
        for name in set(sys.modules) - old_modules if home else ():
            file = getattr(sys.modules.get(name), "__file__", None) or ""
            if os.path.realpath(file).startswith(home):
                sys.modules.pop(name, None)
        for name, mod in shadowed.items():
            sys.modules.setdefault(name, mod)


def load(src: ModelSource, model_name: str = "model", inputs_name: str = "example_inputs",
         device_override: str = "") -> LoadedModel:
    """Import a model file and check it against the contract."""
    # checked before the file runs: a GPU-only file may import GPU-only packages at the top
    _check_device(device_override or src.device, src.path, bool(device_override))
    run_name = module_name(src)
    try:
        namespace = execute(src, run_name)
    except SystemExit as exc:
        sys.modules.pop(run_name, None)
        raise ModelFileError(f"{src.path}: the model file called sys.exit({exc.code!r}) while being imported",
                             "move script code under `if __name__ == \"__main__\":`") from None
    except Exception as exc:  # any error in user code becomes one line
        sys.modules.pop(run_name, None)
        where = user_frame(exc, src.path) or str(src.path)
        raise ModelFileError(f"{where}: importing the model file raised {describe(exc)}",
                             "fix the model file (run it with python to see the full error)") from exc
    # the module stays in sys.modules while it is captured (strict torch.export looks its globals up
    # by module name); the caller removes it with unload()

    if model_name not in namespace:
        raise ModelFileError(f"{src.path} defines no `{model_name}`", f"define `{model_name}` or pass --model NAME")
    model = namespace[model_name]
    if isinstance(model, type) and any(c.__name__ == "Module" and c.__module__.startswith("torch.nn")
                                       for c in model.__mro__):
        raise ModelFileError(f"`{model_name}` in {src.path} is the class {model.__name__}, not a module",
                             f"instantiate it: {model_name} = {model.__name__}()")
    if not callable(model):
        raise ModelFileError(f"`{model_name}` in {src.path} is a {type(model).__name__}, not an nn.Module or callable",
                             f"set `{model_name}` to the module or function to compile")
    _check_device(device_override or namespace.get("device", ""), src.path, bool(device_override))
    has_kwargs = KWARGS_NAME in namespace
    if inputs_name not in namespace and not has_kwargs:
        raise ModelFileError(f"{src.path} defines `{model_name}` but no `{inputs_name}`",
                             f"add `{inputs_name} = (torch.randn(...),)` (a tuple of positional arguments), "
                             f"or `{KWARGS_NAME} = dict(...)` (keyword arguments)")
    inputs = _as_inputs(namespace[inputs_name], inputs_name, src.path) if inputs_name in namespace else ()
    kwargs = _as_kwargs(namespace[KWARGS_NAME], KWARGS_NAME, src.path) if has_kwargs else {}
    sets_value = namespace.get("input_sets", [])
    if not isinstance(sets_value, (list, tuple)):
        raise ModelFileError(f"`input_sets` in {src.path} is a {type(sets_value).__name__}, not a list",
                             "make `input_sets` a list of tuples of positional arguments"
                             + (", or of (args, kwargs) pairs" if has_kwargs else ""))
    device = namespace.get("device", "")
    if not isinstance(device, str):
        device = str(device)  # a torch.device
    sets: list[Any] = [_as_set(s, f"input_sets[{i}]", src.path, has_kwargs) for i, s in enumerate(sets_value)]
    return LoadedModel(model=model, example_inputs=inputs, input_sets=sets, device=device, example_kwargs=kwargs)


def _check_device(device: Any, path: Path, asked: bool = False) -> None:
    """A file (or --device, ``asked``) that wants CUDA on a machine without it fails here, before its inputs are made."""
    if str(device).startswith("cuda"):
        import torch

        if not torch.cuda.is_available() and asked:
            raise DeviceError(f"--device {device} was asked for, but this machine has no CUDA GPU "
                              "(torch.cuda.is_available() is False)", "run on a GPU machine, or use --device cpu")
        if not torch.cuda.is_available():
            raise DeviceError(f"{path} needs a CUDA GPU (it sets device = {str(device)!r}) and this machine has none",
                              "run it on a machine with a CUDA GPU")


def _as_inputs(value: Any, name: str, path: Path) -> tuple:
    if callable(value) and not isinstance(value, tuple) and not hasattr(value, "shape"):
        try:
            value = value()
        except Exception as exc:
            where = user_frame(exc, path) or str(path)
            raise ModelRaisedError(f"{where}: calling `{name}()` raised {describe(exc)}",
                                   f"fix `{name}` so that it returns a tuple of positional arguments") from exc
    if not isinstance(value, tuple):
        hint = " (one tensor? write `(x,)`)" if hasattr(value, "shape") else ""
        raise ModelFileError(
            f"`{name}` in {path} is a {type(value).__name__}, not a tuple{hint}",
            f"make `{name}` a tuple of positional arguments, or a zero-argument function returning one",
        )
    return value


#: The model file's optional name for the first call's keyword arguments.
KWARGS_NAME = "example_kwargs"


def _as_kwargs(value: Any, name: str, path: Path) -> dict[str, Any]:
    if callable(value) and not isinstance(value, dict):
        try:
            value = value()
        except Exception as exc:
            where = user_frame(exc, path) or str(path)
            raise ModelRaisedError(f"{where}: calling `{name}()` raised {describe(exc)}",
                                   f"fix `{name}` so that it returns a dict of keyword arguments") from exc
    if not isinstance(value, dict):
        raise ModelFileError(f"`{name}` in {path} is a {type(value).__name__}, not a dict",
                             f"make `{name}` a dict of keyword arguments (e.g. `dict(input_ids=ids, labels=ids)`), "
                             "or a zero-argument function returning one")
    bad = next((k for k in value if not isinstance(k, str) or not k.isidentifier()), None)
    if bad is not None:
        raise ModelFileError(f"`{name}` in {path} has the key {bad!r}, not a keyword argument name",
                             f"key `{name}` by the model's parameter names (strings)")
    return dict(value)


def _as_set(value: Any, name: str, path: Path, with_kwargs: bool) -> Any:
    """One input set: a tuple of positional arguments; with ``example_kwargs``, an ``(args, kwargs)`` pair
    (or a dict of keyword arguments alone)."""
    if not with_kwargs:
        return _as_inputs(value, name, path)
    if isinstance(value, dict):
        return Call((), _as_kwargs(value, name, path))
    if not (isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], tuple)
            and isinstance(value[1], dict)):
        raise ModelFileError(f"`{name}` in {path} is not an (args, kwargs) pair (the file defines `{KWARGS_NAME}`)",
                             "write each input set as `((positional, ...), {'name': value})`, "
                             "e.g. `((), dict(input_ids=ids))`")
    return Call(value[0], _as_kwargs(value[1], f"{name}[1]", path))


def script_frame_error(exc: BaseException, path: Path) -> ModelRaisedError:
    """The one-line error for a script that raised, naming its line."""
    where = user_frame(exc, path) or str(path)
    return ModelRaisedError(f"{where}: the script raised {describe(exc)}",
                            "fix the script (run it with python to see the full error)")


# ----------------------------------------------------------------------------- running the user's model


def move(value: Any, device: str) -> Any:
    import torch

    if isinstance(value, Call):
        return Call(move(value.args, device), move(value.kwargs, device))
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, tuple):
        return tuple(move(v, device) for v in value)
    if isinstance(value, list):
        return [move(v, device) for v in value]
    if isinstance(value, dict):
        return {k: move(v, device) for k, v in value.items()}
    return value


def model_raised(exc: BaseException, where: Optional[Path]) -> ModelRaisedError:
    frame = user_frame(exc, where) if where is not None else ""
    if isinstance(exc, ModelExited):
        return ModelRaisedError(f"{str(where) + ': ' if where else ''}{exc} inside forward",
                                "raise an exception instead, or move the exit out of the model")
    return ModelRaisedError(
        f"{frame + ': ' if frame else ''}the model raised {describe(exc)}",
        "fix the model so that it runs eagerly (call it once without torch.compile to debug)",
    )


def no_exit(fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except SystemExit as exc:
        raise ModelExited(f"the model called sys.exit({exc.code!r})") from None
