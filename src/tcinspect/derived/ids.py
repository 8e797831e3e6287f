"""What recorded text holds that differs from process to process, and that text with it masked (pure): ranks
of one program compare alike on what they compiled, not on where their objects happen to live.

Only text is masked (guards, recompile reasons, node targets, graph-break identities, kernel names, process
groups); sizes are numbers of a shape and are compared as they are.
"""

from __future__ import annotations

import functools
import re

# object ids and addresses in guards (ID_MATCH, TYPE_MATCH, ...) and recompile reasons (``___check_obj_id(fn,
# 140439264606080)``) differ from process to process: a number of 7+ digits on its own, or of 10+ digits inside a
# name (DTensor's `__dtensor_spec_139896369303040`, an opaque guard's `___check_opaque_guard_fn_139896369310720_c0/0`),
# and hex addresses (``<function f at 0x7f3a2c1b5e40>``)
ADDRESS = re.compile(r"\b\d{7,}\b|(?<!\d)\d{10,}(?!\d)|0x[0-9a-fA-F]{6,}")
# each rank runs on its own GPU, so a tensor guard's device index differs by design: TENSOR_MATCH
# prints it as "device=1" (torch 2.11-2.15), a device as "cuda:1"
DEVICE_INDEX = re.compile(r"(?<=device=)\d+|(?<=cuda:)\d+")


@functools.lru_cache(maxsize=8192)
def masked(text: str) -> str:
    """``text`` with its object ids and addresses as ``#`` (the same text recurs on every rank: kept)."""
    return ADDRESS.sub("#", text)


def device_masked(text: str) -> str:
    """``text`` with the rank's own GPU index as ``#``."""
    return DEVICE_INDEX.sub("#", text)
