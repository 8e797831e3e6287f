"""What a report's optional sections are built from (report/sections.py: each section's ``build``). Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tcinspect.parse.events import Event
from tcinspect.report import CompileMetrics, Options, Stages, Target


@dataclass(frozen=True)
class RunEvents:
    """A run's events, what it was asked for, and its stages as parse/assemble.py made them."""

    events: Sequence[Event]
    options: Options
    device: str
    target: Target
    #: the stages as the report holds them (graph breaks with their context, recompiles with their shape advice)
    stages: Stages
    #: the stages as assembled, before that context was added (what compile time is read against)
    assembled: Stages
    metrics: tuple[CompileMetrics, ...]
