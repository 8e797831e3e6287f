"""Record the dynamic-shape events tests/test_shapes.py parses, with what torch logged beside them.

    python tests/data/record_shapes.py

Runs sample_models/shapes_loop.py (eager backend, four lengths) with the torch of the running
interpreter and writes tests/data/cpu-traces/<torch version>/shapes_loop.jsonl.gz: torch's
create_symbol, create_unbacked_symbol, symbolic_shape_specialization and guard_added_fast records, one
``{"meta": record.metadata, "payload": record.payload}`` object a line, with interned file names
replaced by the names (paths under the repository made relative, others rewritten to /home/user/...).
shapes_expected.json beside it holds what those records say, read straight from them: each
specialization's compile id, value, reason and user line, each symbol, each guard.
"""

from __future__ import annotations

import gzip
import json
import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "cpu-traces"
NAMES = ("create_symbol", "create_unbacked_symbol", "symbolic_shape_specialization", "guard_added_fast")


def _path(name: str) -> str:
    if name.startswith(str(ROOT) + "/"):
        return name[len(str(ROOT)) + 1:]
    return "/home/user/" + name.split("site-packages/", 1)[-1] if "site-packages/" in name else name


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.lines: list[dict] = []

    def emit(self, record: logging.LogRecord) -> None:
        from torch._logging.structured import INTERN_TABLE

        meta = getattr(record, "metadata", None)
        name = next((n for n in NAMES if isinstance(meta, dict) and n in meta), None)
        if name is None:
            return
        files = {i: f for f, i in INTERN_TABLE.items()}
        own = dict(meta[name])
        for key in ("user_stack", "stack"):
            if isinstance(own.get(key), list):
                own[key] = [{**f, "filename": _path(files.get(f["filename"], str(f["filename"])))} for f in own[key]]
        self.lines.append({"meta": {**meta, name: own}, "payload": getattr(record, "payload", None)})


def main() -> None:
    import torch

    sys.path.insert(0, str(ROOT / "src"))
    from tcinspect.capturing.engine import capture_file
    from tcinspect.report import CompileOptions

    handler = Records()
    trace = logging.getLogger("torch.__trace")
    trace.addHandler(handler)
    try:
        capture_file(ROOT / "sample_models" / "shapes_loop.py", compile=CompileOptions(backend="eager"), fresh=True)
    finally:
        trace.removeHandler(handler)
    folder = OUT / torch.__version__.split("+")[0]
    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / "shapes_loop.jsonl.gz", "wt", encoding="utf-8") as fh:
        for line in handler.lines:
            fh.write(json.dumps(line) + "\n")

    def cid(m: dict) -> str:
        return f"{m['frame_id']}/{m['frame_compile_id']}"

    truth: dict[str, list] = {"specializations": [], "symbols": [], "guards": []}
    for line in handler.lines:
        m = line["meta"]
        for name in NAMES:
            own = m.get(name)
            if own is None:
                continue
            where = (own.get("user_stack") or [{}])[-1]
            if name == "symbolic_shape_specialization":
                truth["specializations"].append([cid(m), own["value"], own["reason"], where.get("line")])
            elif name == "guard_added_fast":
                truth["guards"].append([cid(m), own["expr"], where.get("line")])
            else:
                truth["symbols"].append([cid(m), own["symbol"], own.get("source", ""), own.get("val", "")])
    (folder / "shapes_expected.json").write_text(json.dumps({"shapes_loop": truth}, indent=1) + "\n")
    print(f"wrote {folder / 'shapes_loop.jsonl.gz'} ({len(handler.lines)} records)")


if __name__ == "__main__":
    main()
