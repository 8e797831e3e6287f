"""Guards: parse Dynamo's guard tree (``dynamo_cpp_guards_str``) into classified guards."""

from __future__ import annotations

import re

from tcinspect.parse.memo import memoized
from tcinspect.report import Guard

_LEAF = re.compile(r"\+-\s+(?P<type>[A-Z][A-Z0-9_]*):\s*(?P<rest>.*)$")
_SOURCE = re.compile(r"((?:L|G)\[[^\]]+\](?:\.[A-Za-z_]\w*|\[[^\]]+\]|\(\))*)")

# PyTorch's guard names, grouped into the kinds the torch.compile tutorials use.
_KINDS = {
    "TENSOR_MATCH": "tensor",
    "TYPE_MATCH": "type",
    "ID_MATCH": "identity",
    "CLOSURE_MATCH": "identity",
    "NOT_NONE": "identity",
    "IS_NONE": "identity",
    "OBJECT_ALIASING": "identity",
    "NO_TENSOR_ALIASING": "identity",
    "EQUALS_MATCH": "value",
    "CONSTANT_MATCH": "value",
    "BOOL_MATCH": "value",
    "TRUE_MATCH": "value",
    "FALSE_MATCH": "value",
    "NONE_MATCH": "value",
    "LENGTH_CHECK": "value",
    "SEQUENCE_LENGTH": "value",
    "DICT_LENGTH": "value",
    "TUPLE_ITERATOR_LEN": "value",
    "RANGE_ITERATOR_MATCH": "value",
    "GLOBAL_STATE": "global_state",
    "DEFAULT_DEVICE": "global_state",
    "TORCH_FUNCTION_MODE_STACK": "global_state",
    "GRAD_MODE": "global_state",
    "DETERMINISTIC_ALGORITHMS": "global_state",
    "DUAL_LEVEL": "global_state",
    "FUNCTORCH_STACK_MATCH": "global_state",
    "AUTOGRAD_SAVED_TENSORS_HOOKS": "global_state",
    "HASATTR": "attribute",
    "NO_HASATTR": "attribute",
    "DICT_CONTAINS": "attribute",
    "DIMENSION_DYNAMIC_MARKING_GUARD": "attribute",
    "DICT_VERSION": "attribute",
    "DISPATCH_KEY_SET_MATCH": "attribute",
    "WEAKREF_ALIVE": "identity",
    "SHAPE_ENV": "symbolic_shape",
}


def classify(guard_type: str, expression: str) -> str:
    """The kind of a guard: tensor, symbolic_shape, value, type, identity, attribute, global_state, other."""
    kind = _KINDS.get(guard_type)
    if kind:
        return kind
    if guard_type == "LAMBDA_GUARD":
        if "saved_tensors_hooks" in expression:
            return "global_state"
        if _ALIASING.fullmatch(expression):
            return "identity"  # "A is B": torch 2.13's form of 2.14's OBJECT_ALIASING guard
        if re.search(r"\.size\(\)|\.stride\(\)|storage_offset|\bs\d+\b", expression):
            return "symbolic_shape"
        if "==" in expression or "!=" in expression:
            return "value"
    return "other"


_ALIASING = re.compile(r"\S+ is \S+")


def source_of(expression: str) -> str:
    m = _SOURCE.search(expression)
    return m.group(1) if m else ""


_OBJECT_ID = re.compile(r"(___check_(?:obj|type)_id\((?:[^()]|\([^()]*\))*?,\s*)\d+")
_ADDRESS = re.compile(r"\b0x[0-9a-f]{6,}\b")
# Dynamo numbers the builtins dicts it installs with a process-wide counter
_BUILTINS_DICT = re.compile(r"(__builtins_dict___)\d+")


def _stable(expression: str) -> str:
    """Object ids and addresses differ on every run; the report keeps the check, not the number."""
    return _BUILTINS_DICT.sub(r"\1N", _ADDRESS.sub("0x…", _OBJECT_ID.sub(r"\1<id>", expression)))


@memoized
def parse_guards(text: str) -> tuple[Guard, ...]:
    """Leaf guards of a guard-manager tree, in the order PyTorch prints them."""
    out = []
    for line in text.splitlines():
        m = _LEAF.search(line)
        if not m:
            continue
        rest = m["rest"]
        expression, _, comment = rest.partition("  # ")
        expression = _stable(expression.strip())
        user_code = comment.strip()
        # the comment reads "<user line>  # <file>:<line> in <fn>"; keep both halves readable
        user_code = re.sub(r"\s+#\s+", "  # ", user_code)
        out.append(Guard(kind=classify(m["type"], expression), guard_type=m["type"], source=_stable(source_of(expression)),
                         expression=expression, user_code=user_code))
    return tuple(out)


