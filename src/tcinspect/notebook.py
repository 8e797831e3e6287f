"""A report in a notebook or a REPL: ``Report._repr_html_``, ``Report.show()`` and ``Report.save(path)`` end here.

The HTML is the report page's own sections (tcinspect.render.html.fragment) under styles that reach nothing else
in the notebook; ``show`` prints the tables ``tcinspect trace`` prints; ``save`` writes the files ``-o`` writes.
Imports nothing heavy at module level: tcinspect/__init__.py installs it on every ``import tcinspect``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Union

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from tcinspect.report import Report

#: The page's look, scoped to the cell's own element, for the classes its sections use.
_CSS = """
.tcinspect-report{font:13px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
.tcinspect-report h1{font-size:16px;margin:0 0 4px}.tcinspect-report h2{font-size:15px;margin:14px 0 6px}
.tcinspect-report h3{font-size:13px;margin:10px 0 4px}
.tcinspect-report .stats{display:flex;flex-wrap:wrap;gap:6px;margin:6px 0}
.tcinspect-report .stat{border:1px solid #d8dee6;border-radius:6px;padding:4px 10px;min-width:96px}
.tcinspect-report .stat b{display:block;font-size:16px}.tcinspect-report .stat span{color:#5f6b7a;font-size:12px}
.tcinspect-report .meta,.tcinspect-report .none{color:#5f6b7a}
.tcinspect-report .note{color:#5f6b7a;font-style:italic}
.tcinspect-report .alert{border-left:3px solid #c0392b;padding:2px 8px;background:#fdf1f0}
.tcinspect-report .ok{color:#1e7e34}.tcinspect-report .failed{color:#c0392b}
.tcinspect-report .stages{list-style:none;padding:0;display:flex;gap:14px}
.tcinspect-report table{border-collapse:collapse;margin:4px 0}
.tcinspect-report th,.tcinspect-report td{border-bottom:1px solid #d8dee6;padding:2px 8px;text-align:left;vertical-align:top}
.tcinspect-report td.num{text-align:right}.tcinspect-report pre{background:#f5f7fa;padding:6px;overflow:auto}
.tcinspect-report .hit{background:#fff3bf}.tcinspect-report .ln i,.tcinspect-report .hit i{color:#5f6b7a;padding-right:8px}
"""


def html(rep: Report) -> str:
    """The report as a notebook cell shows it: its header, findings, summary and every section with content."""
    import html as escaping

    from tcinspect.render import html as page
    from tcinspect.render.table import header

    title = escaping.escape(header(rep).plain)
    return (f'<div class="tcinspect-report"><style>{_CSS}</style><h1>{title}</h1>{page.fragment(rep)}'
            '<p class="note">Every graph and kernel, drawn: <code>report.save("report.html")</code>; the tables: '
            "<code>report.show()</code>.</p></div>")


def show(rep: Report, stages: Optional[Union[str, Sequence[str]]] = None) -> None:
    """Print the tables ``tcinspect trace`` prints (``stages``: some of render.table.STAGES, as --stage takes them)."""
    from tcinspect.errors import UsageError
    from tcinspect.render import ranks
    from tcinspect.render.table import ROW_LIMIT, STAGES, console

    chosen = None if stages is None else [s.strip() for s in ([stages] if isinstance(stages, str) else stages)
                                          for s in s.split(",") if s.strip()]
    unknown = [s for s in chosen or () if s not in STAGES]
    if unknown:
        raise UsageError(f"show(stages=...): no stage {unknown[0]!r}", f"choose from {', '.join(STAGES)}")
    console().print(ranks.trace(rep, chosen, False, ROW_LIMIT))


#: What ``save`` writes, by the file's suffix.
SUFFIXES = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".html": "html", ".htm": "html"}


def save(rep: Report, path: Union[str, Path]) -> Path:
    """Write the report to ``path``: YAML or JSON (``tcinspect.load_report`` reads them back), or the HTML page."""
    from pathlib import Path

    from tcinspect import outfile, serialize
    from tcinspect.errors import UsageError

    target = Path(path)
    fmt = SUFFIXES.get(target.suffix.lower())
    if fmt is None:
        raise UsageError(f"save({str(path)!r}): {target.suffix or 'a name without a suffix'} is not a report format",
                         "name a .yaml, .json or .html file")
    if target.is_dir():
        raise UsageError(f"save({str(path)!r}): {target} is a directory", "name a file in it, e.g. report.yaml")
    if fmt == "html":
        from tcinspect.render import html as page

        text = page.render(rep)
    else:
        text = serialize.dumps(rep, fmt)
    outfile.write(target, text, option=f"save({str(path)!r})")
    return target
