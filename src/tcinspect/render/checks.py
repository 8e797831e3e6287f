"""Check outcomes -> a table, GitHub Actions annotations, JUnit XML or JSON. Pure functions."""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from tcinspect.analysis.check.outcome import Outcome
from tcinspect.render.grid import Table

_STYLE = {"fail": "bold red", "improved": "green", "ok": "dim"}


def table(outcome: Outcome) -> RenderableType:
    t = Table(header_style="bold")
    t.add_column("model", style="cyan")
    t.add_column("check")
    t.add_column("result")
    t.add_column("detail")
    for f in outcome.findings:
        t.add_row(f.model, f.check, Text(f.status, style=_STYLE.get(f.status, "")), f.message)
    fails = sum(f.status == "fail" for f in outcome.findings)
    better = sum(f.status == "improved" for f in outcome.findings)
    verdict = Text(f"FAILED: {fails} regression(s)" if fails else "passed", style="bold red" if fails else "bold green")
    if better:
        verdict.append(f" · {better} improvement(s) — update the baseline with --update", style="green")
    return Group(t, verdict)


def _escape(text: str) -> str:
    # workflow-command escaping (GitHub's toolkit: %, CR, LF in the message)
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    # a property's value also escapes the separators ':' and ',' (@actions/core's escapeProperty)
    return _escape(text).replace(":", "%3A").replace(",", "%2C")


# characters XML 1.0 cannot hold, even escaped (a terminal colour code in a model's message, say)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _xml_text(text: str) -> str:
    """``text`` with each character XML cannot hold written as ``\\xNN``, so the file always parses."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def github(outcome: Outcome) -> str:
    """GitHub Actions workflow commands: an ::error at each regression, a ::notice per improvement."""
    lines = []
    for f in outcome.findings:
        if f.status == "ok":
            continue
        kind = "error" if f.status == "fail" else "notice"
        props = []
        if f.file:
            rel = os.path.relpath(f.file) if os.path.isabs(f.file) else f.file
            props.append(f"file={_escape_property(rel)}")
            if f.line:
                props.append(f"line={f.line}")
        props.append(f"title={_escape_property(f'tcinspect {f.check}')}")
        lines.append(f"::{kind} {','.join(props)}::{_escape(f.message)}")
    return "\n".join(lines) + ("\n" if lines else "")


def junit(outcome: Outcome) -> str:
    """JUnit XML: one test case per model and check."""
    suite = ET.Element("testsuite", name="tcinspect", tests=str(len(outcome.findings)),
                       failures=str(sum(f.status == "fail" for f in outcome.findings)), errors="0", skipped="0")
    seen: dict[tuple[str, str], int] = {}
    for f in outcome.findings:
        # the name stays the same from run to run (CI tools track tests by name); what was measured
        # goes in the message and the properties
        name = _xml_text(f.check + (f" at {os.path.basename(f.file)}:{f.line}" if f.file and f.line else ""))
        n = seen[(f.model, name)] = seen.get((f.model, name), 0) + 1
        message = _xml_text(f.message)
        case = ET.SubElement(suite, "testcase", classname=_xml_text(f"tcinspect.{f.model}"),
                             name=name if n == 1 else f"{name} #{n}")
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", name="status", value=f.status)
        ET.SubElement(props, "property", name="message", value=message)
        ET.SubElement(case, "system-out").text = message
        if f.status == "fail":
            failure = ET.SubElement(case, "failure", message=message, type=_xml_text(f.check))
            failure.text = _xml_text(f"{f.file}:{f.line}: {f.message}") if f.file else message
    root = ET.Element("testsuites")
    root.append(suite)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def document(outcome: Outcome) -> dict[str, Any]:
    return {"passed": not outcome.failed,
            "findings": [{"model": f.model, "check": f.check, "status": f.status, "message": f.message,
                          "file": f.file, "line": f.line} for f in outcome.findings]}
