"""The reports the MCP server lists as resources: the report cache's entries (``$TCINSPECT_CACHE_DIR`` or
``.tcinspect/``), and the reports saved in its working directory and the directories just below it. Each is named
by a look at its first lines (its target and backend), never parsed whole: a report can be tens of megabytes.
No SDK import."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from tcinspect import cache
from tcinspect.errors import UsageError

#: Bytes read from the top of a file to tell a report and name it.
HEAD_BYTES = 4096
#: Saved reports listed at most (the newest first).
MAX_SAVED = 100
_SUFFIXES = (".yaml", ".yml", ".json")
#: Directories below the working directory not searched for saved reports.
_SKIPPED = {"node_modules", "site-packages", "__pycache__"}

_FIELD = {name: (re.compile(rf'"{name}": ?"([^"]*)"'), re.compile(rf"^\s+{name}: (.+)$", re.M))
          for name in ("path", "model_name", "backend")}


@dataclass(frozen=True)
class Listed:
    """One report the server lists: where it is, a name and a line about it."""

    path: Path
    name: str
    description: str
    size: int

    @property
    def uri(self) -> str:
        return self.path.resolve().as_uri()

    @property
    def mime_type(self) -> str:
        return "application/json" if self.path.suffix == ".json" else "application/yaml"


def listed(root: Optional[Path] = None) -> list[Listed]:
    """The cached reports, newest first, then the saved reports under ``root`` (the working directory)."""
    out = []
    where = cache.cache_dir()
    for p in _newest(where.glob("*.json") if where.is_dir() else ()):
        head = _head(p)
        if head is not None:
            target, backend = _field(head, "path") or _field(head, "model_name"), _field(head, "backend")
            out.append(Listed(p, f"cached: {target or p.name}" + (f" (backend={backend})" if backend else ""),
                              f"tcinspect's cached report of {target or 'a capture'}"
                              + (f" with backend={backend}" if backend else "")
                              + "; the tools answer from it when given that file and options", p.stat().st_size))
    base = Path(root or ".")
    cached = where.resolve() if where.is_dir() else None
    found = [p for d in (base, *_subdirectories(base, cached)) for p in d.iterdir()
             if p.suffix.lower() in _SUFFIXES and p.is_file()]
    for p in _newest(found)[:MAX_SAVED]:
        head = _head(p)
        if head is not None:
            target = _field(head, "path") or _field(head, "model_name")
            out.append(Listed(p, str(p),
                              f"a saved tcinspect report{' of ' + target if target else ''}; give its path as `file` "
                              "to any tool", p.stat().st_size))
    return out


def read(uri: str, root: Optional[Path] = None) -> tuple[Listed, str]:
    """A listed report's text, by its URI; any other URI is refused (the server reads no other file)."""
    for item in listed(root):
        if item.uri == uri:
            return item, item.path.read_text(encoding="utf-8", errors="replace")
    raise UsageError(f"{uri} is not a report this server lists", "list the resources and pick one of theirs")


def _newest(paths: object) -> list[Path]:
    found = []
    for p in paths:  # type: ignore[attr-defined]
        try:
            found.append((p.stat().st_mtime, p))
        except OSError:
            continue
    return [p for _, p in sorted(found, key=lambda x: x[0], reverse=True)]


def _subdirectories(base: Path, skip: Optional[Path]) -> list[Path]:
    try:
        return [d for d in base.iterdir() if d.is_dir() and not d.name.startswith(".") and d.name not in _SKIPPED
                and d.resolve() != skip]
    except OSError:
        return []


def _head(p: Path) -> Optional[str]:
    """The top of ``p`` when it is a tcinspect report (its schema_version and torch_version come first)."""
    try:
        with open(p, "rb") as f:
            text = f.read(HEAD_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    top = text[:400]
    return text if "schema_version" in top and "torch_version" in top else None


def _field(head: str, name: str) -> str:
    json_form, yaml_form = _FIELD[name]
    m = json_form.search(head) or yaml_form.search(head)
    return m.group(1).strip().strip('"') if m else ""
