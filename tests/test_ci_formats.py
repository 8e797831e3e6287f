"""What CI reads must parse whatever a model's messages hold; small command-line defects. Torch-free."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from helpers import cli
from tcinspect.analysis.check.outcome import Finding, Outcome
from tcinspect.render import checks as render


def _outcome(message: str, file: str = "models/a,b:c.py") -> Outcome:
    return Outcome([Finding("m.py", "graph_breaks", "fail", message, file, 3),
                    Finding("m.py", "kernels", "ok", "kernels 2 <= max 3")])


def test_junit_with_control_characters_parses():
    xml = render.junit(_outcome("the model printed \x1b[31mred\x1b[0m and a \x07 bell"))
    root = ET.fromstring(xml.split("\n", 1)[1])  # parses: no character XML cannot hold
    failure = root.find(".//failure")
    assert failure is not None and failure.get("message") == "the model printed \\x1b[31mred\\x1b[0m and a \\x07 bell"
    assert "\t" in render._xml_text("keeps\ttabs") and "\n" in render._xml_text("and\nnewlines")


def test_github_annotation_properties_are_escaped_as_the_actions_toolkit_does():
    line = render.github(_outcome("50% slower\nsee log")).splitlines()[0]
    assert line == ("::error file=models/a%2Cb%3Ac.py,line=3,title=tcinspect graph_breaks::50%25 slower%0Asee log")


def test_codegen_sort_typo_is_refused_without_bench(capsys, tmp_path):
    code, _, err = cli(capsys, "codegen", str(tmp_path / "missing.py"), "--sort", "bogus")
    assert code == 2 and "--sort 'bogus' is not one of" in err
