"""A new view is its own modules, its field on ``Report`` and one registration line (report/sections.py).

In a copy of the package, a section ``probe`` is added as a view would be: its model (report/probe.py), its parser
(parse/probe.py), its renderers (render/probe.py), its typed field on Report and one ``Section(...)`` line. Nothing
else is edited; the copy then reads it from a run's events, writes and reads it in YAML and JSON (leaving out its
measured value under --no-timings), shows it in `trace` (unasked where present, and as ``--stage probe``) and on the
HTML page, gives it a JSON Schema and a ``check`` count."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

_SRC = Path(__file__).resolve().parent.parent / "src" / "tcinspect"

_MODEL = '''"""The probe section: how many events a run logged."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Probe:
    events: int
    seconds: float = 0.0
'''
_PARSER = '''"""The probe section from a run's events."""

from __future__ import annotations

from typing import Optional

from tcinspect.parse.run import RunEvents
from tcinspect.report.probe import Probe


def section(run: RunEvents) -> Optional[Probe]:
    return Probe(events=len(run.events), seconds=1.5) if run.events else None
'''
_RENDER = '''"""The probe section, shown."""

from __future__ import annotations

from typing import Optional

from rich.text import Text

from tcinspect.render.htmlparts import esc
from tcinspect.report import Report


def text(rep: Report, limit: Optional[int] = None) -> Text:
    return Text(f"probe: {rep.probe.events} events" if rep.probe else "probe: none")


def section_html(rep: Report) -> str:
    return f'<section id="probe"><h2>Probe</h2>{esc(rep.probe.events)} events</section>' if rep.probe else ""


def count(rep: Report) -> Optional[int]:
    return rep.probe.events if rep.probe else None
'''
_REGISTRATION = ('    Section("probe", "probe", build="tcinspect.parse.probe:section", stage="probe", '
                 'text="tcinspect.render.probe:text", html="tcinspect.render.probe:section_html", timed=("seconds",), '
                 'metrics={"probe_events": "tcinspect.render.probe:count"}),\n')

_PROBE = r'''
import json
from tcinspect import serialize
from tcinspect.analysis.check import limits
from tcinspect.parse.events import Event
from tcinspect.parse.fromevents import report_from_events
from tcinspect.render.helpers_for_probe import text_of
from tcinspect.render.html import render
from tcinspect.render.table import STAGES, trace
from tcinspect.report import Options, Target
from tcinspect.serialize import schema
from tcinspect.serialize.rules import OPTIONAL_SECTIONS

events = [Event(name="dynamo_start", frame_id=0, frame_compile_id=0, meta={"dynamo_start": {"stack": []}})]
rep = report_from_events(events, target=Target(kind="model", path="m.py"), options=Options(), device="cpu",
                         torch_version="2.13.0")
assert rep.probe.events == 1
assert "probe" in OPTIONAL_SECTIONS and STAGES[-1] == "probe"
for fmt in ("yaml", "json"):
    text = serialize.dumps(rep, fmt)
    assert serialize.loads(text).probe == rep.probe
    untimed = serialize.loads(serialize.dumps(rep, fmt, timings=False))
    assert untimed.probe.events == 1 and untimed.probe.seconds == 0.0
assert "probe" not in json.loads(serialize.dumps(rep.replace(probe=None), "json"))
assert "probe: 1 events" in text_of(trace(rep)) and "probe: 1 events" in text_of(trace(rep, ["probe"]))
assert "probe:" not in text_of(trace(rep.replace(probe=None)))
assert '<section id="probe"><h2>Probe</h2>1 events</section>' in render(rep)
defs = schema.generate()["$defs"]
assert defs["Probe"]["required"] == ["events"]  # seconds: measured, so left out by --no-timings and "probe" in defs["Report"]["properties"]
assert limits.SECTION_METRICS["probe_events"](rep) == 1
print("one registration")
'''

_TEXT_OF = '''"""Plain text of a renderable (the probe's check)."""

import io

from rich.console import Console


def text_of(renderable: object) -> str:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(renderable)
    out = console.file
    assert isinstance(out, io.StringIO)
    return out.getvalue()
'''


def test_a_new_view_is_its_modules_its_field_and_one_registration_line(tmp_path):
    pkg = tmp_path / "tcinspect"
    shutil.copytree(_SRC, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "report" / "probe.py").write_text(_MODEL)
    (pkg / "parse" / "probe.py").write_text(_PARSER)
    (pkg / "render" / "probe.py").write_text(_RENDER)
    (pkg / "render" / "helpers_for_probe.py").write_text(_TEXT_OF)  # the check's own helper, not the view's
    # the typed field on Report, with its import
    core = pkg / "report" / "core.py"
    text = core.read_text()
    last = "    coverage: Optional[Coverage] = None\n"
    assert text.count(last) == 1
    text = text.replace(last, last + "    probe: Optional[Probe] = None\n")
    text = text.replace("from tcinspect.report.passes import PassRun\n",
                        "from tcinspect.report.passes import PassRun\nfrom tcinspect.report.probe import Probe\n")
    core.write_text(text)
    # one registration line, before timings (the last key a saved report writes)
    registry = pkg / "report" / "sections.py"
    text = registry.read_text()
    anchor = '    Section("timings", "timings"),\n'
    assert text.count(anchor) == 1
    registry.write_text(text.replace(anchor, _REGISTRATION + anchor))
    done = subprocess.run([sys.executable, "-c", _PROBE], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "one registration"
