"""The saved report's JSON Schema: generated from the report's types, shipped as ``report.schema.json``.

``generate`` builds it with msgspec (a development dependency: the shipped file is what users read, through
``shipped``) and post-processes what msgspec cannot know from the types: the file's layout
(``summary`` and ``status`` beside the stages, ``timings`` as a mapping, a rank's own ``summary``), which
keys a saved report always has (``rules``: every field but the optional sections, the fields added to
schema 1 and the ``*_time_s`` keys ``--no-timings`` leaves out) and that no other key is allowed.

    python -m tcinspect.serialize.schema      # writes src/tcinspect/report.schema.json again
"""

from __future__ import annotations

import dataclasses
import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from tcinspect import report as model
from tcinspect.serialize.rules import OPTIONAL_SECTIONS, may_be_absent

FILE_NAME = "report.schema.json"
#: the parse section's counts written even when zero (``mapping.to_dict``); the others only when set
_PARSE_ALWAYS = ("unknown_events", "lines_not_understood")


def shipped() -> str:
    """The schema file installed with tcinspect, as text."""
    return resources.files("tcinspect").joinpath(FILE_NAME).read_text(encoding="utf-8")


def generate() -> dict[str, Any]:
    """The schema of a saved report (YAML or JSON: the same data), from the report's types."""
    import msgspec  # development only: the generated file is shipped

    (_, _), defs = msgspec.json.schema_components([model.Report, model.Summary], ref_template="#/$defs/{name}")
    classes = {**_classes(model.Report), **_classes(model.Summary)}
    for name, schema in defs.items():
        cls = classes[name]
        props = schema.get("properties", {})
        for p in props.values():
            p.pop("default", None)
        schema["required"] = [f.name for f in dataclasses.fields(cls) if not may_be_absent(cls, f)]
        schema["additionalProperties"] = False
    report = defs["Report"]
    props = report["properties"]
    for name in OPTIONAL_SECTIONS:  # written only when set: present means not null
        any_of = props.get(name, {}).get("anyOf")
        if any_of is not None:
            props[name] = next(s for s in any_of if s.get("type") != "null")
    props["schema_version"] = {"const": model.SCHEMA_VERSION}
    props["timings"] = {"type": "object", "additionalProperties": {"type": "number"},
                        "description": "Wall seconds of each part of the run, by name."}
    props["status"] = {"enum": ["ok", "failed"], "description": "failed when any stage failed or the run stopped."}
    props["summary"] = {"$ref": "#/$defs/Summary"}
    report["required"] += ["status", "summary"]
    rank = defs["RankReport"]
    rank["properties"]["summary"] = {"$ref": "#/$defs/Summary"}
    rank["required"].append("summary")
    defs["ParseHealth"]["required"] = [n for n in _PARSE_ALWAYS if n in defs["ParseHealth"]["properties"]]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "tcinspect report",
        "description": f"A saved tcinspect report (schema {model.SCHEMA_VERSION}), YAML or JSON.",
        "$ref": "#/$defs/Report",
        "$defs": dict(sorted(defs.items())),
    }


def _classes(root: type) -> dict[str, type]:
    """Every report class reachable from ``root`` through its fields' types, by name (a section's module need not
    be named anywhere else: its field on Report reaches it)."""
    import typing

    found: dict[str, type] = {}
    todo = [root]
    while todo:
        cls = todo.pop()
        if cls.__name__ in found:
            continue
        found[cls.__name__] = cls
        for tp in typing.get_type_hints(cls).values():
            stack = [tp]
            while stack:
                t = stack.pop()
                if isinstance(t, type) and dataclasses.is_dataclass(t):
                    todo.append(t)
                stack.extend(typing.get_args(t))
    return found


def text(schema: dict[str, Any]) -> str:
    """The schema as the shipped file holds it."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main() -> None:
    path = Path(__file__).resolve().parent.parent / FILE_NAME
    path.write_text(text(generate()), encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
