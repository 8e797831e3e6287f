"""The one registry of a report's optional sections and of the views that show them.

A section is registered once, here: the ``Report`` field it fills, how a run's events build it, its terminal view
(``trace --stage``), its HTML section, which of its values are measured (``--no-timings`` leaves them out) and the
``check`` budgets that read it. The lists every layer used to keep by hand are generated from ``SECTIONS``:
``serialize.rules.OPTIONAL_SECTIONS``, the sections ``serialize.mapping.to_dict`` writes and in which order,
``parse.fromevents.report_from_events``'s builders, ``render.table.STAGES`` and ``trace``'s visibility rules, the HTML
page's sections and ``analysis.check.limits.SECTION_METRICS``.

Implementations are named ``"module:function"`` and resolved where they are used, so that this module, at the
bottom of the layers, imports none of them (tests/test_layout.py keeps the layers). Their signatures:

- ``build(run: parse.fromevents.RunEvents) -> value``: the section from a run's events (None, or (), when it has
  nothing to say);
- ``text(rep: Report, limit: Optional[int]) -> rich renderable``, ``html(rep: Report) -> str``;
- ``shown(rep: Report) -> bool``: whether ``trace`` shows the view unasked, where that is not simply "the section
  is present" (an HTML section returns "" when it has nothing to show);
- ``metrics[name](rep: Report) -> Optional[int]``: a count ``check`` can budget and a baseline records.

Adding a view: its model in ``report/<name>.py`` (and its field on ``Report``, which keeps the model typed), its
parser, its renderers, and one ``Section(...)`` line below.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Optional

#: Where the HTML page puts a view: before the compiler stages, after them (in registry order), or last.
HTML_SLOTS = ("top", "after", "end")


@dataclass(frozen=True)
class Section:
    """One optional part of a report (the Report field ``key``), or a view derived from the rest of it (no ``key``)."""

    name: str
    #: the Report field (and YAML/JSON key) it fills; "" for a view with no field of its own (collectives)
    key: str = ""
    build: str = ""  # "module:function" (RunEvents) -> value
    stage: str = ""  # its `trace --stage` name, where it has a terminal view
    text: str = ""  # "module:function" (Report, limit) -> renderable
    html: str = ""  # "module:function" (Report) -> str
    html_slot: str = "after"  # one of HTML_SLOTS
    #: "module:function" (Report) -> bool: whether the view shows unasked; "" shows it when the field is set
    shown: str = ""
    #: values measured run to run, left out by ``--no-timings``: "" is the whole section, else paths of keys in its
    #: plain data ("graphs[].recordings[].record_time_s"; the last part may end in "*": every key that ends so)
    timed: tuple[str, ...] = ()
    #: ``check``'s counts of this section, by budget name: "module:function" (Report) -> Optional[int]
    metrics: dict[str, str] = field(default_factory=dict)


#: In the order ``to_dict`` writes the fields (a saved report's key order) and the views follow the stages.
SECTIONS: tuple[Section, ...] = (
    Section("passes", "passes", build="tcinspect.parse.assemble:passes_section"),
    Section("verification", "verification", html="tcinspect.render.extensions:verification_html", html_slot="end"),
    Section("exports", "exports"),
    Section("bench", "bench"),
    Section("parse", "parse"),
    Section("ranks", "ranks", html="tcinspect.render.ranks:section_html", html_slot="top"),
    Section("divergence", "divergence"),
    Section("mixed_runs", "mixed_runs"),
    Section("graph_execution_order", "graph_execution_order", build="tcinspect.parse.graph_execution:section"),
    Section("compile_time", "compile_time", build="tcinspect.parse.compile_time:section",
            html="tcinspect.render.compile_time:section_html", timed=("",)),
    Section("failure", "failure"),
    Section("cudagraphs", "cudagraphs", build="tcinspect.parse.cudagraphs:section", stage="cudagraphs",
            text="tcinspect.render.cudagraphs:cudagraphs", html="tcinspect.render.cudagraphs:section_html",
            timed=("graphs[].cudagraphify_time_s", "graphs[].recordings[].record_time_s"),
            metrics={"cudagraph_skips": "tcinspect.analysis.cudagraphs:skips",
                     "cudagraph_recordings": "tcinspect.analysis.cudagraphs:recordings"}),
    Section("collectives", stage="collectives", text="tcinspect.render.collectives:collectives",
            html="tcinspect.render.collectives:section_html", shown="tcinspect.render.collectives:shown"),
    # read with the stages (parse/fromevents.py), whose recompiles it advises
    Section("shapes", "shapes", stage="shapes",
            text="tcinspect.render.shapes:shapes", html="tcinspect.render.shapes:section_html"),
    Section("guard_cost", "guard_cost", build="tcinspect.parse.guard_cost:section", timed=("",)),
    Section("regions", "regions", build="tcinspect.parse.regions:section", stage="regions",
            text="tcinspect.render.regions:regions", html="tcinspect.render.regions:section_html",
            timed=("regions[].*_time_s",)),
    Section("memory", "memory", build="tcinspect.parse.memory:section", stage="memory",
            text="tcinspect.render.memory:table", html="tcinspect.render.memory:section_html"),
    Section("coverage", "coverage", build="tcinspect.parse.coverage:section",
            timed=("runtime.*time_us", "runtime.islands[].*time_us"),
            metrics={"fallbacks_to_eager": "tcinspect.analysis.coverage:fallbacks_to_eager"}),
    Section("caches", html="tcinspect.render.compile_time:caches_html"),
    Section("timings", "timings"),
)

BY_NAME: dict[str, Section] = {s.name: s for s in SECTIONS}
#: the Report fields written only when present (every other field is always written)
FIELDS: tuple[str, ...] = tuple(s.key for s in SECTIONS if s.key)
#: the views `trace --stage` can select after the compiler stages, in display order
STAGE_VIEWS: tuple[Section, ...] = tuple(s for s in SECTIONS if s.stage)


def named(name: str) -> Optional[Section]:
    return BY_NAME.get(name)


@cache
def implementation(path: str) -> Callable[..., Any]:
    """The function a registry entry names ("module:function"), imported when first asked for."""
    module, _, name = path.partition(":")
    found: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return found


def html_views(slot: str) -> tuple[Section, ...]:
    """The views with an HTML section in ``slot`` (one of HTML_SLOTS), in registry order."""
    return tuple(s for s in SECTIONS if s.html and s.html_slot == slot)
