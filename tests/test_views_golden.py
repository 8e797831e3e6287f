"""Every view, rendered through one helper, against one saved expected output each (tests/golden/), as torchinfo
keeps its summaries: a change to what a view shows is a change to its file, reviewed as such.

Each view is rendered from recorded runs (TORCH_TRACE logs, and CUDA graph events recorded on an H200) at 120
columns, then normalized: measured times and the machine's paths are replaced, so only what the view says is
compared. ``TCINSPECT_UPDATE_GOLDEN=1 python -m pytest tests/test_views_golden.py`` writes the files again."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from helpers import DATA, render_text

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden"
LOGS = DATA / "torch_trace" / "torch-2.13.0"
#: the recorded runs, and the `trace` stages each is shown with (the compiler's, then the registered views)
CASES = {
    "tiny": (LOGS / "tiny.log.gz", ("summary", "dynamo", "guards", "breaks", "aot", "inductor", "memory")),
    "graph_breaks": (LOGS / "graph_breaks.log.gz", ("summary", "breaks")),
    "gpt2_train_lengths": (LOGS / "gpt2_train_lengths.log.gz", ("summary", "guards", "shapes")),
    "regions_blocks_recompiled": (LOGS / "regions_blocks_recompiled.log.gz", ("regions",)),
    "cpu_island": (DATA / "cudagraphs" / "cpu_island-torch2.11.0.jsonl.gz", ("cudagraphs",)),
}
_TIMES = [
    (re.compile(r"\b\d[\d,]*\.\d+ ?(s|ms|us|µs)\b"), r"N \1"),  # measured durations
    (re.compile(r"\b\d+ (s|ms) ago\b"), r"N \1 ago"),
]


def _normalized(text: str) -> str:
    for pattern, repl in _TIMES:
        text = pattern.sub(repl, text)
    text = text.replace(str(ROOT) + "/", "")
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def _report(name: str):
    from tcinspect.report import Options, Target

    path, _ = CASES[name]
    if path.name.endswith(".jsonl.gz"):  # events a capture recorded (tests/data/record_cudagraphs.py)
        from tcinspect.parse.events import read_jsonl
        from tcinspect.parse.fromevents import report_from_events

        return report_from_events(read_jsonl(path), target=Target(kind="callable"),
                                  options=Options(mode="reduce-overhead", device="cuda"), device="cuda",
                                  torch_version="2.11.0")
    from dataclasses import replace

    from tcinspect.request import load

    report = load(str(path)).report
    # shown as the repository-relative path, so the header wraps alike in any checkout
    return replace(report, target=replace(report.target, path=str(path.resolve().relative_to(ROOT))))


@pytest.mark.parametrize(("name", "stage"), [(n, s) for n, (_, stages) in CASES.items() for s in stages])
def test_each_view_equals_its_saved_output(name, stage):
    from tcinspect.render.table import trace

    text = _normalized(render_text(trace(_report(name), [stage], findings=False), 120))
    golden = GOLDEN / f"{name}.{stage}.txt"
    if os.environ.get("TCINSPECT_UPDATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), f"no saved output: TCINSPECT_UPDATE_GOLDEN=1 pytest {__file__}"
    assert text == golden.read_text(encoding="utf-8")


def test_every_saved_output_is_a_view_still_rendered():
    wanted = {f"{n}.{s}.txt" for n, (_, stages) in CASES.items() for s in stages}
    assert sorted(p.name for p in GOLDEN.glob("*.txt")) == sorted(wanted)


def test_every_registered_view_has_a_saved_output():
    from tcinspect.report import sections

    shown = {s for _, stages in CASES.values() for s in stages}
    # collectives: a distributed run's; tests/test_collectives.py renders it from its rank logs
    assert {v.stage for v in sections.STAGE_VIEWS} - shown == {"collectives"}