# (pattern over a failed guard, suggestion): the recompile causes the torch.compile tutorials list.
_RECOMPILE_FIXES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"size mismatch|stride mismatch|\.size\(\)|\.stride\(\)|Ne\(|Eq\(|\bs\d+\b"),
     "A tensor shape changed: compile with dynamic=True, or call torch._dynamo.mark_dynamic(tensor, dim) "
     "before the first call, so one graph serves every size."),
    (re.compile(r"dtype mismatch|device mismatch|device index mismatch"),
     "A new dtype or device needs its own graph: this recompile is expected (cast or move inputs once, "
     "before the compiled call, to avoid it)."),
    (re.compile(r"requires_grad mismatch|grad_mode"),
     "Grad mode or requires_grad changed: a separate graph is expected for training vs inference."),
    # GLOBAL_STATE names the fields that changed (torch/csrc/dynamo/guards.cpp, GlobalStateGuard::reason):
    # allow_tf32 in 2.11-2.14, cuda_matmul_precision from 2.15
    (re.compile(r"GLOBAL_STATE changed:.*\b(allow_tf32|allow_fp16_reduce|allow_bf16_reduce|cuda_matmul_precision)\b"),
     "A matmul precision setting changed between calls (torch.backends.cuda.matmul.fp32_precision or allow_tf32, "
     "torch.set_float32_matmul_precision): set it once, before the first compiled call."),
    (re.compile(r"GLOBAL_STATE changed:.*\bautocast"),
     "Autocast was switched on or off between calls: each setting needs its own graph (expected)."),
    (re.compile(r"GLOBAL_STATE|global state", re.I),
     "A global torch setting changed between calls (the fields named above): set it once, before the first "
     "compiled call, or expect a graph per setting."),
]

_REASON_PREFIX = re.compile(r"^\S+/\d+:\s*")
_NUMBER = r"-?(?:\d+\.?\d*(?:e[-+]?\d+)?|inf|nan)"


def failed_guard(reason: str) -> str:
    """The guard expression of one recompile reason, without its compile id and its source comment.

    PyTorch writes a reason as ``"0/0: <guard>  # <user line>  # <file>:<line> in <fn>"``.
    """
    return _REASON_PREFIX.sub("", reason).partition("  #")[0].strip()


def _shown(source: str) -> str:
    return source if len(source) <= 60 else source[:59] + "…"


def _guard_fix(guard: str) -> str:
    """A suggestion from the form of the failed guard itself (what it compared, and with what)."""
    m = re.fullmatch(r"(?:not\s+)?(?P<src>.+?) is (?P<neg>not )?None", guard)
    if m:
        src, was_none = _shown(m["src"]), not m["neg"]
        then, now = ("None", "set") if was_none else ("set", "None")
        return (f"`{src}` was {then} when the graph was compiled and is {now} now: something changed it between "
                "calls (a model that fills in its own attribute on its first call, e.g. Hugging Face's "
                "`config.problem_type`, or your code). Set it before the first compiled call, so every call "
                "sees the same value; otherwise this one recompile is expected.")
    m = re.fullmatch(r"(?:not\s+)?___check_type_id\((?P<src>.+?),\s*(?:<id>|\d+)\)", guard)
    if m:
        return (f"`{_shown(m['src'])}` has another type than when the graph was compiled: pass the same type "
                "on every call (e.g. always a tensor, never a list), or expect a graph per type.")
    m = re.fullmatch(r"(?:not\s+)?___check_obj_id\((?P<src>.+?),\s*(?:<id>|\d+)\)", guard)
    if m:
        return (f"`{_shown(m['src'])}` is another object than when the graph was compiled (for True, False and "
                "None: another value; otherwise a new module or function object each call?): reuse the same "
                "object across calls, or pass a flag as a tensor.")
    m = re.fullmatch(r"len\((?P<src>.+)\) == (?P<n>\d+)", guard)
    if m:
        return (f"`{_shown(m['src'])}` changed length (it had {m['n']} items when the graph was compiled): a graph "
                "is specialised on a list's or dict's length; keep it fixed, or stack the items into one tensor.")
    m = re.fullmatch(r"(?P<neg>not )?___dict_contains\((?P<key>.+?),\s*(?P<src>.+)\)", guard)
    if m:
        return (f"The key {m['key']} was {'added to' if m['neg'] else 'removed from'} `{_shown(m['src'])}` since "
                "the graph was compiled: fill the dict before the first compiled call and keep its keys fixed.")
    m = re.fullmatch(rf"(?P<src>.+?) == (?P<value>{_NUMBER})", guard, re.I)
    if m:
        src, value = m["src"], m["value"]
        if re.search(r"param_groups\[\d+\]\[['\"](?:lr|initial_lr|weight_decay|betas|momentum)['\"]\]", src):
            return (f"`{_shown(src)}` (an optimizer setting, {value} when compiled) is a Python float baked into "
                    "the graph, and an LR scheduler changes it every step: give the optimizer a tensor instead, "
                    "e.g. `torch.optim.AdamW(params, lr=torch.tensor(1e-3))`, as PyTorch's compiled-optimizer "
                    "tutorial does, so one graph serves every value.")
        if re.fullmatch(r"-?\d+", value):
            return (f"The Python int `{_shown(src)}` changed value ({value} when compiled): compile with "
                    "dynamic=True (or let automatic dynamic shapes make it symbolic after this recompile), or pass "
                    "it as a tensor (torch.tensor(value)).")
        return (f"The Python scalar `{_shown(src)}` changed value ({value} when compiled), and Dynamo bakes a "
                "float into the graph as a constant: pass it as a tensor (torch.tensor(value)) so it is data.")
    m = re.fullmatch(r"(?P<src>.+?) == (?P<value>.+)", guard)
    if m:
        return (f"`{_shown(m['src'])}` changed value ({_shown(m['value'])} when compiled): a graph is specialised on "
                "a Python constant (a string, a flag, a tuple); keep it fixed across calls, or expect a graph per "
                "value.")
    return ""


def suggest_recompile_fix(reasons: tuple[str, ...]) -> str:
    """A suggestion for the newest failed guard of a recompile (PyTorch lists it first)."""
    if not reasons:
        return ""
    for pattern, fix in _RECOMPILE_FIXES:
        if pattern.search(reasons[0]):
            return fix
    return _guard_fix(failed_guard(reasons[0]))
