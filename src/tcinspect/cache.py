"""The report cache: the latest reports of each model file, so later commands need no compile.

Location: ``$TCINSPECT_CACHE_DIR`` if set, else ``.tcinspect/`` in the current directory. Each
entry is a JSON report named after the model file and a key over the file's path and content
hash, the torch version and the capture options; a changed file, torch or option never matches.
The latest ``KEEP`` entries per model file are kept. No torch import.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import logging
from dataclasses import asdict, dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Optional, Sequence

from tcinspect import __version__, outfile, serialize
from tcinspect.errors import ReportFormatError, TcinspectError
from tcinspect.report import SCHEMA_VERSION, Options, Report

KEEP = 5
log = logging.getLogger("tcinspect")


def cache_dir() -> Path:
    return Path(os.environ.get("TCINSPECT_CACHE_DIR") or ".tcinspect")


@lru_cache(maxsize=1)
def installed_torch_version() -> str:
    """torch's version from package metadata: as the report records it, without importing torch."""
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return ""


@dataclass(frozen=True)
class Entry:
    path: Path
    report: Report
    age_s: float

    def describe(self) -> str:
        target = self.report.target.path or self.report.target.model_name
        return f"from trace of {target}, {_ago(self.age_s)}"


def _ago(seconds: float) -> str:
    if seconds < 90:
        return f"{int(seconds)} s ago"
    if seconds < 5400:
        return f"{int(seconds // 60)} min ago"
    if seconds < 172800:
        return f"{int(seconds // 3600)} h ago"
    return f"{int(seconds // 86400)} days ago"


def _prefix(model_path: Path) -> str:
    resolved = str(model_path.resolve())
    return f"{model_path.stem}-{hashlib.sha256(resolved.encode()).hexdigest()[:8]}"


def key(model_path: Path, sha256: str, options: Options, extra: Sequence[str] = ()) -> str:
    """The cache key of a capture: file path and content, torch version, options, model names."""
    material = json.dumps({
        "path": str(model_path.resolve()),
        "sha256": sha256,
        "torch": installed_torch_version(),
        "schema": SCHEMA_VERSION,
        "tcinspect": __version__,
        "options": asdict(options),
        "extra": list(extra),
    }, sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()[:16]


def _entry_path(model_path: Path, k: str) -> Path:
    return cache_dir() / f"{_prefix(model_path)}-{k}.json"


def lookup(model_path: Path, keys: Sequence[str]) -> Optional[Entry]:
    """The first current entry among ``keys`` (in order of preference), or None."""
    for k in keys:
        p = _entry_path(model_path, k)
        entry = _read(p)
        if entry is not None:
            return entry
    return None


def _read(p: Path) -> Optional[Entry]:
    try:
        text = p.read_text(encoding="utf-8")
        age = time.time() - p.stat().st_mtime
    except FileNotFoundError:
        return None
    except OSError:
        return None
    try:
        rep = serialize.loads(text, name=str(p))
    except ReportFormatError as exc:
        log.warning("discarding unreadable cache entry %s: %s", p, exc.cause)
        try:
            p.unlink()
        except OSError:
            pass
        return None
    return Entry(path=p, report=rep, age_s=max(age, 0.0))


def store(model_path: Path, k: str, rep: Report) -> Optional[Path]:
    """Save a report under its key, then keep only the latest KEEP entries for this model file.

    A cache that cannot be written (read-only directory, full disk) costs a warning, never the run.
    """
    try:
        return _store(model_path, k, rep)
    except OSError as exc:
        log.warning("could not save the report in the cache %s: %s", cache_dir(), exc.strerror or exc)
        return None
    except TcinspectError as exc:  # e.g. an entry's name taken by a directory: never replaced
        log.warning("could not save the report in the cache %s: %s", cache_dir(), exc.cause)
        return None


def _store(model_path: Path, k: str, rep: Report) -> Path:
    d = cache_dir()
    d.mkdir(parents=True, exist_ok=True)
    ignore = d / ".gitignore"
    if not os.path.lexists(ignore):
        outfile.write(ignore, "# created by tcinspect: a cache of reports\n*\n")
    p = _entry_path(model_path, k)
    # compact: an entry is read by tcinspect, not by people, and a 10,000-node report is written in
    # 0.1 s instead of 0.6 s
    outfile.write(p, serialize.dumps(rep, "json", compact=True))
    siblings = sorted(d.glob(f"{_prefix(model_path)}-*.json"), key=lambda x: x.stat().st_mtime, reverse=True)
    for old in siblings[KEEP:]:
        try:
            old.unlink()
        except OSError:
            pass
    return p


def latest() -> Optional[Entry]:
    """The most recent readable entry in the cache, or None."""
    d = cache_dir()
    if not d.is_dir():
        return None
    for p in sorted(d.glob("*.json"), key=lambda x: x.stat().st_mtime, reverse=True):
        entry = _read(p)
        if entry is not None:
            return entry
    return None
