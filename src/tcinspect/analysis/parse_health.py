"""What the parser did not understand (``Report.parse``), in one line (pure)."""

from __future__ import annotations

from tcinspect.report import Report


def parse_warning(rep: Report) -> str:
    """One line on what the parser did not understand (Report.parse), or ""."""
    if rep.parse is None:
        return ""
    said = []
    if rep.parse.unknown_events:
        names = ", ".join(f"{e.name} ×{e.count}" for e in rep.parse.unknown_events)
        said.append(f"{sum(e.count for e in rep.parse.unknown_events)} structured-trace events tcinspect does not "
                    f"know ({names}): torch {rep.torch_version or '(version unknown: not in the log)'} may record "
                    "something this tcinspect does not read")
    if rep.parse.lines_not_understood:
        said.append(f"{rep.parse.lines_not_understood} lines of the events file were not a record")
    if rep.parse.artifacts_not_understood:
        names = ", ".join(f"{e.name} ×{e.count}" for e in rep.parse.artifacts_not_understood)
        said.append(f"artifacts that could not be read ({names}): the kernels they describe are marked unknown")
    if rep.parse.payload_mismatches:
        said.append(f"{rep.parse.payload_mismatches} payloads do not match their md5 (has_payload)")
    if rep.parse.truncated_payloads:
        said.append(f"{rep.parse.truncated_payloads} payload cut short (the log ends inside it)")
    if rep.parse.files_ignored:
        said.append(f"{rep.parse.files_ignored} files that are not rank logs skipped")
    return "parse: " + "; ".join(said)
