"""Reports built by hand for the tests, from tcinspect's own report classes: every hand-built report is made here."""

from __future__ import annotations

from typing import Any


def make_report(**fields: Any):
    """A report built by hand: torch 2.13.0 on the CPU, the model file m.py, then ``fields`` (any Report field,
    ``torch_version``, ``device`` and ``target`` included) over those."""
    from tcinspect.report import Report, Target

    base: dict[str, Any] = {"torch_version": "2.13.0", "device": "cpu", "target": Target(kind="model", path="m.py")}
    return Report(**{**base, **fields})
